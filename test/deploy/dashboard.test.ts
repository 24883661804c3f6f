import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { StaticFleet } from '../../src/fleet/model.js';
import { startHttpServer } from '../../src/surfaces/http/server.js';
import { metricsRegistry } from '../../src/infra/metrics.js';

const root = path.resolve(import.meta.dirname, '../..');

describe('deploy/grafana/rollcall-dashboard.json', () => {
  it('queries exactly the metrics rollcall exports, and graphs every one of them', async () => {
    // The gauges over the fleet exist once the HTTP server serves /metrics.
    const server = await startHttpServer({
      port: 0,
      fleet: StaticFleet.fromObjects([]),
      health: { redis: async () => undefined },
    });
    await server.close();
    const exported = new Set(
      metricsRegistry()
        .getMetricsAsArray()
        .map((m) => (m as unknown as { name: string }).name)
        .filter((n) => n.startsWith('rollcall_')),
    );
    const dashboard = JSON.parse(readFileSync(path.join(root, 'deploy/grafana/rollcall-dashboard.json'), 'utf8')) as {
      panels: { title: string; targets: { expr: string }[] }[];
    };
    const queried = new Set(
      dashboard.panels.flatMap((p) =>
        p.targets.flatMap((t) =>
          [...t.expr.matchAll(/\brollcall_[a-z_]+/g)].map((m) => m[0].replace(/_(bucket|count|sum)$/, '')),
        ),
      ),
    );
    for (const name of queried) expect(exported, `dashboard queries ${name}`).toContain(name);
    for (const name of exported) expect(queried, `no panel graphs ${name}`).toContain(name);
    expect(exported).toEqual(
      new Set([
        'rollcall_commands_total',
        'rollcall_command_duration_seconds',
        'rollcall_slack_ack_seconds',
        'rollcall_slack_rate_limited_total',
        'rollcall_runs',
        'rollcall_runs_refused_total',
        'rollcall_argocd_requests_total',
        'rollcall_argocd_request_duration_seconds',
        'rollcall_mirror_resyncs_total',
        'rollcall_redis_errors_total',
        'rollcall_fleet_apps',
        'rollcall_argocd_instance_up',
        'rollcall_mirror_lag_seconds',
      ]),
    );
  });
});
