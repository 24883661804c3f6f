import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import '../../src/commands/index.js';
import { allCommands } from '../../src/commands/registry.js';

const root = path.resolve(import.meta.dirname, '../..');
const bin = path.join(root, 'bin/rollcall.js');
const run = promisify(execFile);
const env = { ...process.env, LOG_LEVEL: 'error' };

describe('rollcall completion', () => {
  let script = '';
  beforeAll(async () => {
    script = path.join(mkdtempSync(path.join(tmpdir(), 'rollcall-completion-')), 'rollcall.bash');
    writeFileSync(script, (await run(process.execPath, [bin, 'completion', 'bash'], { env })).stdout);
  }, 30_000);

  /** What bash offers for the words typed so far (the last one is being completed), as a shell would call it. */
  async function complete(...words: string[]): Promise<string[]> {
    const line = `source ${JSON.stringify(script)}; COMP_WORDS=(${words.map((w) => JSON.stringify(w)).join(' ')}); COMP_CWORD=${words.length - 1}; _rollcall; printf '%s\\n' "\${COMPREPLY[@]}"`;
    const { stdout } = await run('bash', ['-c', line]);
    return stdout.split('\n').filter(Boolean);
  }

  it('completes the CLI commands, their subcommands and options in bash', async () => {
    expect(await complete('rollcall', '')).toEqual(
      expect.arrayContaining(['ask', 'start', 'demo', 'sim', 'init', 'config', 'runbooks', 'completion', '--version']),
    );
    expect(await complete('rollcall', 'co')).toEqual(['completion', 'config']);
    expect(await complete('rollcall', 'config', '')).toEqual(['check', '--help']);
    expect(await complete('rollcall', 'completion', '')).toEqual(['bash', 'zsh', '--help']);
    expect(await complete('rollcall', 'ask', 'status', '--j')).toEqual(['--json']);
  });

  it('completes every chat verb as the first word of `ask`, and only those', async () => {
    const verbs = allCommands().map((c) => c.name);
    expect((await complete('rollcall', 'ask', '')).sort()).toEqual([...new Set(verbs)].sort());
    expect(await complete('rollcall', 'ask', 'roll')).toEqual(
      ['rollback', 'rollout', 'rollouts'].filter((v) => verbs.includes(v)),
    );
  });

  it('prints a zsh script offering the same words, and refuses a shell it does not know', async () => {
    const zsh = (await run(process.execPath, [bin, 'completion', 'zsh'], { env })).stdout;
    expect(zsh.split('\n')[0]).toBe('#compdef rollcall');
    const verbsLine = zsh.split('\n').find((l, i, all) => all[i - 1]?.includes("The chat command's first word"))!;
    expect(
      verbsLine
        .trim()
        .replace(/^compadd -- /, '')
        .split(' ')
        .sort(),
    ).toEqual([...new Set(allCommands().map((c) => c.name))].sort());
    const fish = await run(process.execPath, [bin, 'completion', 'fish'], { env }).catch((e) => e);
    expect(fish.code).toBe(2);
    expect(fish.stderr).toContain('Allowed choices are bash, zsh');
  }, 30_000);
});
