/**
 * rollcall's freeze: a deny sync window it wrote into an AppProject (Argo CD's own way to stop syncs), and
 * the record it keeps of it. The freeze runbook writes both; the rules, `status` and the digest read the
 * records to tell a stall someone asked for from a stuck one.
 */
import type { Application, SyncWindow } from '../infra/argocd/types.js';
import { SyncWindowError, windowActive, windowMatches } from '../infra/argocd/sync-windows.js';
import { absoluteTime, mention } from '../core/format.js';

/** How every window rollcall writes begins its description: `rollcall freeze by U123 at …`. */
export const FREEZE_MARK = 'rollcall freeze by ';

export interface Freeze {
  /** The run that wrote the window; one run may freeze several projects. */
  runId: string;
  instance: string;
  project: string;
  /** The window exactly as written (Argo CD's stored form): unfreeze removes this window and no other. */
  window: SyncWindow;
  /** What was frozen, as typed: `project=payments`, `auth-* cluster=prod-eu1`. */
  target: string;
  by: string;
  /** When the freeze was written (ISO). */
  at: string;
  /** When the window stops holding (for=), ISO; absent: until `unfreeze`. */
  until?: string;
  /** The incident it was declared in. */
  incident?: string;
  /** Manual syncs blocked too (`manual=block`). */
  manualBlocked: boolean;
  /**
   * Why the sweep of spent freezes left this one's window in the project (someone changed it since): said once,
   * kept for `frozen`.
   */
  expiryRefused?: string;
}

/** A window rollcall's freeze wrote (its description says so). */
export function isFreezeWindow(w: SyncWindow): boolean {
  return !!w.description?.startsWith(FREEZE_MARK);
}

/** A for= freeze whose end has come: its once-a-year window fires again next year until it is removed. */
export function freezeSpent(f: Freeze, now: Date): boolean {
  return !!f.until && now.getTime() >= Date.parse(f.until);
}

/**
 * Whether the freeze holds at `now`: its window is active and, for a for= freeze, its end has not come. A for=
 * window is a yearly tick: still in the project a year on, it would fire again, and that is no freeze of rollcall's.
 */
export function freezeActive(f: Freeze, now: Date): boolean {
  if (freezeSpent(f, now)) return false;
  try {
    return windowActive(f.window, now);
  } catch (error) {
    // A window rollcall wrote always parses; a record that does not is not a freeze anyone can rely on.
    if (error instanceof SyncWindowError) return false;
    throw error;
  }
}

/** The active freeze that holds this app, if any: same instance and project, and the window matches it. */
export function freezeHolding(
  freezes: readonly Freeze[] | undefined,
  instance: string,
  app: Application,
  now: Date,
): Freeze | undefined {
  const project = app.spec.project || 'default';
  return freezes?.find(
    (f) => f.instance === instance && f.project === project && windowMatches(f.window, app) && freezeActive(f, now),
  );
}

/** "rollcall's freeze of project=payments (by @U123, INC-4, until 14 Mar 04:01)". */
export function describeFreeze(f: Freeze): string {
  const parts = [`by ${mention(f.by)}`];
  if (f.incident) parts.push(f.incident);
  parts.push(f.until ? `until ${absoluteTime(f.until)}` : 'until unfrozen');
  if (f.manualBlocked) parts.push('manual syncs blocked too');
  return `rollcall's freeze of ${f.target} (${parts.join(', ')})`;
}
