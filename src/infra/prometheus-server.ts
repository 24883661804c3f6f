import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { RollcallError } from '../core/errors.js';
import { findBinary, freePort } from './redis-server.js';

/** What to install when a private Prometheus is wanted and no binary exists. */
export const PROMETHEUS_INSTALL_HINT =
  'Install Prometheus to verify rollouts against metrics:\n' +
  '  sudo apt-get install --no-install-recommends prometheus   (Debian/Ubuntu)\n' +
  '  brew install prometheus                                  (macOS)\n' +
  'or point PROMETHEUS_URL at a Prometheus that scrapes the simulator.';

export interface ScrapeTarget {
  /** Base URL of the target, e.g. http://127.0.0.1:8080 */
  url: string;
  /** @defaultValue '/metrics' */
  metricsPath?: string;
}

export interface PrivatePrometheusOptions {
  targets: ScrapeTarget[];
  /** Seconds between scrapes (and rule evaluations). @defaultValue 5 */
  scrapeIntervalS?: number;
  port?: number;
  /** Directories to look for `prometheus` in (default: PATH and the usual places). */
  searchPath?: string[];
}

export interface PrivatePrometheus {
  url: string;
  port: number;
  dir: string;
  scrapeIntervalS: number;
  process: ChildProcess;
  /** Resolves once every target has been scraped successfully at least once. */
  waitForScrape(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

export function prometheusBinary(searchPath?: string[]): string | undefined {
  return findBinary('prometheus', searchPath);
}

function scrapeConfig(targets: ScrapeTarget[], intervalS: number): string {
  // One job per target: Prometheus keys a job by scheme and metrics path, and targets may differ in both.
  const jobs = targets.map((t, i) => {
    const url = new URL(t.url);
    return [
      `  - job_name: target-${i}`,
      `    scheme: ${url.protocol.replace(':', '')}`,
      `    metrics_path: ${JSON.stringify(t.metricsPath ?? '/metrics')}`,
      `    static_configs:`,
      `      - targets: [${JSON.stringify(url.host)}]`,
    ].join('\n');
  });
  return [
    'global:',
    `  scrape_interval: ${intervalS}s`,
    `  evaluation_interval: ${intervalS}s`,
    'scrape_configs:',
    ...jobs,
    '',
  ].join('\n');
}

async function answers(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(1000) });
    return res.ok;
  } catch {
    return false;
  }
}

/**
 * Starts a private `prometheus` on a free port with its own data dir, scraping `targets`. It shares
 * nothing with a Prometheus the machine may run: the port, the config and the TSDB are its own.
 */
export async function startPrivatePrometheus(options: PrivatePrometheusOptions): Promise<PrivatePrometheus> {
  const binary = prometheusBinary(options.searchPath);
  if (!binary)
    throw new RollcallError('prometheus_unavailable', `no \`prometheus\` binary found.\n${PROMETHEUS_INSTALL_HINT}`);
  const intervalS = options.scrapeIntervalS ?? 5;
  const port = options.port ?? (await freePort());
  const dir = mkdtempSync(path.join(tmpdir(), 'rollcall-prometheus-'));
  const configFile = path.join(dir, 'prometheus.yml');
  writeFileSync(configFile, scrapeConfig(options.targets, intervalS));
  const child = spawn(
    binary,
    [
      `--config.file=${configFile}`,
      `--storage.tsdb.path=${path.join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      // A private, short-lived server: no console templates, no long retention.
      '--storage.tsdb.retention.time=1d',
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-2000);
  });
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 20_000;
  while (!(await answers(`${url}/-/ready`))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new RollcallError(
        'prometheus_unavailable',
        `prometheus did not become ready on port ${port}${child.exitCode !== null ? ` (exited with code ${child.exitCode})` : ''}: ${stderr.trim().slice(-500)}`,
      );
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    port,
    dir,
    scrapeIntervalS: intervalS,
    process: child,
    waitForScrape: (timeoutMs = 30_000) => waitForScrape(url, options.targets.length, timeoutMs),
    stop,
  };
}

async function waitForScrape(url: string, targets: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    try {
      const res = await fetch(`${url}/api/v1/targets?state=active`, { signal: AbortSignal.timeout(1000) });
      const body = (await res.json()) as { data?: { activeTargets?: { health: string; lastError?: string }[] } };
      const active = body.data?.activeTargets ?? [];
      if (active.length >= targets && active.every((t) => t.health === 'up')) return;
      last = active.map((t) => `${t.health}${t.lastError ? ` (${t.lastError})` : ''}`).join(', ');
    } catch (err) {
      last = (err as Error).message;
    }
    if (Date.now() > deadline) throw new Error(`prometheus at ${url} has not scraped its targets: ${last}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
