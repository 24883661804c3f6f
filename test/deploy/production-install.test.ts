import { execFile, spawn } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/dev/redis-server.js';
import { simConfigYaml } from '../../src/sim/cli.js';
import type { SimServer } from '../../src/sim/server.js';
import { cleanPrefix, testPrefix } from '../runbooks/fake-argo.js';
import { startTestSim } from '../support/sim.js';

const root = path.resolve(import.meta.dirname, '../..');
const exec = promisify(execFile);
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/**
 * What the image holds (Dockerfile): the compiled dist/, package.json, the lock file, bin/, runbooks/ and the
 * example config, with `npm ci --omit=dev`. Run under the container's conditions: as the image's numeric
 * user (when the test runs as root), files it cannot write, HOME and TMPDIR pointing at paths where nothing
 * can be created (the TMPDIR that made tsx die with ENOTDIR at start), NODE_ENV=production.
 */
describe('the production install: compiled JavaScript, production dependencies only', () => {
  let app: string;
  let sim: SimServer;
  const prefix = testPrefix();
  const asImageUser = process.getuid?.() === 0 ? { uid: 10001, gid: 10001 } : {};
  const containerEnv = (extra: Record<string, string> = {}) => ({
    PATH: process.env.PATH!,
    NODE_ENV: 'production',
    HOME: '/etc/hostname/home',
    TMPDIR: '/etc/hostname/tmp',
    ...extra,
  });
  const run = (args: string[], env: Record<string, string> = {}) =>
    exec(process.execPath, ['dist/main.js', ...args], { cwd: app, env: containerEnv(env), ...asImageUser, timeout: 60_000 });

  beforeAll(async () => {
    app = mkdtempSync(path.join(tmpdir(), 'rollcall-image-'));
    await exec(npm, ['run', 'build', '--', '--outDir', path.join(app, 'dist')], { cwd: root, timeout: 240_000 });
    for (const entry of ['package.json', 'package-lock.json', 'bin', 'runbooks', 'rollcall.example.yaml']) cpSync(path.join(root, entry), path.join(app, entry), { recursive: true });
    await exec(npm, ['ci', '--omit=dev', '--no-audit', '--no-fund', '--prefer-offline'], { cwd: app, timeout: 240_000 });
    // Readable by the image's user, writable by nobody but root: a read-only root filesystem, as far as it can tell.
    chmodSync(app, 0o755);
    sim = await startTestSim({ scenario: 'seed-outage', manual: false, speed: 10 });
    writeFileSync(path.join(app, 'rollcall.yaml'), `${simConfigYaml(sim, { redisUrl: process.env.REDIS_URL, redisPrefix: prefix, access: true })}`, { mode: 0o644 });
  }, 600_000);

  afterAll(async () => {
    await sim?.stop();
    await cleanPrefix(process.env.REDIS_URL!, prefix);
    if (app) rmSync(app, { recursive: true, force: true });
  });

  it('has no tsx, TypeScript or test tooling installed', () => {
    for (const dev of ['tsx', 'typescript', 'vitest', 'esbuild', 'eslint']) expect(existsSync(path.join(app, 'node_modules', dev)), dev).toBe(false);
    expect(existsSync(path.join(app, 'dist/main.js'))).toBe(true);
    expect(existsSync(path.join(app, 'src'))).toBe(false);
  });

  it('answers --help, bin/rollcall.js included', async () => {
    const { stdout } = await run(['--help']);
    expect(stdout).toMatch(/Usage: rollcall/);
    expect(stdout).toMatch(/init \[file\]/);
    const viaBin = await exec(process.execPath, ['bin/rollcall.js', '--help'], { cwd: app, env: containerEnv({ NODE_ENV: '' }), ...asImageUser });
    expect(viaBin.stdout).toMatch(/Usage: rollcall/);
  });

  it('accepts the example config and answers a one-shot ask from the simulator', async () => {
    const check = await run(['config', 'check', '--config', 'rollcall.example.yaml'], { ARGOCD_TOKEN: 'token' });
    expect(check.stdout).toMatch(/rollcall\.example\.yaml: ok/);
    const { stdout } = await run(['ask', 'status', '--json', '--config', 'rollcall.yaml']);
    expect(JSON.parse(stdout)).toMatchObject({ ok: true, command: 'status' });
  });

  it('answers a one-shot `ask status` without loading the queue, Redis, metrics or Kubernetes libraries', async () => {
    // Every module the process resolves, ES or CommonJS, written to a log: what a one-shot answer pays for at start.
    const dir = mkdtempSync(path.join(tmpdir(), 'rollcall-loads-'));
    chmodSync(dir, 0o777);
    const log = path.join(dir, 'loaded.log');
    const resolveHook = `import { appendFileSync } from 'node:fs'; export async function resolve(s, c, next) { const r = await next(s, c); appendFileSync(${JSON.stringify(log)}, r.url + '\\n'); return r; }`;
    const preload = [
      "import Module, { register } from 'node:module';",
      "import { appendFileSync } from 'node:fs';",
      'const load = Module._load;',
      `Module._load = function (request, ...rest) { appendFileSync(${JSON.stringify(log)}, request + '\\n'); return load.call(this, request, ...rest); };`,
      `register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(resolveHook)}));`,
    ].join('\n');
    const loaded = async (command: string) => {
      writeFileSync(log, '');
      chmodSync(log, 0o666);
      const { stdout } = await exec(process.execPath, ['--import', `data:text/javascript,${encodeURIComponent(preload)}`, 'dist/main.js', 'ask', command, '--json', '--config', 'rollcall.yaml'], {
        cwd: app,
        env: containerEnv(),
        ...asImageUser,
        timeout: 60_000,
      });
      return { reply: JSON.parse(stdout) as { ok: boolean }, modules: readFileSync(log, 'utf8') };
    };
    try {
      const status = await loaded('status');
      expect(status.reply.ok).toBe(true);
      expect(status.modules).toMatch(/dist\/main\.js/);
      for (const heavy of ['bullmq', 'ioredis', 'prom-client', '@kubernetes/client-node', 'axios']) expect(status.modules, heavy).not.toContain(heavy);
      // The log does see them where a command needs them: `runs` reads the run store in Redis through BullMQ's client.
      const runs = await loaded('runs');
      expect(runs.reply.ok).toBe(true);
      expect(runs.modules).toContain('ioredis');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('finds the files shipped beside dist/ from the bundled chunks: init copies the example config', async () => {
    const out = mkdtempSync(path.join(tmpdir(), 'rollcall-init-'));
    chmodSync(out, 0o777);
    try {
      await run(['init', path.join(out, 'rollcall.yaml')]);
      expect(readFileSync(path.join(out, 'rollcall.yaml'), 'utf8')).toBe(readFileSync(path.join(app, 'rollcall.example.yaml'), 'utf8'));
      const { stdout } = await run(['runbooks', 'validate', 'runbooks']);
      expect(stdout).toMatch(/\d+ runbooks OK in runbooks: .*bulk-sync/);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });

  it('starts as `rollcall start`, turns ready, serves metrics and stops cleanly on SIGTERM', async () => {
    const port = await freePort();
    writeFileSync(path.join(app, 'start.yaml'), `${simConfigYaml(sim, { redisUrl: process.env.REDIS_URL, redisPrefix: prefix, access: true })}http:\n  port: ${port}\n`, { mode: 0o644 });
    let log = '';
    const child = spawn(process.execPath, ['dist/main.js', 'start', '--config', 'start.yaml'], { cwd: app, env: containerEnv({ LOG_LEVEL: 'info' }), ...asImageUser });
    child.stderr.on('data', (c) => (log += c));
    child.stdout.on('data', (c) => (log += c));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    try {
      await expect.poll(async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status, { timeout: 30_000, interval: 200 }).toBe(200);
      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      expect(metrics).toContain('rollcall_argocd_instance_up{instance="prod"} 1');
      expect(log).not.toMatch(/ENOTDIR|EACCES|EROFS/);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited, log).toBe(0);
  });
});
