import { describe, expect, it } from 'vitest';
import { groupByCause, troubleAfter } from '../../src/domain/incidents/cause.js';
import type { ChangeJson } from '../../src/domain/incidents/groups.js';

const t0 = Date.parse('2026-12-04T10:00:00Z');
const at = (minutes: number) => new Date(t0 + minutes * 60_000).toISOString();

function change(kind: ChangeJson['kind'], app: string, minutes: number, extra: Partial<ChangeJson> = {}): ChangeJson {
  const appSet = app.replace(/-c\d$/, '');
  return {
    at: at(minutes),
    kind,
    instance: 'prod',
    app,
    appSet,
    cluster: app.slice(appSet.length + 1),
    text: `${app} ${kind}`,
    ...extra,
  };
}
const degraded = (app: string, minutes: number) =>
  change('health', app, minutes, { from: 'Healthy', to: 'Degraded', bad: true, text: `${app} Healthy → Degraded` });

describe('the likely cause of trouble', () => {
  it("credits each app's unhealthy turn to the last change of that app before it, not older ones or other apps'", () => {
    const old = change('deploy', 'web-c1', 0, { revision: 'v1', previousRevision: 'v0' });
    const last = change('deploy', 'web-c1', 10, { revision: 'v2', previousRevision: 'v1' });
    const other = change('deploy', 'db-c1', 11, { revision: 'v5', previousRevision: 'v4' });
    // Argo CD stamps a deploy when its sync ends; the app turned Degraded a minute before that.
    const endedAfter = change('deploy', 'api-c1', 21, { revision: 'v3', previousRevision: 'v2' });
    const tooLate = change('deploy', 'api-c2', 30, { revision: 'v3', previousRevision: 'v2' });
    const healed = change('health', 'db-c1', 12, { from: 'Degraded', to: 'Healthy', text: 'db-c1 Degraded → Healthy' });
    const counts = troubleAfter([
      old,
      last,
      other,
      endedAfter,
      tooLate,
      healed,
      degraded('web-c1', 12),
      degraded('api-c1', 20),
      degraded('api-c2', 20),
    ]);
    expect([...counts]).toEqual([
      [last, 1],
      [endedAfter, 1],
    ]);
  });

  it('ranks the changes after which apps went unhealthy first (most apps first), then the trouble, then the rest newest first', () => {
    const newestFirst = [
      change('deploy', 'cache-c1', 30, { revision: 'v9', previousRevision: 'v8' }),
      degraded('web-c2', 13),
      degraded('web-c1', 12),
      degraded('api-c1', 12),
      change('deploy', 'web-c2', 10, { revision: 'v2', previousRevision: 'v1' }),
      change('deploy', 'web-c1', 10, { revision: 'v2', previousRevision: 'v1' }),
      change('deploy', 'api-c1', 9, { revision: 'v7', previousRevision: 'v6' }),
      change('deploy', 'db-c1', 5, { revision: 'v5', previousRevision: 'v4' }),
    ];
    const groups = groupByCause(newestFirst);
    expect(groups.map((g) => [g.kind, g.subject, g.troubleAfter ?? 0])).toEqual([
      ['deploy', 'web', 2],
      ['deploy', 'api', 1],
      ['health', 'web', 0],
      ['health', 'api', 0],
      ['deploy', 'cache', 0],
      ['deploy', 'db', 0],
    ]);
    expect(groups[0].text).toBe('web: v1 → v2 on 2 clusters, 10:10 — then 2 apps went unhealthy');
    expect(groups[2].text).toBe('web: 2 apps Healthy → Degraded on 2 clusters, 10:12–10:13');
    expect(groups[3].text).toBe('api: api-c1 Healthy → Degraded on c1, 10:12');
  });

  it('counts an app still Progressing stuckAfter after it turned as trouble, not one that settled or is still young', () => {
    const progressing = (app: string, minutes: number) =>
      change('health', app, minutes, { from: 'Healthy', to: 'Progressing', text: `${app} Healthy → Progressing` });
    const stuckDeploy = change('deploy', 'web-c1', 10, { revision: 'v2', previousRevision: 'v1' });
    const settledDeploy = change('deploy', 'web-c2', 10, { revision: 'v2', previousRevision: 'v1' });
    const youngDeploy = change('deploy', 'web-c3', 29, { revision: 'v2', previousRevision: 'v1' });
    const changes = [
      stuckDeploy,
      settledDeploy,
      youngDeploy,
      progressing('web-c1', 10),
      progressing('web-c2', 10),
      change('health', 'web-c2', 11, { from: 'Progressing', to: 'Healthy', text: 'web-c2 Progressing → Healthy' }),
      progressing('web-c3', 29),
    ];
    const stuck = { nowMs: t0 + 30 * 60_000, stuckAfterMs: 15 * 60_000 };
    expect([...troubleAfter(changes, stuck)]).toEqual([[stuckDeploy, 1]]);
    // Without a clock to judge "still", Progressing is no trouble.
    expect(troubleAfter(changes).size).toBe(0);
  });

  it('keeps newest first when nothing went unhealthy', () => {
    const newestFirst = [
      change('deploy', 'cache-c1', 30, { revision: 'v9', previousRevision: 'v8' }),
      change('deploy', 'db-c1', 5, { revision: 'v5', previousRevision: 'v4' }),
    ];
    expect(groupByCause(newestFirst).map((g) => g.subject)).toEqual(['cache', 'db']);
  });
});
