import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');
const bin = path.join(root, 'bin/rollcall.js');
const run = promisify(execFile);

/** rollcall run where there is no rollcall.yaml and nothing points at one. */
async function rollcall(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const cwd = mkdtempSync(path.join(tmpdir(), 'rollcall-noconfig-'));
  const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'error' };
  delete env.ROLLCALL_CONFIG;
  try {
    const { stdout, stderr } = await run(process.execPath, [bin, ...args], { cwd, env });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('rollcall without a config file', () => {
  it('prints the version of package.json for --version and -V', async () => {
    const { version } = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) {
      const out = await rollcall([flag]);
      expect(out).toMatchObject({ code: 0, stdout: `${version}\n` });
    }
  }, 30_000);

  it('answers `ask help` and `ask help COMMAND` from the command list, without config, Argo CD or Redis', async () => {
    const all = await rollcall(['ask', 'help']);
    expect(all.code, all.stderr).toBe(0);
    expect(all.stdout).toMatch(/^rollcall commands\n/);
    expect(all.stdout).toContain('next: help --page 2');
    const one = await rollcall(['ask', 'help rollback', '--json']);
    expect(one.code, one.stderr).toBe(0);
    expect(JSON.parse(one.stdout)).toMatchObject({
      ok: true,
      command: 'help',
      data: { command: 'rollback', usage: expect.stringContaining('rollback APP') },
    });
    const typo = await rollcall(['ask', 'help rollbak', '--json']);
    expect(typo.code).toBe(2);
    expect(JSON.parse(typo.stdout).error).toMatchObject({ code: 'unknown_command', suggestions: ['rollback'] });
    // Anything else still needs the config, and says where it looked.
    const status = await rollcall(['ask', 'status']);
    expect(status.code).toBe(2);
    expect(status.stderr).toContain('file not found');
  }, 60_000);
});
