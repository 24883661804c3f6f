import type { ChildProcess } from 'node:child_process';
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ActionsData, RolloutsData } from '../../src/commands/replies.js';
import { startSimProcess } from '../support/sim-process.js';

const root = path.resolve(import.meta.dirname, '../..');
const bin = path.join(root, 'bin/rollcall.js');
const run = promisify(execFile);

// `rollcall ask rollouts --json` as a script runs it, against `rollcall sim --scenario canary-rollouts`.
describe('rollcall ask rollouts and actions on canary-rollouts (processes)', () => {
  let sim: ChildProcess;
  let config: string;

  beforeAll(async () => {
    config = path.join(mkdtempSync(path.join(tmpdir(), 'rollcall-ask-rollouts-')), 'rollcall.yaml');
    sim = (
      await startSimProcess(['--scenario', 'canary-rollouts', '--port', '0', '--frozen', '--write-config', config])
    ).child;
  }, 40_000);

  afterAll(() => {
    sim?.kill('SIGTERM');
  });

  const ask = async (text: string) => {
    const { stdout } = await run(process.execPath, [bin, 'ask', text, '--json', '--config', config], {
      env: { ...process.env, LOG_LEVEL: 'error' },
    });
    return JSON.parse(stdout) as { ok: boolean; command: string; data: unknown };
  };

  it('rollouts --json: all 15 Rollouts, each with its step and weight', async () => {
    const answer = await ask('rollouts');
    expect(answer).toMatchObject({ ok: true, command: 'rollouts' });
    const { rollouts, unread } = answer.data as RolloutsData;
    expect(unread).toEqual([]);
    expect(rollouts).toHaveLength(15);
    for (const r of rollouts) {
      expect(Object.keys(r)).toEqual(
        expect.arrayContaining([
          'app',
          'instance',
          'cluster',
          'namespace',
          'name',
          'strategy',
          'phase',
          'step',
          'steps',
          'weight',
          'message',
        ]),
      );
      expect(r.instance).toBe('prod');
    }
    const canaries = rollouts.filter((r) => r.strategy === 'canary');
    expect(canaries).toHaveLength(12);
    expect(canaries.map((r) => `${r.phase} ${r.step}/${r.steps} ${r.weight}%`).sort()).toEqual([
      'Degraded 0/4 0%',
      'Healthy 4/4 100%',
      'Healthy 4/4 100%',
      ...Array(9).fill('Paused 1/4 20%'),
    ]);
    expect(rollouts.filter((r) => r.strategy === 'blue-green').map((r) => [r.name, r.phase, r.step, r.weight])).toEqual(
      Array(3).fill(['search', 'Paused', null, null]),
    );
  }, 60_000);

  it('actions --json: what Argo CD offers on the blue-green waiting for promotion', async () => {
    const answer = await ask('actions search-prod-eu-central-1');
    const { actions, resource } = answer.data as ActionsData;
    expect(resource).toMatchObject({ kind: 'Rollout', name: 'search', namespace: 'search' });
    expect(actions.filter((a) => !a.disabled).map((a) => a.name)).toEqual([
      'abort',
      'pause',
      'promote-full',
      'restart',
      'resume',
    ]);
  }, 60_000);
});
