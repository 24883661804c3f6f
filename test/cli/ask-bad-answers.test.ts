import { execFile, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { simInstances, startSimProcess } from '../support/sim-process.js';

// A proxy in front of Argo CD that answers 200 with what is not Argo CD's JSON, as a user meets it: `rollcall ask`
// as a process against `rollcall sim`, the bodies served through the simulator's badBody fault.
const root = path.resolve(import.meta.dirname, '../..');
const bin = path.join(root, 'bin/rollcall.js');
const exec = promisify(execFile);

interface Ran {
  code: number;
  stdout: string;
}

describe('rollcall ask when Argo CD answers 200 with what is not its JSON (processes)', () => {
  let sim: ChildProcess;
  let config: string;
  let simUrl: string;

  async function rollcall(args: string[]): Promise<Ran> {
    try {
      const { stdout } = await exec(process.execPath, [bin, 'ask', ...args, '--config', config], {
        env: { ...process.env, LOG_LEVEL: 'error' },
        timeout: 30_000,
      });
      return { code: 0, stdout };
    } catch (error) {
      const e = error as { code: number; stdout: string };
      return { code: e.code, stdout: e.stdout };
    }
  }

  async function fault(body: Record<string, unknown>): Promise<void> {
    const res = await fetch(`${simUrl}/_sim/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(200);
  }

  beforeAll(async () => {
    config = path.join(mkdtempSync(path.join(tmpdir(), 'rollcall-ask-bad-')), 'rollcall.yaml');
    const started = await startSimProcess([
      '--fixture',
      path.join(root, 'test/fixtures/sim-single-no-clusters.json'),
      '--port',
      '0',
      '--frozen',
      '--write-config',
      config,
    ]);
    sim = started.child;
    simUrl = new URL(simInstances(started.output())[0].split(' ')[2]).origin;
  }, 40_000);

  afterAll(() => {
    sim?.kill('SIGTERM');
  });

  beforeEach(() => fault({ kind: 'clear' }));

  it.each([
    ['cut short', { truncateAt: 22 }, 'not JSON', '`{"metadata":{"resource`'],
    ['null', { body: 'null' }, 'expected an object with an items list', '`null`'],
    [
      'an HTML page',
      { body: '<html><head><title>Sign in</title></head></html>' },
      'not JSON',
      '`<html><head><title>Sign in</title></head></html>`',
    ],
    ['a JSON string', { body: '"ok"' }, 'expected an object with an items list', '`"ok"`'],
  ])(
    'status --json with the app list answered %s: fails with argocd_bad_response naming the instance, the path and the first bytes, never "no apps"',
    async (_what, served, problem, start) => {
      await fault({ kind: 'badBody', path: '/api/v1/applications', method: 'GET', ...served });
      const ran = await rollcall(['status', '--json']);
      expect(ran.code).toBe(1);
      const reply = JSON.parse(ran.stdout);
      expect(reply.ok).toBe(false);
      expect(reply.error.code).toBe('argocd_bad_response');
      expect(reply.error.message).toContain('Could not read Argo CD instance edge, so there is nothing to answer from');
      expect(reply.error.message).toContain(
        'Argo CD instance edge answered GET /applications with a body that is not what Argo CD sends',
      );
      expect(reply.error.message).toContain(problem);
      expect(reply.error.message).toContain(start);
      expect(reply.data.total).toBeUndefined();
      // The text a person reads says it, and no empty answer.
      const text = await rollcall(['status']);
      expect(text.code).toBe(1);
      expect(text.stdout).toContain('Argo CD instance edge answered GET /applications');
      expect(text.stdout).not.toMatch(/No applications match/);
    },
    60_000,
  );

  it('status with a list whose only app is null: a warning in plain words that it was skipped, not a TypeError', async () => {
    const whole = JSON.parse((await rollcall(['status', '--json'])).stdout);
    await fault({
      kind: 'badBody',
      path: '/api/v1/applications',
      method: 'GET',
      body: '{"metadata":{},"items":[null]}',
    });
    const ran = await rollcall(['status', '--json']);
    const reply = JSON.parse(ran.stdout);
    expect(ran.code).toBe(0);
    expect(reply.ok).toBe(true);
    expect(reply.data.warnings).toEqual([
      'Argo CD instance edge listed an application with no data (null); skipped it.',
    ]);
    expect(reply.data.total).not.toEqual(whole.data.total);
    expect(reply.data.unsyncedInstances).toBeUndefined();
    expect(ran.stdout).not.toMatch(/TypeError|Cannot read properties/);
  }, 60_000);

  it('app X fails with argocd_bad_response when its live read answers a proxy page, instead of showing the old copy', async () => {
    await fault({
      kind: 'badBody',
      path: '/api/v1/applications/cdn-edge-a',
      method: 'GET',
      body: '<html>502 Bad Gateway</html>',
    });
    const ran = await rollcall(['app cdn-edge-a', '--json']);
    expect(ran.code).toBe(1);
    const reply = JSON.parse(ran.stdout);
    expect(reply.ok).toBe(false);
    expect(reply.error.code).toBe('argocd_bad_response');
    expect(reply.error.message).toContain(
      'Argo CD instance edge answered GET /applications/cdn-edge-a with a body that is not what Argo CD sends',
    );
    expect(reply.error.message).toContain('`<html>502 Bad Gateway</html>`');
  }, 60_000);
});
