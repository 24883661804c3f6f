import { execFile, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimProcess } from '../support/sim-process.js';
import { cleanPrefix } from '../runbooks/fake-argo.js';

// A one-shot `rollcall ask status` starts no Redis client (it stays light), so it reads rollcall's freezes from the
// AppProjects' windows, and shows them as the long-running bot shows its records: a freeze written by one process
// shows in the status another process answers.
const root = path.resolve(import.meta.dirname, '../..');
const bin = path.join(root, 'bin/rollcall.js');
const exec = promisify(execFile);

describe('rollcall ask status shows active freezes (processes, against rollcall sim)', () => {
  let sim: ChildProcess;
  let config: string;
  const prefix = `rollcall-askfrozen-${process.pid}-${Date.now()}`;

  async function rollcall(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    try {
      const { stdout, stderr } = await exec(process.execPath, [bin, ...args, '--config', config], {
        env: { ...process.env, LOG_LEVEL: 'error', ROLLCALL_USER: 'terminal' },
        timeout: 40_000,
      });
      return { code: 0, stdout, stderr };
    } catch (error) {
      const e = error as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr };
    }
  }

  beforeAll(async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'rollcall-askfrozen-'));
    const written = path.join(dir, 'sim.yaml');
    sim = (
      await startSimProcess(['--scenario', 'progressive-infra', '--port', '0', '--frozen', '--write-config', written])
    ).child;
    config = path.join(dir, 'rollcall.yaml');
    writeFileSync(config, readFileSync(written, 'utf8').replace('prefix: rollcall', `prefix: ${prefix}`));
  }, 40_000);

  afterAll(async () => {
    sim?.kill('SIGTERM');
    await cleanPrefix(process.env.REDIS_URL!, prefix);
  });

  it('lists the freeze in status --json and in the text, as the bot does', async () => {
    const before = await rollcall(['ask', 'status project=infra', '--json']);
    expect(before.code, before.stderr).toBe(0);
    expect(JSON.parse(before.stdout).data.frozen).toEqual([]);

    const frozen = await rollcall(['ask', 'freeze project=infra for=2h', '--yes', '--wait', '--json']);
    expect(frozen.code, frozen.stderr + frozen.stdout).toBe(0);

    const json = await rollcall(['ask', 'status project=infra', '--json']);
    expect(json.code, json.stderr).toBe(0);
    const rows = JSON.parse(json.stdout).data.frozen as {
      target: string;
      by: string;
      until: string | null;
      apps: string[];
    }[];
    expect(rows).toEqual([
      expect.objectContaining({ target: 'project=infra', by: 'terminal', until: expect.stringMatching(/^\d{4}-/) }),
    ]);
    expect(rows[0].apps.length).toBeGreaterThan(0);
    const text = await rollcall(['ask', 'status project=infra']);
    expect(text.stdout).toContain('Frozen by rollcall');
  }, 120_000);
});
