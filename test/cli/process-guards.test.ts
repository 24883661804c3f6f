import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');
const exec = promisify(execFile);

/**
 * A node process as `rollcall start` sets itself up (the real logger, the real guards), then a fault: a promise
 * rejected with nobody awaiting it, as Bolt's HTTP receiver did on a `null` body, or an exception thrown to
 * the event loop. Prints `serving` if it is still alive a little later.
 */
async function runWithGuards(fault: string): Promise<{ code: number; stdout: string; log: string }> {
  const script = `
    import { createLogger } from './src/infra/log.ts';
    import { installProcessGuards } from './src/surfaces/cli/process-guards.ts';
    installProcessGuards(createLogger({ level: 'info' }));
    ${fault}
    setTimeout(() => { process.stdout.write('serving'); process.exit(0); }, 300);
  `;
  try {
    const { stdout, stderr } = await exec(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: root,
      env: { ...process.env, LOG_LEVEL: 'info' },
    });
    return { code: 0, stdout, log: stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, log: e.stderr };
  }
}

describe('process-wide guards of the long-running process', () => {
  it('logs a promise rejected where nobody awaits it, with its stack, and keeps serving', async () => {
    const run = await runWithGuards(
      `Promise.reject(new TypeError("Cannot read properties of null (reading 'ssl_check')"));`,
    );
    expect(run).toMatchObject({ code: 0, stdout: 'serving' });
    const line = JSON.parse(run.log.trim().split('\n').at(-1)!);
    expect(line).toMatchObject({
      level: 50,
      msg: 'unhandled promise rejection: logged, still serving',
      err: { name: 'TypeError', message: "Cannot read properties of null (reading 'ssl_check')" },
    });
    expect(line.err.stack).toContain('TypeError');
  }, 20_000);

  it('logs an uncaught exception as fatal and exits 1, for the supervisor to restart a clean process', async () => {
    const run = await runWithGuards(`setImmediate(() => { throw new RangeError('state half-changed'); });`);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    const line = JSON.parse(run.log.trim().split('\n').at(-1)!);
    expect(line).toMatchObject({
      level: 60,
      origin: 'uncaughtException',
      err: { name: 'RangeError', message: 'state half-changed' },
    });
  }, 20_000);
});
