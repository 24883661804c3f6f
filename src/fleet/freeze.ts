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

/** The description that marks the window as rollcall's (Argo CD allows 255 characters). */
export function freezeDescription(f: Pick<Freeze, 'by' | 'at' | 'until' | 'incident' | 'runId' | 'target'>): string {
  const minute = (iso: string) => iso.replace(/:\d\d(\.\d+)?Z$/, 'Z');
  const text =
    `${FREEZE_MARK}${f.by} at ${minute(f.at)}` +
    `${f.incident ? ` for ${f.incident}` : ''}${f.until ? ` until ${minute(f.until)}` : ''} (run ${f.runId}): ${f.target}`;
  return text.length <= 255 ? text : `${text.slice(0, 254)}…`;
}

const DESCRIPTION = /^rollcall freeze by (\S+) at (\S+?)(?: for (\S+))?(?: until (\S+))? \(run ([^)\s]+)\): (.*)$/s;

/**
 * The freeze a window of rollcall's says it is, read back from its description (times to the minute, a long target
 * cut as written): what a process without rollcall's records in Redis knows of a freeze from Argo CD alone.
 * Undefined for a window that is not rollcall's or whose description someone rewrote.
 */
export function freezeFromWindow(instance: string, project: string, window: SyncWindow): Freeze | undefined {
  if (!isFreezeWindow(window)) return undefined;
  const m = DESCRIPTION.exec(window.description!);
  const iso = (text: string | undefined) =>
    text && !Number.isNaN(Date.parse(text)) ? new Date(text).toISOString() : undefined;
  const at = iso(m?.[2]);
  if (!m || !at || (m[4] && !iso(m[4]))) return undefined;
  return {
    runId: m[5],
    instance,
    project,
    window,
    target: m[6],
    by: m[1],
    at,
    ...(m[4] ? { until: iso(m[4]) } : {}),
    ...(m[3] ? { incident: m[3] } : {}),
    manualBlocked: !window.manualSync,
  };
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
