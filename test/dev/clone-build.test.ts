import { execFile, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');
const exec = promisify(execFile);

/**
 * A clone in miniature: rollcall's own bin/ and scripts/ over a src/ the test writes, with rollcall's node_modules
 * (esbuild, tsx). `main.ts` prints what `greeting.ts` says; `hold` waits for a line on stdin before importing
 * `late.ts`, as the bot loads a command's chunk long after start.
 */
describe('bin/rollcall.js in a clone: the build cache', () => {
  let clone: string;
  const src = (file: string) => path.join(clone, 'src', file);
  const current = () =>
    JSON.parse(readFileSync(path.join(clone, '.rollcall/build/current.json'), 'utf8')) as { build: string };
  const run = async (...args: string[]) =>
    (
      await exec(process.execPath, [path.join(clone, 'bin/rollcall.js'), ...args], {
        env: { ...process.env, NODE_ENV: 'development' },
        timeout: 60_000,
      })
    ).stdout.trim();

  beforeAll(() => {
    clone = mkdtempSync(path.join(tmpdir(), 'rollcall-clone-'));
    for (const dir of ['bin', 'scripts']) cpSync(path.join(root, dir), path.join(clone, dir), { recursive: true });
    for (const file of ['package.json', 'tsconfig.json']) cpSync(path.join(root, file), path.join(clone, file));
    symlinkSync(path.join(root, 'node_modules'), path.join(clone, 'node_modules'));
    mkdirSync(path.join(clone, 'src'));
    writeFileSync(src('greeting.ts'), "export const greeting: string = 'hello v1';\n");
    writeFileSync(src('late.ts'), "export const late: string = 'late v1';\n");
    writeFileSync(
      src('main.ts'),
      [
        "import { greeting } from './greeting.js';",
        'console.log(greeting);',
        "if (process.argv[2] === 'hold') {",
        "  await new Promise((resolve) => process.stdin.once('data', resolve));",
        "  console.log((await import('./late.js')).late);",
        '}',
      ].join('\n'),
    );
  });

  afterAll(() => rmSync(clone, { recursive: true, force: true }));

  it('builds once, then runs the same build while no input changed', async () => {
    expect(await run()).toBe('hello v1');
    const first = current().build;
    expect(existsSync(path.join(clone, '.rollcall/build', first, 'main.js'))).toBe(true);
    expect(await run()).toBe('hello v1');
    expect(current().build).toBe(first);
  }, 90_000);

  it('runs an edit to a source file on the very next run, even one of the same size', async () => {
    const before = current().build;
    writeFileSync(src('greeting.ts'), "export const greeting: string = 'hello v2';\n");
    expect(await run()).toBe('hello v2');
    expect(current().build).not.toBe(before);
  }, 90_000);

  it('falls back to tsx on a file esbuild cannot build, which then reports the error, and builds once fixed', async () => {
    writeFileSync(src('greeting.ts'), "export const greeting: string = 'hello v3;\n");
    const failed = await run().then(
      () => undefined,
      (error: { code: number; stderr: string }) => error,
    );
    expect(failed?.code).not.toBe(0);
    expect(failed?.stderr).toContain('greeting.ts');
    writeFileSync(src('greeting.ts'), "export const greeting: string = 'hello v4';\n");
    expect(await run()).toBe('hello v4');
  }, 90_000);

  it('keeps the build a running process still loads chunks from, and removes it once that process is gone', async () => {
    const holder = spawn(process.execPath, [path.join(clone, 'bin/rollcall.js'), 'hold'], {
      env: { ...process.env, NODE_ENV: 'development' },
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    let out = '';
    holder.stdout.on('data', (chunk) => (out += chunk));
    await expect.poll(() => out, { timeout: 30_000 }).toContain('hello v4');
    const held = current().build;

    // Meanwhile someone edits and runs: a new build, and the held one stays for the process that runs it.
    writeFileSync(src('greeting.ts'), "export const greeting: string = 'hello v5';\n");
    expect(await run()).toBe('hello v5');
    expect(current().build).not.toBe(held);
    expect(existsSync(path.join(clone, '.rollcall/build', held))).toBe(true);

    holder.stdin.end('go\n');
    const code = await new Promise((resolve) => holder.once('exit', resolve));
    expect(code).toBe(0);
    expect(out).toContain('late v1');

    writeFileSync(src('greeting.ts'), "export const greeting: string = 'hello v6';\n");
    expect(await run()).toBe('hello v6');
    expect(existsSync(path.join(clone, '.rollcall/build', held))).toBe(false);
  }, 120_000);
});
