import { execFile, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimProcess } from '../support/sim-process.js';
import { cleanPrefix } from '../runbooks/fake-argo.js';

const root = path.resolve(import.meta.dirname, '../..');
const bin = path.join(root, 'bin/rollcall.js');
const fixtureFile = path.join(root, 'test/fixtures/sim-multi-instance.json');
const exec = promisify(execFile);

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI as a user would; an env value of undefined removes that variable. */
async function rollcall(args: string[], env: Record<string, string | undefined> = {}): Promise<Ran> {
  const merged: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'error', ...env };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete merged[k];
  try {
    const { stdout, stderr } = await exec(process.execPath, [bin, ...args], { env: merged, timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('run states in the terminal (rollcall ask against a running simulator)', () => {
  let sim: ChildProcess;
  let dir: string;
  let config: string;
  const prefix = `rollcall-runstates-${process.pid}-${Date.now()}`;
  // An operator of the config the simulator writes.
  const env = { ROLLCALL_USER: 'terminal' };

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'rollcall-runstates-'));
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

  it('answers a sync with nothing to do plainly: no run, no Confirm, exit 0 (--yes queues nothing)', async () => {
    const text = await rollcall(['ask', 'sync payments-prod-eu1', '--config', config], env);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(
      'Nothing to sync: payments-prod-eu1, the one matching app, is already Synced and Healthy. To sync it anyway, add includeSynced=true.',
    );
    expect(text.stdout).not.toMatch(/Confirm|r-[a-z0-9]{5}/);

    const yes = await rollcall(['ask', 'sync payments-prod-eu1', '--yes', '--json', '--config', config], env);
    expect(yes.code).toBe(0);
    const reply = JSON.parse(yes.stdout);
    expect(reply).toMatchObject({ ok: true, command: 'sync', data: { nothingToDo: true } });
    expect(reply.data.runId).toBeUndefined();
    expect(yes.stderr).not.toMatch(/queued/);

    const runs = JSON.parse((await rollcall(['ask', 'runs', '--json', '--config', config], env)).stdout);
    expect(runs.data.runs).toEqual([]);
  }, 90_000);

  it('ask --json of a run queued with no worker says ok:false with code no_worker, as its exit code 1 does; runs wait ID --wait then runs it and prints its summary once', async () => {
    const queued = await rollcall(
      ['ask', 'sync ingress-prod-us1 gate=none', '--yes', '--json', '--config', config],
      env,
    );
    expect(queued.code).toBe(1);
    const reply = JSON.parse(queued.stdout);
    expect(reply.ok).toBe(false);
    expect(reply.error).toMatchObject({ code: 'no_worker', message: expect.stringContaining('is queued, no worker') });
    expect(reply.data.run.status).toBe('running');
    const id = reply.data.runId as string;

    const waited = await rollcall(['ask', `runs wait ${id}`, '--wait', '--config', config], env);
    expect(waited.code).toBe(0);
    expect(waited.stdout.split(`Bulk sync ${id}: succeeded`)).toHaveLength(2);
    expect(waited.stdout.match(/Steps:/g)).toHaveLength(1);
  }, 120_000);

  describe('user errors end in one clear line, never a stack', () => {
    const cases: { name: string; args: (d: string) => string[]; exit: number; says: RegExp }[] = [
      {
        name: 'ask with a missing config',
        args: (d) => ['ask', 'status', '--config', path.join(d, 'missing.yaml')],
        exit: 2,
        says: /missing\.yaml: invalid configuration[\s\S]*file not found/,
      },
      {
        name: 'ask with a config that is not YAML',
        args: (d) => ['ask', 'status', '--config', path.join(d, 'bad.yaml')],
        exit: 2,
        says: /bad\.yaml: invalid configuration[\s\S]*YAML/,
      },
      {
        name: 'ask with Redis unreachable',
        args: (d) => ['ask', 'runs', '--config', path.join(d, 'no-redis.yaml')],
        exit: 2,
        says: /Cannot reach Redis at redis:\/\/127\.0\.0\.1:1 /,
      },
      {
        name: 'ask with a redis.url that is no URL',
        args: (d) => ['ask', 'runs', '--config', path.join(d, 'bad-redis-url.yaml')],
        exit: 2,
        says: /redis\.url "not-a-url" is not a Redis URL/,
      },
      {
        name: 'start with a bad config',
        args: (d) => ['start', '--config', path.join(d, 'bad.yaml')],
        exit: 2,
        says: /invalid configuration/,
      },
      {
        name: 'start with Redis unreachable',
        args: (d) => ['start', '--config', path.join(d, 'no-redis.yaml')],
        exit: 2,
        says: /^rollcall: Cannot reach Redis at redis:\/\/127\.0\.0\.1:1 /,
      },
      {
        name: 'demo with an unknown scenario',
        args: () => ['demo', '--scenario', 'nope'],
        exit: 2,
        says: /^rollcall: unknown scenario "nope": choose one of seed-outage/,
      },
      {
        name: 'demo with a bad speed',
        args: () => ['demo', '--speed', 'fast'],
        exit: 2,
        says: /^rollcall: --speed must be a positive number \(got "fast"\)/,
      },
      {
        name: 'sim with an unknown scenario',
        args: () => ['sim', '--scenario', 'nope'],
        exit: 2,
        says: /^rollcall: unknown scenario "nope"/,
      },
      {
        name: 'sim with a missing fixture',
        args: (d) => ['sim', '--fixture', path.join(d, 'missing.json')],
        exit: 2,
        says: /invalid simulator fixture[\s\S]*cannot read/,
      },
      {
        name: 'sim with a bad port',
        args: () => ['sim', '--port', 'abc'],
        exit: 2,
        says: /^rollcall: --port must be 0\.\.65535 \(got "abc"\)/,
      },
      {
        name: 'config check of a bad file',
        args: (d) => ['config', 'check', '--config', path.join(d, 'bad.yaml')],
        exit: 2,
        says: /bad\.yaml: 1 problem\(s\)/,
      },
      {
        name: 'config check of a bad file given as an argument',
        args: (d) => ['config', 'check', path.join(d, 'bad.yaml')],
        exit: 2,
        says: /bad\.yaml: 1 problem\(s\)/,
      },
      {
        name: 'config check given two different files',
        args: (d) => ['config', 'check', path.join(d, 'bad.yaml'), '--config', path.join(d, 'no-redis.yaml')],
        exit: 2,
        says: /^rollcall: config check got two files/,
      },
      {
        name: 'init over an existing file',
        args: (d) => ['init', path.join(d, 'bad.yaml')],
        exit: 2,
        says: /already exists: not overwriting it/,
      },
      {
        name: 'init into a missing directory',
        args: (d) => ['init', path.join(d, 'no-such-dir', 'rollcall.yaml')],
        exit: 1,
        says: /^rollcall: ENOENT: no such file or directory, open '.*no-such-dir/,
      },
    ];

    beforeAll(() => {
      writeFileSync(path.join(dir, 'bad.yaml'), 'instances: [\n');
      const good = readFileSync(config, 'utf8');
      writeFileSync(
        path.join(dir, 'no-redis.yaml'),
        good.replace(/url: .*redis:\/\/[^\n]*/, 'url: redis://127.0.0.1:1'),
      );
      writeFileSync(path.join(dir, 'bad-redis-url.yaml'), good.replace(/url: .*redis:\/\/[^\n]*/, 'url: not-a-url'));
    });

    it.each(cases)(
      '$name',
      async ({ args, exit, says }) => {
        const ran = await rollcall(args(dir), { REDIS_URL: undefined });
        const said = `${ran.stderr}${ran.stdout}`;
        expect(ran.code, said).toBe(exit);
        expect(said).toMatch(says);
        expect(said).not.toMatch(/^\s+at /m);
        expect(said).not.toContain('"stack"');
        expect(ran.stderr.trim().split('\n').length).toBeLessThanOrEqual(2);
      },
      60_000,
    );
  });
});
