import { groupChanges, type ChangeGroup, type ChangeJson } from './groups.js';

/**
 * How long after an app's health turned a change of that app may be stamped and still count as
 * before it: Argo CD stamps a history entry (deployedAt) when the sync ends, and the app's health
 * turns while the sync still runs.
 */
const SYNC_END_SLACK_MS = 2 * 60_000;

const appOf = (c: ChangeJson) => `${c.instance ?? ''}/${c.app ?? ''}`;

/** When a turn to Progressing is trouble: the app has stayed Progressing this long, as of `nowMs`. */
export interface StuckProgressing {
  nowMs: number;
  stuckAfterMs: number;
}

/**
 * The health changes that are trouble: an app gone Degraded or Missing, or gone Progressing and
 * still Progressing (no later health change of it) `stuckAfterMs` on. A sync leaves every app
 * Progressing for a while: only one that never settles is trouble.
 */
function troubleTransitions(changes: readonly ChangeJson[], stuck?: StuckProgressing): ChangeJson[] {
  const lastHealth = new Map<string, ChangeJson>();
  for (const c of changes) {
    if (c.kind !== 'health' || !c.app) continue;
    const seen = lastHealth.get(appOf(c));
    if (!seen || Date.parse(c.at) > Date.parse(seen.at)) lastHealth.set(appOf(c), c);
  }
  return changes.filter(
    (h) =>
      h.kind === 'health' &&
      !!h.app &&
      (h.bad ||
        (!!stuck &&
          h.to === 'Progressing' &&
          lastHealth.get(appOf(h)) === h &&
          stuck.nowMs - Date.parse(h.at) >= stuck.stuckAfterMs)),
  );
}

/**
 * For each change, the troubled apps (gone Degraded or Missing, or stuck Progressing) it was the
 * last change of that app before: what most likely broke the app is what was last done to it.
 */
export function troubleAfter(changes: readonly ChangeJson[], stuck?: StuckProgressing): Map<ChangeJson, number> {
  const byApp = new Map<string, ChangeJson[]>();
  for (const c of changes) {
    if (c.kind === 'health' || !c.app) continue;
    const list = byApp.get(appOf(c));
    if (list) list.push(c);
    else byApp.set(appOf(c), [c]);
  }
  const counts = new Map<ChangeJson, number>();
  for (const h of troubleTransitions(changes, stuck)) {
    const latest = Date.parse(h.at) + SYNC_END_SLACK_MS;
    let cause: ChangeJson | undefined;
    for (const c of byApp.get(appOf(h)) ?? []) {
      const t = Date.parse(c.at);
      if (t <= latest && (!cause || t > Date.parse(cause.at))) cause = c;
    }
    if (cause) counts.set(cause, (counts.get(cause) ?? 0) + 1);
  }
  return counts;
}

/** 0: a likely cause; 1: the trouble (apps gone unhealthy, syncs failed); 2: the rest. */
function rank(g: ChangeGroup): number {
  if (g.troubleAfter) return 0;
  return g.bad ? 1 : 2;
}

/**
 * Changes grouped as on-call reads them, ranked by what most likely caused the trouble: the changes
 * after which apps went unhealthy or stuck Progressing (most apps first), then the trouble itself, then the rest; newest
 * first within each. `changes` is newest first; `evidence` (default: `changes`) is where the health
 * transitions are read, for a list that shows only what came before them (an incident's report).
 */
export function groupByCause(
  changes: ChangeJson[],
  runIds: Map<ChangeJson, string | undefined> = new Map(),
  evidence: readonly ChangeJson[] = changes,
  stuck?: StuckProgressing,
): ChangeGroup[] {
  const groups = groupChanges(changes, runIds, troubleAfter(evidence, stuck));
  const order = new Map(groups.map((g, i) => [g, i]));
  return [...groups].sort(
    (a, b) => rank(a) - rank(b) || (b.troubleAfter ?? 0) - (a.troubleAfter ?? 0) || order.get(a)! - order.get(b)!,
  );
}
