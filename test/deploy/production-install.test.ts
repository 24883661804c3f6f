import { execFile, spawn } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { parse } from 'yaml';
import { freePort } from '../../src/infra/redis-server.js';
import { simConfigYaml } from '../../src/sim/cli.js';
import type { SimServer } from '../../src/sim/server.js';
import { cleanPrefix, testPrefix } from '../runbooks/fake-argo.js';
import { startFakeSlack } from '../support/fake-slack.js';
import { postSlashCommand } from '../support/slack-request.js';
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
  // A year ahead under libfaketime, the image runs on the suite's clock: a bot and Slack's signed requests share one
  // clock, as a pod's and Slack's do.
  const clock = Object.fromEntries(
    ['LD_PRELOAD', 'FAKETIME', 'FAKETIME_NO_CACHE'].flatMap((k) => (process.env[k] ? [[k, process.env[k]!]] : [])),
  );
  const containerEnv = (extra: Record<string, string> = {}) => ({
    PATH: process.env.PATH!,
    NODE_ENV: 'production',
    HOME: '/etc/hostname/home',
    TMPDIR: '/etc/hostname/tmp',
    ...clock,
    ...extra,
  });
  const run = (args: string[], env: Record<string, string> = {}) =>
    exec(process.execPath, ['dist/main.js', ...args], {
      cwd: app,
      env: containerEnv(env),
      ...asImageUser,
      timeout: 60_000,
    });

  beforeAll(async () => {
    app = mkdtempSync(path.join(tmpdir(), 'rollcall-image-'));
    await exec(npm, ['run', 'build', '--', '--outDir', path.join(app, 'dist')], { cwd: root, timeout: 240_000 });
    for (const entry of ['package.json', 'package-lock.json', 'bin', 'runbooks', 'rollcall.example.yaml'])
      cpSync(path.join(root, entry), path.join(app, entry), { recursive: true });
    await exec(npm, ['ci', '--omit=dev', '--no-audit', '--no-fund', '--prefer-offline'], {
      cwd: app,
      timeout: 240_000,
    });
    // Readable by the image's user, writable by nobody but root: a read-only root filesystem, as far as it can tell.
    chmodSync(app, 0o755);
    sim = await startTestSim({ scenario: 'seed-outage', manual: false, speed: 10 });
    writeFileSync(
      path.join(app, 'rollcall.yaml'),
      `${simConfigYaml(sim, { redisUrl: process.env.REDIS_URL, redisPrefix: prefix, operator: 'terminal' })}`,
      { mode: 0o644 },
    );
  }, 600_000);

  afterAll(async () => {
    await sim?.stop();
    await cleanPrefix(process.env.REDIS_URL!, prefix);
    if (app) rmSync(app, { recursive: true, force: true });
  });

  it('has no tsx, TypeScript or test tooling installed', () => {
    for (const dev of ['tsx', 'typescript', 'vitest', 'esbuild', 'eslint'])
      expect(existsSync(path.join(app, 'node_modules', dev)), dev).toBe(false);
    expect(existsSync(path.join(app, 'dist/main.js'))).toBe(true);
    expect(existsSync(path.join(app, 'src'))).toBe(false);
  });

  it('answers --help, bin/rollcall.js included', async () => {
    const { stdout } = await run(['--help']);
    expect(stdout).toMatch(/Usage: rollcall/);
    expect(stdout).toMatch(/init \[file\]/);
    const viaBin = await exec(process.execPath, ['bin/rollcall.js', '--help'], {
      cwd: app,
      env: containerEnv({ NODE_ENV: '' }),
      ...asImageUser,
    });
    expect(viaBin.stdout).toMatch(/Usage: rollcall/);
  });

  it('accepts the example config and answers a one-shot ask from the simulator', async () => {
    const check = await run(['config', 'check', '--config', 'rollcall.example.yaml'], { ARGOCD_TOKEN: 'token' });
    expect(check.stdout).toMatch(/rollcall\.example\.yaml: ok/);
    // A bad one is refused in zod's English, the one locale the build keeps (see the source maps below).
    writeFileSync(path.join(app, 'bad.yaml'), 'instances:\n  - name: prod\n    url: 12\n    token: t\n', {
      mode: 0o644,
    });
    const bad = await run(['config', 'check', '--config', 'bad.yaml']).then(
      () => undefined,
      (err: { code: number; stdout: string; stderr: string }) => err,
    );
    expect(bad?.code).toBe(2);
    expect(`${bad?.stdout}${bad?.stderr}`).toMatch(/instances\[0\]\.url: expected string, received number \(line 3\)/);
    const { stdout } = await run(['ask', 'status', '--json', '--config', 'rollcall.yaml']);
    expect(JSON.parse(stdout)).toMatchObject({ ok: true, command: 'status' });
  });

  /**
   * Every module a process of the install resolves, ES or CommonJS, appended to a log: what it pays for at start.
   * Returns node's arguments that install the hooks, and a reader of the log.
   */
  function moduleLog(): { nodeArgs: string[]; read: () => string; remove: () => void } {
    const dir = mkdtempSync(path.join(tmpdir(), 'rollcall-loads-'));
    chmodSync(dir, 0o777);
    const log = path.join(dir, 'loaded.log');
    writeFileSync(log, '');
    chmodSync(log, 0o666);
    const resolveHook = `import { appendFileSync } from 'node:fs'; export async function resolve(s, c, next) { const r = await next(s, c); appendFileSync(${JSON.stringify(log)}, r.url + '\\n'); return r; }`;
    const preload = [
      "import Module, { register } from 'node:module';",
      "import { appendFileSync } from 'node:fs';",
      'const load = Module._load;',
      `Module._load = function (request, ...rest) { appendFileSync(${JSON.stringify(log)}, request + '\\n'); return load.call(this, request, ...rest); };`,
      `register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(resolveHook)}));`,
    ].join('\n');
    return {
      nodeArgs: ['--import', `data:text/javascript,${encodeURIComponent(preload)}`],
      read: () => readFileSync(log, 'utf8'),
      remove: () => rmSync(dir, { recursive: true, force: true }),
    };
  }

  it('answers a one-shot `ask status` without loading the queue, Redis, metrics or Kubernetes libraries', async () => {
    const loaded = async (command: string) => {
      const log = moduleLog();
      try {
        const { stdout } = await exec(
          process.execPath,
          [...log.nodeArgs, 'dist/main.js', 'ask', command, '--json', '--config', 'rollcall.yaml'],
          {
            cwd: app,
            env: containerEnv(),
            ...asImageUser,
            timeout: 60_000,
          },
        );
        return { reply: JSON.parse(stdout) as { ok: boolean }, modules: log.read() };
      } finally {
        log.remove();
      }
    };
    const status = await loaded('status');
    expect(status.reply.ok).toBe(true);
    expect(status.modules).toMatch(/dist\/main\.js/);
    for (const heavy of ['bullmq', 'ioredis', 'prom-client', '@kubernetes/client-node'])
      expect(status.modules, heavy).not.toContain(heavy);
    // The log does see them where a command needs them: `runs` reads the run store in Redis through BullMQ's client.
    const runs = await loaded('runs');
    expect(runs.reply.ok).toBe(true);
    expect(runs.modules).toContain('ioredis');
  });

  /** `start --role bot` from the install with `slack` settings; resolves once /readyz answers 200. */
  async function startBot(slackYaml: string, nodeArgs: string[]) {
    const port = await freePort();
    const file = `bot-${port}.yaml`;
    writeFileSync(
      path.join(app, file),
      `${simConfigYaml(sim, { redisUrl: process.env.REDIS_URL, redisPrefix: prefix, operator: 'terminal' })}http:\n  port: ${port}\n${slackYaml}`,
      { mode: 0o644 },
    );
    let log = '';
    const child = spawn(process.execPath, [...nodeArgs, 'dist/main.js', 'start', '--role', 'bot', '--config', file], {
      cwd: app,
      env: containerEnv(),
      ...asImageUser,
    });
    child.stderr.on('data', (c) => (log += c));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    const stop = async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      return exited;
    };
    try {
      await expect
        .poll(
          async () =>
            child.exitCode === null
              ? (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status
              : `exited: ${log}`,
          { timeout: 30_000, interval: 200 },
        )
        .toBe(200);
    } catch (err) {
      await stop();
      throw err;
    }
    return { stop, log: () => log };
  }

  it('serves Slack over HTTP without loading Bolt’s Socket Mode, OAuth or express parts, which Socket Mode then loads', async () => {
    const fake = await startFakeSlack();
    const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    const received: { envelope_id?: string }[] = [];
    wss.on('connection', (ws) => {
      ws.on('message', (data) => received.push(JSON.parse(String(data))));
      ws.send(
        JSON.stringify({
          type: 'hello',
          num_connections: 1,
          debug_info: { host: 'fake' },
          connection_info: { app_id: 'A0ROLLCALL' },
        }),
      );
      ws.send(
        JSON.stringify({
          envelope_id: 'env-prod-1',
          type: 'slash_commands',
          accepts_response_payload: true,
          payload: {
            command: '/argo',
            text: 'status',
            user_id: 'U0ALICE',
            channel_id: 'C0OPS',
            team_id: 'T0TEAM',
            response_url: fake.responseUrl('sock'),
            trigger_id: 't1',
          },
        }),
      );
    });
    await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
    fake.socketUrl = `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/link`;
    const lazy = ['@slack/socket-mode', '@slack/oauth', 'express', 'raw-body', 'undici', 'jsonwebtoken'];
    // None of them is in the bundle (where its text would be held in memory even unused): each source map says so.
    const chunks = path.join(app, 'dist/chunks');
    for (const map of readdirSync(chunks).filter((f) => f.endsWith('.js.map'))) {
      const { sources } = JSON.parse(readFileSync(path.join(chunks, map), 'utf8')) as { sources: string[] };
      for (const part of lazy)
        expect(
          sources.filter((s) => s.includes(`node_modules/${part}/`)),
          `${part} in ${map}`,
        ).toEqual([]);
      // The build's own stand-in for zod's index of locales (namespace zod-english-only) re-exports en.js alone.
      const locales = sources.filter(
        (s) => s.includes('node_modules/zod/v4/locales/') && !s.startsWith('zod-english-only:'),
      );
      expect(
        locales.filter((s) => !s.endsWith('/en.js')),
        `zod locales in ${map}`,
      ).toEqual([]);
    }
    const httpLog = moduleLog();
    const socketLog = moduleLog();
    try {
      // Started as the chart starts a bot pod: with node's flags from the chart's values in front.
      const botFlags = (
        parse(readFileSync(path.join(root, 'deploy/helm/rollcall/values.yaml'), 'utf8')) as {
          bot: { nodeFlags: string[] };
        }
      ).bot.nodeFlags;
      const slackPort = await freePort();
      const http = await startBot(
        `slack:\n  mode: http\n  botToken: xoxb-prod\n  signingSecret: prod-secret\n  port: ${slackPort}\n  apiUrl: ${fake.apiUrl}\n`,
        [...httpLog.nodeArgs, ...botFlags],
      );
      try {
        const started = httpLog.read();
        expect(started).toMatch(/dist\/main\.js/);
        // Before it says it is ready, the bot answers signed requests of its own (its warm-up), reading each body with
        // raw-body; the receivers it does not use stay out.
        expect(started).toContain('raw-body');
        for (const part of lazy.filter((p) => p !== 'raw-body')) expect(started, part).not.toContain(part);
        // BullMQ too waits until the bot queues its first run.
        expect(started).not.toContain('bullmq');
        const res = await postSlashCommand(`http://127.0.0.1:${slackPort}/slack/events`, 'prod-secret', {
          text: 'status',
          user_id: 'U0ALICE',
          response_url: fake.responseUrl('http-status'),
        });
        expect(res.status).toBe(200);
        await expect.poll(() => fake.responsesTo('http-status').length, { timeout: 15_000 }).toBe(1);
        expect(JSON.stringify(fake.responsesTo('http-status')[0].body)).toMatch(/Synced/);
      } finally {
        expect(await http.stop(), http.log()).toBe(0);
      }
      const answered = httpLog.read();
      for (const part of lazy.filter((p) => p !== 'raw-body')) expect(answered, part).not.toContain(part);

      // The same build in Socket Mode: the stand-in loads the real client from node_modules, and a command is acked.
      const socket = await startBot(
        `slack:\n  mode: socket\n  botToken: xoxb-prod\n  appToken: xapp-prod\n  apiUrl: ${fake.apiUrl}\n`,
        socketLog.nodeArgs,
      );
      try {
        await expect.poll(() => received.some((m) => m.envelope_id === 'env-prod-1'), { timeout: 15_000 }).toBe(true);
        expect(fake.callsTo('apps.connections.open')[0].headers.authorization).toBe('Bearer xapp-prod');
      } finally {
        expect(await socket.stop(), socket.log()).toBe(0);
      }
      expect(socketLog.read()).toContain('@slack/socket-mode');
    } finally {
      httpLog.remove();
      socketLog.remove();
      for (const c of wss.clients) c.terminate();
      await new Promise((r) => wss.close(r));
      await fake.stop();
    }
  });

  it('finds the files shipped beside dist/ from the bundled chunks: init copies the example config', async () => {
    const out = mkdtempSync(path.join(tmpdir(), 'rollcall-init-'));
    chmodSync(out, 0o777);
    try {
      await run(['init', path.join(out, 'rollcall.yaml')]);
      expect(readFileSync(path.join(out, 'rollcall.yaml'), 'utf8')).toBe(
        readFileSync(path.join(app, 'rollcall.example.yaml'), 'utf8'),
      );
      const { stdout } = await run(['runbooks', 'validate', 'runbooks']);
      expect(stdout).toMatch(/\d+ runbooks OK in runbooks: .*bulk-sync/);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });

  it('starts as `rollcall start`, turns ready, serves metrics and stops cleanly on SIGTERM', async () => {
    const port = await freePort();
    writeFileSync(
      path.join(app, 'start.yaml'),
      `${simConfigYaml(sim, { redisUrl: process.env.REDIS_URL, redisPrefix: prefix, operator: 'terminal' })}http:\n  port: ${port}\n`,
      { mode: 0o644 },
    );
    let log = '';
    const child = spawn(process.execPath, ['dist/main.js', 'start', '--config', 'start.yaml'], {
      cwd: app,
      env: containerEnv({ LOG_LEVEL: 'info' }),
      ...asImageUser,
    });
    child.stderr.on('data', (c) => (log += c));
    child.stdout.on('data', (c) => (log += c));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    try {
      await expect
        .poll(async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status, {
          timeout: 30_000,
          interval: 200,
        })
        .toBe(200);
      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      expect(metrics).toContain('rollcall_argocd_instance_up{instance="prod"} 1');
      expect(log).not.toMatch(/ENOTDIR|EACCES|EROFS/);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited, log).toBe(0);
  });
});
