import { rmSync } from 'node:fs';
import { RollcallError } from '../../core/errors.js';
import {
  PROMETHEUS_INSTALL_HINT,
  prometheusBinary,
  startPrivatePrometheus,
  type PrivatePrometheus,
} from '../../infra/prometheus-server.js';

/** Seconds between a private Prometheus' scrapes of the simulator: a 1m check window holds a dozen samples. */
export const SIM_SCRAPE_INTERVAL_S = 5;

/** A Prometheus that scrapes the simulator, for `rollcall sim` and `rollcall demo`. */
export interface SimulatorPrometheus {
  url: string;
  /** Seconds between scrapes of the one started here (unknown for PROMETHEUS_URL). */
  scrapeIntervalS?: number;
  /** Started here (and stopped by stop()), rather than given by PROMETHEUS_URL. */
  owned: boolean;
  stop(): Promise<void>;
}

export type PrometheusForSimulator =
  { prometheus: SimulatorPrometheus; off?: undefined } | { prometheus?: undefined; off: string };

/**
 * The Prometheus metric checks against the simulator use: `PROMETHEUS_URL` when set (it must scrape the
 * simulator's /metrics itself), else a private `prometheus` scraping `simUrl` every 5 s, else none, with `off`
 * saying that metric checks are off and what to install.
 */
export async function prometheusForSimulator(
  simUrl: string,
  opts: { env?: NodeJS.ProcessEnv; searchPath?: string[] } = {},
): Promise<PrometheusForSimulator> {
  const given = (opts.env ?? process.env).PROMETHEUS_URL?.trim();
  if (given) return { prometheus: { url: prometheusUrl(given), owned: false, stop: async () => {} } };
  if (!prometheusBinary(opts.searchPath))
    return {
      off: `metric checks are off: no \`prometheus\` binary found and PROMETHEUS_URL is not set.\n${PROMETHEUS_INSTALL_HINT}`,
    };
  let started: PrivatePrometheus;
  try {
    started = await startPrivatePrometheus({
      targets: [{ url: simUrl, metricsPath: '/metrics' }],
      scrapeIntervalS: SIM_SCRAPE_INTERVAL_S,
      searchPath: opts.searchPath,
    });
  } catch (error) {
    // The simulator is useful without metrics: a binary that does not start turns checks off, said why.
    if (error instanceof RollcallError && error.code === 'prometheus_unavailable')
      return { off: `metric checks are off: ${error.message}` };
    throw error;
  }
  // stop() runs on SIGINT/SIGTERM and on a normal exit; if the process ends any other way (an uncaught
  // exception), this still takes the server and its data dir down with it.
  const onExit = () => {
    started.process.kill('SIGKILL');
    rmSync(started.dir, { recursive: true, force: true });
  };
  process.once('exit', onExit);
  return {
    prometheus: {
      url: started.url,
      scrapeIntervalS: started.scrapeIntervalS,
      owned: true,
      async stop() {
        process.off('exit', onExit);
        await started.stop();
      },
    },
  };
}

function prometheusUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new RollcallError('usage', `PROMETHEUS_URL is not a URL: "${text}" (expected e.g. http://127.0.0.1:9090)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new RollcallError('usage', `PROMETHEUS_URL must be an http or https URL (got "${text}")`);
  return text.replace(/\/+$/, '');
}
