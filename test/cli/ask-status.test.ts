import type { ChildProcess } from 'node:child_process';
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimProcess } from '../support/sim-process.js';

const root = path.resolve(import.meta.dirname, '../..');
const bin = path.join(root, 'bin/rollcall.js');
const run = promisify(execFile);

// A one-shot `ask` has no "later": it must not answer before the resource health it reports was read.
describe('rollcall ask "status" on seed-outage (processes)', () => {
  let sim: ChildProcess;
  let config: string;

  beforeAll(async () => {
    config = path.join(mkdtempSync(path.join(tmpdir(), 'rollcall-ask-status-')), 'rollcall.yaml');
    sim = (await startSimProcess(['--scenario', 'seed-outage', '--port', '0', '--frozen', '--write-config', config]))
      .child;
  }, 40_000);

  afterAll(() => {
    sim?.kill('SIGTERM');
  });

  it('gives the crash-loop reason the long-running bot gives, on one screen', async () => {
    const { stdout } = await run(process.execPath, [bin, 'ask', 'status', '--config', config], {
      env: { ...process.env, LOG_LEVEL: 'error' },
    });
    expect(stdout).toContain(
      'auth-service · Degraded on 12/12 clusters · CrashLoopBackOff: back-off restarting failed container',
    );
    expect(stdout).not.toMatch(/no message/);
    expect(stdout.trimEnd().split('\n').length).toBeLessThanOrEqual(25);
  }, 60_000);
});

describe('rollcall demo with a mistyped scenario', () => {
  it('says what to type, exits 2, and prints no stack trace', async () => {
    const result = await run(process.execPath, [bin, 'demo', '--scenario', 'nosuch']).catch((e) => e);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('unknown scenario "nosuch": choose one of seed-outage');
    expect(result.stderr).not.toMatch(/\n\s+at |"stack"/);
    expect(result.stdout).toBe('');
  }, 30_000);
});
