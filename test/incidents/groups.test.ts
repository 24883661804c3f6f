import { describe, expect, it } from 'vitest';
import type { AuditEntry } from '../../src/domain/audit/audit-log.js';
import { StaticFleet } from '../../src/fleet/model.js';
import { auditChange } from '../../src/domain/incidents/change-log.js';
import { changeJson, groupChanges, type ChangeJson } from '../../src/domain/incidents/groups.js';
import { seedOutageFixture } from '../../src/sim/scenarios/seed-outage.js';

const now = new Date('2026-12-04T15:32:00Z');
const fleet = StaticFleet.fromFixture(seedOutageFixture(now));

/** The audit trail of one bulk-sync run as the engine and the action write it, newest first as `changes` reads it. */
function bulkSyncTrail(runId: string, apps: string[], opts: { failedApp?: string; end?: string } = {}): AuditEntry[] {
  let n = 0;
  const at = () => new Date(now.getTime() + n * 1000).toISOString();
  const entry = (e: Omit<AuditEntry, 'id' | 'at'>): AuditEntry => ({ id: `${now.getTime()}-${n++}`, at: at(), ...e });
  const trail: AuditEntry[] = [
    entry({ kind: 'run.start', who: 'U0DEMO', target: 'bulk-sync', runId, surface: 'slack', result: 'preview' }),
    entry({ kind: 'run.confirm', who: 'U0DEMO', runId, surface: 'slack' }),
    entry({ kind: 'step.start', who: 'rollcall', target: 'sync', runId }),
    ...apps.map((app) =>
      entry(
        app === opts.failedApp
          ? {
              kind: 'argocd.sync',
              who: 'U0DEMO',
              target: `prod/${app}`,
              runId,
              params: { prune: true },
              result: 'error: unavailable',
            }
          : {
              kind: 'argocd.sync',
              who: 'U0DEMO',
              target: `prod/${app}`,
              runId,
              params: { prune: true },
              result: 'accepted',
            },
      ),
    ),
    entry({ kind: 'step.end', who: 'rollcall', target: 'sync', runId, result: opts.end ?? 'succeeded' }),
  ];
  if (opts.end !== 'running')
    trail.push(entry({ kind: 'run.end', who: 'U0DEMO', runId, result: opts.end ?? 'succeeded' }));
  return trail.reverse();
}

function grouped(trail: AuditEntry[]) {
  const pairs = trail.map((e) => ({ json: changeJson(auditChange(e), fleet)!, runId: e.runId }));
  return groupChanges(
    pairs.map((p) => p.json),
    new Map<ChangeJson, string | undefined>(pairs.map((p) => [p.json, p.runId])),
  );
}

describe('a run in the change log', () => {
  const apps = ['auth-config-prod-eu-west-1', 'auth-config-prod-us-east-1', 'auth-config-prod-eu-central-1'];

  it('is one line saying what it ran, how it ended, what it synced where, and who asked', () => {
    const groups = grouped(bulkSyncTrail('r-1', apps));
    expect(groups).toHaveLength(1);
    expect(groups[0]).toMatchObject({
      kind: 'run',
      subject: 'run r-1',
      runbook: 'bulk-sync',
      outcome: 'succeeded',
      synced: 3,
      by: 'U0DEMO',
      count: 8,
    });
    expect(groups[0].text).toBe('run r-1 (bulk-sync): succeeded, synced 3 apps on 3 clusters, 15:32, by U0DEMO');
  });

  it('counts a sync Argo CD refused as not synced, and says so on the entry', () => {
    const trail = bulkSyncTrail('r-2', apps, { failedApp: 'auth-config-prod-us-east-1', end: 'failed' });
    expect(auditChange(trail.find((e) => e.result === 'error: unavailable')!).text).toBe(
      'rollcall could not sync auth-config-prod-us-east-1 (prune) (unavailable) (run r-2, requested by U0DEMO)',
    );
    const [group] = grouped(trail);
    expect(group).toMatchObject({ outcome: 'failed', synced: 2 });
    expect(group.text).toMatch(/^run r-2 \(bulk-sync\): failed, synced 2 apps on 2 clusters, /);
  });

  it('has no outcome while it runs', () => {
    const [group] = grouped(bulkSyncTrail('r-3', apps.slice(0, 1), { end: 'running' }));
    expect(group.outcome).toBeUndefined();
    expect(group.text).toBe('run r-3 (bulk-sync): synced 1 app on prod-eu-west-1, 15:32, by U0DEMO');
  });
});
