import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { RollcallError } from '../core/errors.js';

/** Thrown when no Redis is reachable and no `redis-server` binary exists to start one. */
export class RedisUnavailableError extends RollcallError {
  declare readonly code: 'redis_unavailable';
  constructor() {
    super(
      'redis_unavailable',
      'rollcall needs Redis 6.2+ and none is reachable on 127.0.0.1:6379 (and REDIS_URL is not set), ' +
        'and no `redis-server` binary was found to start a private one.\n' +
        'Install Redis:  sudo apt-get install redis-server   (Debian/Ubuntu)\n' +
        '                brew install redis                  (macOS)\n' +
        '           or:  docker compose up -d redis          (then REDIS_URL=redis://127.0.0.1:6379)',
    );
  }
}

export interface RedisHandle {
  url: string;
  /** True when this process started the server (and will stop it). */
  owned: boolean;
  stop(): Promise<void>;
}

/** Resolves true when something answers PING at host:port within the timeout. */
export function pingRedis(host: string, port: number, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    let buffered = '';
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      buffered += chunk.toString();
      if (buffered.includes('\r\n')) done(buffered.startsWith('+PONG') || buffered.startsWith('-NOAUTH'));
    });
  });
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/**
 * The environment without libfaketime (a suite run a year ahead under `faketime`): redis-server does not start
 * under it, and a Redis keeps the clock of the machine it runs on anyway, which rollcall reads apart from its own
 * (stream ids, `redisClockOffset`).
 */
export function onTheMachineClock(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { FAKETIME: _offset, FAKETIME_NO_CACHE: _noCache, LD_PRELOAD: preload, ...rest } = env;
  const kept = (preload ?? '')
    .split(/[:\s]+/)
    .filter((lib) => lib && !/libfaketime/.test(lib))
    .join(':');
  return kept ? { ...rest, LD_PRELOAD: kept } : rest;
}

export function findBinary(name: string, searchPath?: string[]): string | undefined {
  const dirs =
    searchPath ??
    (process.env.PATH ?? '').split(path.delimiter).concat(['/usr/sbin', '/usr/local/bin', '/opt/homebrew/bin']);
  for (const dir of dirs) {
    const candidate = path.join(dir, name);
    try {
      if (statIsExecutable(candidate)) return candidate;
    } catch {}
  }
  return undefined;
}

function statIsExecutable(file: string): boolean {
  const s = statSync(file);
  return s.isFile() && (s.mode & 0o111) !== 0;
}

export interface PrivateRedisOptions {
  /** Keep an append-only file so a restart keeps the data (used by restart tests). */
  persistent?: boolean;
  /**
   * How often the append-only file is fsynced. `everysec` is Redis's default (and production's):
   * a crash may lose the last second of writes. @defaultValue 'always'
   */
  appendfsync?: 'always' | 'everysec';
  port?: number;
  dir?: string;
  /** Directories to look for redis-server in (default: PATH and the usual places). */
  searchPath?: string[];
}

export interface PrivateRedis extends RedisHandle {
  port: number;
  dir: string;
  process: ChildProcess;
}

/** Starts a private `redis-server` on a free port in a temp dir. */
export async function startPrivateRedis(options: PrivateRedisOptions = {}): Promise<PrivateRedis> {
  const binary = findBinary('redis-server', options.searchPath);
  if (!binary) throw new RedisUnavailableError();
  const port = options.port ?? (await freePort());
  const dir = options.dir ?? mkdtempSync(path.join(tmpdir(), 'rollcall-redis-'));
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--daemonize', 'no'];
  args.push('--appendonly', options.persistent ? 'yes' : 'no');
  if (options.persistent) args.push('--appendfsync', options.appendfsync ?? 'always');
  const child = spawn(binary, args, { stdio: 'ignore', env: onTheMachineClock(process.env) });
  const deadline = Date.now() + 10_000;
  while (!(await pingRedis('127.0.0.1', port, 200))) {
    if (child.exitCode !== null) throw new Error(`redis-server exited with code ${child.exitCode} (port ${port})`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`redis-server did not answer on port ${port} within 10s`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  const ownsDir = !options.dir;
  return {
    url: `redis://127.0.0.1:${port}`,
    owned: true,
    port,
    dir,
    process: child,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await Promise.race([exited, new Promise((r) => setTimeout(r, 3000))]);
        if (child.exitCode === null) child.kill('SIGKILL');
      }
      if (ownsDir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The Redis to use: REDIS_URL (or the configured URL) when set; else the one on 127.0.0.1:6379
 * when it answers; else a private redis-server started for this process.
 */
export async function ensureRedis(configuredUrl?: string): Promise<RedisHandle> {
  const url = configuredUrl ?? process.env.REDIS_URL;
  if (url) return { url, owned: false, stop: async () => {} };
  if (await pingRedis('127.0.0.1', 6379)) return { url: 'redis://127.0.0.1:6379', owned: false, stop: async () => {} };
  return startPrivateRedis();
}
