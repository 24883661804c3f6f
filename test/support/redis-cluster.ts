import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { findBinary, freePort, onTheMachineClock, pingRedis } from '../../src/infra/redis-server.js';

const execFileAsync = promisify(execFile);
/** Redis' own tools, on the machine's clock as the servers are. */
const run = (file: string, args: string[], opts: { timeout?: number } = {}) =>
  execFileAsync(file, args, { ...opts, env: onTheMachineClock(process.env) });

export interface PrivateRedisCluster {
  /** `redis+cluster://` naming two of the nodes: the client finds the others from the slot map. */
  url: string;
  ports: number[];
  /** SIGKILLs the node on `port` (a crash: no shutdown, no handover). */
  kill(port: number): void;
  stop(): Promise<void>;
}

/**
 * Why a private Redis Cluster cannot be started here, or undefined when it can: `redis-server` and `redis-cli`
 * exist and the server accepts `--cluster-enabled` (a build without cluster support exits at once).
 */
export async function redisClusterUnsupported(): Promise<string | undefined> {
  const server = findBinary('redis-server');
  const cli = findBinary('redis-cli');
  if (!server || !cli) return `no ${server ? 'redis-cli' : 'redis-server'} binary on PATH`;
  if ((await serverMajor(server)) < 5) return `redis-server predates \`redis-cli --cluster create\` (Redis 5)`;
  return undefined;
}

/** The major version of the redis-server binary. */
async function serverMajor(server: string): Promise<number> {
  const { stdout } = await run(server, ['--version']);
  return Number(/v=(\d+)\./.exec(stdout)?.[1] ?? 0);
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * A private Redis Cluster of `masters` masters, each with `replicas` replicas, on free ports in a temp dir;
 * `stop` removes it all. With replicas, a killed master's replica takes over after the node timeout (1 s).
 */
export async function startPrivateRedisCluster(masters = 3, replicas = 0): Promise<PrivateRedisCluster> {
  const server = findBinary('redis-server')!;
  const cli = findBinary('redis-cli')!;
  const dir = mkdtempSync(path.join(tmpdir(), 'rollcall-redis-cluster-'));
  const children: ChildProcess[] = [];
  const ports: number[] = [];
  const stop = async () => {
    await Promise.all(
      children.map(async (child) => {
        if (child.exitCode !== null) return;
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await Promise.race([exited, new Promise((r) => setTimeout(r, 3000))]);
        if (child.exitCode === null) child.kill('SIGKILL');
      }),
    );
    rmSync(dir, { recursive: true, force: true });
  };
  // Each node also listens on a cluster bus port, by default its port + 10,000: on a busy machine that one can be an
  // ephemeral port some connection holds, and the node then exits at start. Redis 7 takes the bus port as a setting.
  const busPortSetting = (await serverMajor(server)) >= 7;
  /** Spawns node `i` on free ports; resolves once it answers, or with false if it exited first (a port taken meanwhile). */
  const startNode = async (i: number): Promise<boolean> => {
    const port = await freePort();
    ports[i] = port;
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no'];
    args.push('--daemonize', 'no', '--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`);
    args.push('--cluster-node-timeout', replicas ? '1000' : '2000');
    if (busPortSetting) args.push('--cluster-port', String(await freePort()));
    // A replica must have synced before it may replace its master; the default waits 5 s before the first sync.
    args.push('--repl-diskless-sync-delay', '0');
    const child = spawn(server, args, { stdio: 'ignore', env: onTheMachineClock(process.env) });
    children[i] = child;
    let exited = false;
    await waitFor(
      `redis-server (cluster node) did not answer on port ${port}`,
      async () => (exited = child.exitCode !== null) || pingRedis('127.0.0.1', port, 200),
      10_000,
    );
    return !exited;
  };
  try {
    for (let i = 0; i < masters * (1 + replicas); i++) {
      let tries = 1;
      while (!(await startNode(i)))
        if (++tries > 3) throw new Error(`redis-server exited at start 3 times (cluster node on port ${ports[i]})`);
    }
    await run(
      cli,
      [
        '--cluster',
        'create',
        ...ports.map((p) => `127.0.0.1:${p}`),
        '--cluster-replicas',
        String(replicas),
        '--cluster-yes',
      ],
      { timeout: 20_000 },
    );
    for (const port of ports) {
      await waitFor(
        `cluster_state:ok not reached on port ${port}`,
        async () => {
          const { stdout } = await run(cli, ['-p', String(port), 'cluster', 'info']);
          return /cluster_state:ok/.test(stdout);
        },
        15_000,
      );
    }
    for (const port of ports) {
      await waitFor(
        `replica on port ${port} did not sync with its master`,
        async () => {
          const { stdout } = await run(cli, ['-p', String(port), 'info', 'replication']);
          return !/role:slave/.test(stdout) || /master_link_status:up/.test(stdout);
        },
        15_000,
      );
    }
  } catch (error) {
    await stop();
    throw error;
  }
  const kill = (port: number) => children[ports.indexOf(port)]?.kill('SIGKILL');
  // Two seeds: the client learns the other nodes from the slot map.
  return { url: `redis+cluster://127.0.0.1:${ports[0]},127.0.0.1:${ports[1]}`, ports, kill, stop };
}
