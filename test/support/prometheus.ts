import {
  prometheusBinary,
  startPrivatePrometheus,
  type PrivatePrometheus,
  type ScrapeTarget,
} from '../../src/infra/prometheus-server.js';

/**
 * Whether this machine can run the Prometheus integration tests. CI (ROLLCALL_REQUIRE_PROMETHEUS=1)
 * installs Debian's package and must never skip them; elsewhere they are skipped without the binary.
 */
export const prometheusAvailable = Boolean(prometheusBinary()) || process.env.ROLLCALL_REQUIRE_PROMETHEUS === '1';

/**
 * A private Prometheus for one test file, scraping `targets` every `scrapeIntervalS` (1 s by default, so
 * tests wait seconds, not minutes), started and ready once every target has been scraped.
 */
export async function startTestPrometheus(targets: ScrapeTarget[], scrapeIntervalS = 1): Promise<PrivatePrometheus> {
  const prometheus = await startPrivatePrometheus({ targets, scrapeIntervalS });
  try {
    await prometheus.waitForScrape();
  } catch (err) {
    await prometheus.stop();
    throw err;
  }
  return prometheus;
}
