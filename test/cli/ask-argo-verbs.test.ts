import { execFile, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimProcess } from '../support/sim-process.js';
import type { Fixture } from '../../src/sim/fixture-types.js';
import { cleanPrefix } from '../runbooks/fake-argo.js';

// The new Argo CD verbs as a user runs them in a terminal: `rollcall ask` as a process, against `rollcall sim`.
const root = path.resolve(import.meta.dirname, '../..');
const bin = path.join(root, 'bin/rollcall.js');
const exec = promisify(execFile);
const APP = 'payments-prod-eu1';
// Apps whose rollback is only queued (no worker): each holds its app's lock until a worker runs it.
const QUEUED = ['payments-prod-us1', 'ingress-prod-us1'];
const REV = {
  r5: '1111111111111111111111111111111111111111',
  r6: '2222222222222222222222222222222222222222',
  r7: '4b825dc642cb6eb9a060e54bf8d69288fbee4904',
};

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

function entry(id: number, revision: string, daysAgo: number) {
  const at = new Date(Date.now() - daysAgo * 86_400_000).toISOString().replace(/\.\d+Z$/, 'Z');
  return {
    id,
    revision,
    deployedAt: at,
    deployStartedAt: at,
    source: { repoURL: 'https://github.com/acme/deploy.git', path: 'apps/payments', targetRevision: 'main' },
    initiatedBy: { username: 'alice' },
  };
}

describe('rollcall ask with history, logs and rollback (processes, against rollcall sim)', () => {
  let sim: ChildProcess;
  let config: string;
  const prefix = `rollcall-askverbs-${process.pid}-${Date.now()}`;
  // An operator of the config the simulator writes.
  const env = { ROLLCALL_USER: 'terminal' };

  async function rollcall(args: string[]): Promise<Ran> {
    try {
      const { stdout, stderr } = await exec(process.execPath, [bin, ...args, '--config', config], {
        env: { ...process.env, LOG_LEVEL: 'error', ...env },
        timeout: 30_000,
      });
      return { code: 0, stdout, stderr };
    } catch (error) {
      const e = error as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr };
    }
  }

  beforeAll(async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'rollcall-askverbs-'));
    // Three deployments in the app's history: a rollback without an id goes to #6, the previous one.
    const fixture = JSON.parse(
      readFileSync(path.join(root, 'test/fixtures/sim-multi-instance.json'), 'utf8'),
    ) as Fixture;
    const app = fixture.instances.find((i) => i.name === 'prod')!.applications.find((a) => a.metadata.name === APP)!;
    app.status!.history = [entry(5, REV.r5, 9), entry(6, REV.r6, 5), entry(7, REV.r7, 2)];
    for (const name of QUEUED)
      fixture.instances
        .find((i) => i.name === 'prod')!
        .applications.find((a) => a.metadata.name === name)!.status!.history = [
        entry(1, REV.r5, 3),
        entry(2, REV.r6, 1),
      ];
    const fixtureFile = path.join(dir, 'fixture.json');
    writeFileSync(fixtureFile, JSON.stringify(fixture));
    const written = path.join(dir, 'sim.yaml');
    sim = (
      await startSimProcess(['--fixture', fixtureFile, '--port', '0', '--speed', '50', '--write-config', written], 2)
    ).child;
    config = path.join(dir, 'rollcall.yaml');
    writeFileSync(config, readFileSync(written, 'utf8').replace('prefix: rollcall', `prefix: ${prefix}`));
  }, 40_000);

  afterAll(async () => {
    sim?.kill('SIGTERM');
    await cleanPrefix(process.env.REDIS_URL!, prefix);
  });

  it('history --json: the deployments, newest first, in the data shape the command documents', async () => {
    const ran = await rollcall(['ask', `history ${APP}`, '--json']);
    expect(ran.code, ran.stderr).toBe(0);
    const reply = JSON.parse(ran.stdout);
    expect(reply).toMatchObject({ ok: true, command: 'history' });
    expect(reply.data).toMatchObject({ app: APP, instance: 'prod' });
    const list = reply.data.history as Record<string, unknown>[];
    expect(list.map((e) => e.id)).toEqual([7, 6, 5]);
    expect(Object.keys(list[1]).sort()).toEqual([
      'author',
      'automated',
      'deployStartedAt',
      'deployedAt',
      'durationMs',
      'id',
      'images',
      'initiatedBy',
      'message',
      'revision',
      'revisions',
      'tags',
    ]);
    expect(list[1]).toMatchObject({
      id: 6,
      revision: REV.r6,
      initiatedBy: 'alice',
      automated: false,
      deployedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
  }, 30_000);

  it('logs prints plain text: no Slack markup', async () => {
    const ran = await rollcall(['ask', `logs ${APP} tail=5`]);
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout).toContain('request served');
    expect(ran.stdout).not.toContain('`');
    expect(ran.stdout).not.toMatch(/\*[^*\s][^*]*\*/);
    expect(ran.stdout).not.toMatch(/<[^>]+\|[^>]+>/);
    expect(ran.stdout).not.toMatch(/:[a-z_]+:/);
  }, 30_000);

  it('history and diff print plain text too', async () => {
    for (const text of [`history ${APP}`, 'diff payments-prod-us1']) {
      const ran = await rollcall(['ask', text]);
      expect(ran.code, ran.stderr).toBe(0);
      expect(ran.stdout).not.toMatch(/\*[^*\s][^*]*\*|<[^>]+\|[^>]+>|:[a-z_]+:/);
    }
  }, 30_000);

  it('rollback --yes without a worker exits 1, queued, no worker; --json says ok:false, code no_worker', async () => {
    const text = await rollcall(['ask', `rollback ${QUEUED[0]}`, '--yes']);
    expect(text.code).toBe(1);
    expect(text.stderr).toMatch(/^r-[a-z0-9]+ is queued, no worker/m);

    const json = await rollcall(['ask', `rollback ${QUEUED[1]}`, '--yes', '--json']);
    expect(json.code).toBe(1);
    const reply = JSON.parse(json.stdout);
    expect(reply.ok).toBe(false);
    expect(reply.error).toMatchObject({
      code: 'no_worker',
      message: expect.stringContaining(`${reply.data.runId} is queued, no worker`),
    });
    expect(reply.data.run).toMatchObject({ runbook: 'rollback', status: 'running', params: { app: QUEUED[1] } });
  }, 60_000);

  it('rollback --yes --wait runs it to the end here, exits 0 and prints the summary once; history then shows the new entry', async () => {
    // No id: the previous deployment, #6.
    const ran = await rollcall(['ask', `rollback ${APP}`, '--yes', '--wait']);
    expect(ran.code, `${ran.stdout}${ran.stderr}`).toBe(0);
    const summary = ran.stdout.match(/Roll back an app r-[a-z0-9]+: succeeded/g);
    expect(summary, ran.stdout).toHaveLength(1);
    expect(ran.stdout.match(/Steps:/g)).toHaveLength(1);
    expect(ran.stdout).toContain(`${APP} rolled back to #6 (revision ${REV.r6.slice(0, 7)})`);
    expect(ran.stderr).not.toMatch(/queued/);
    expect(ran.stdout).not.toMatch(/\*[^*\s][^*]*\*|<[^>]+\|[^>]+>/);

    const history = JSON.parse((await rollcall(['ask', `history ${APP}`, '--json'])).stdout);
    const list = history.data.history as Record<string, unknown>[];
    expect(list[0]).toMatchObject({ id: 8, revision: REV.r6, initiatedBy: 'admin' });
    expect(list).toHaveLength(4);
  }, 60_000);
});
