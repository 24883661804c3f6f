/**
 * What happens to an alert when the rules look again: a pure function of the stored alert, the
 * condition seen now (or its absence) and the clock, so every worker computes the same next state and
 * the store only has to make the write atomic.
 *
 *   (none) ──seen──> pending ──held down──> firing ──gone for resolveAfter──> resolved
 *                      │ gone                 │ ▲ back before that: a flap (resolving waits longer)
 *                      ▼                      ▼ │
 *                   (deleted)            acked / snoozed (until snoozedUntil, then firing)
 *
 * While an active alert's condition is gone it is clearing (`clearedAt`, then `resolvesAt`): its message
 * says so, in whichever state it is, until it resolves or the condition comes back.
 */
import { randomInt } from 'node:crypto';
import type { AlertCondition, AlertSeverity } from './rules.js';

export type AlertState = 'pending' | 'firing' | 'acked' | 'snoozed' | 'resolved';

/** The stored alert: the content of the condition it was raised for (holding it down is the lifecycle's), and its state. */
export interface AlertRecord extends Omit<AlertCondition, 'holdForMs'> {
  id: string;
  state: AlertState;
  /** When rollcall first saw it. */
  firstSeenAt: string;
  firedAt?: string;
  /** Last change of content or state. */
  updatedAt: string;
  resolvedAt?: string;
  /** The condition has been absent since then (the alert is resolving). */
  clearedAt?: string;
  /**
   * When a clearing alert resolves unless its condition comes back; set (and the message edited to say so)
   * once the condition has stayed away for FLAP_GRACE_MS, so a moment's disagreement between two workers'
   * mirrors edits nothing.
   */
  resolvesAt?: string;
  /** Times the condition came back while resolving. */
  flaps: number;
  ackedBy?: string;
  snoozedBy?: string;
  snoozedUntil?: string;
  /** Content version; the message is re-rendered while `rendered` is behind it. */
  version: number;
  rendered: number;
  /** The one Slack message of this alert. */
  message?: { channel: string; ts: string; threadTs?: string };
  /** The open incident the alert was routed to. */
  incident?: { id: string; channel: string; threadTs: string };
  /** Apps and severity the last notification spoke of: more, or worse, is worth a new notification. */
  notifiedApps: number;
  notifiedSeverity?: AlertSeverity;
  /** It got worse since the last notification: a follow-up is due. */
  renotify?: boolean;
  /** The process rendering the message, so only one posts. */
  renderLease?: { owner: string; until: number };
  /** Resolved because none of its apps have the problem any more, though other apps of the group now do. */
  superseded?: boolean;
  /** A resolved alert kept under its id after a new alert of the same group took the group's place. */
  archived?: boolean;
}

export interface LifecyclePolicy {
  holdDownMs: number;
  resolveAfterMs: number;
}

/**
 * Two workers' mirrors can disagree for a moment (one has seen the fix, the other not yet): a condition
 * gone for less than this and back is that lag, not a flap.
 */
export const FLAP_GRACE_MS = 10_000;
/** Each flap lengthens the wait before resolving, up to this many times resolveAfter. */
const MAX_RESOLVE_STRETCH = 4;

const ID_ALPHABET = '23456789abcdefghjkmnpqrstuvwxyz';

/** `a-k3m9x`: short enough to type in `alert ack`. */
export function newAlertId(): string {
  let s = '';
  for (let i = 0; i < 5; i++) s += ID_ALPHABET[randomInt(ID_ALPHABET.length)];
  return `a-${s}`;
}

const SEVERITY_RANK: Record<AlertSeverity, number> = { warning: 1, critical: 2 };

export const isActive = (a: Pick<AlertRecord, 'state'>) =>
  a.state === 'firing' || a.state === 'acked' || a.state === 'snoozed';

function content(record: AlertRecord, condition: AlertCondition): AlertRecord {
  return {
    ...record,
    severity: condition.severity,
    instance: condition.instance,
    appSet: condition.appSet,
    app: condition.app,
    step: condition.step,
    revision: condition.revision,
    apps: condition.apps,
    summary: condition.summary,
    details: condition.details,
    rolloutTarget: condition.rolloutTarget,
    since: Date.parse(condition.since) < Date.parse(record.since) ? condition.since : record.since,
  };
}

function sameApps(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/**
 * None of the alerted apps has the problem any more, but other apps of the same group do (a RollingSync
 * step moved on to its next apps, which stall too): the alert people acted on is resolved and a new one
 * starts, rather than the old message quietly swapping every app it named.
 */
function supersedes(prev: AlertRecord, condition: AlertCondition): boolean {
  if (!prev.apps.length || !condition.apps.length) return false;
  const before = new Set(prev.apps);
  return !condition.apps.some((a) => before.has(a));
}

function resolve(prev: AlertRecord, at: string, extra: Partial<AlertRecord> = {}): AlertRecord {
  return {
    ...prev,
    state: 'resolved',
    resolvedAt: at,
    updatedAt: at,
    clearedAt: undefined,
    resolvesAt: undefined,
    renotify: false,
    version: prev.version + 1,
    ...extra,
  };
}

/**
 * An alert whose condition is gone: a pending one goes (nobody was told); an active one resolves once the
 * condition has stayed away for resolveAfter (longer after each flap). Its message says it is clearing as
 * soon as the condition has been away for FLAP_GRACE_MS: the fleet is fine again, and an alert that kept
 * saying "12 apps Degraded" until it resolved would contradict `status`.
 */
function clearing(prev: AlertRecord | undefined, now: Date, policy: LifecyclePolicy): AlertRecord | null | undefined {
  if (!prev || prev.state === 'resolved') return prev;
  if (prev.state === 'pending') return null;
  const at = now.toISOString();
  const t = now.getTime();
  if (!prev.clearedAt) return { ...prev, clearedAt: at };
  const gone = t - Date.parse(prev.clearedAt);
  const wait = policy.resolveAfterMs * Math.min(MAX_RESOLVE_STRETCH, 1 + prev.flaps);
  if (gone >= wait) return resolve(prev, at);
  if (prev.resolvesAt || gone < FLAP_GRACE_MS) return prev;
  return {
    ...prev,
    resolvesAt: new Date(Date.parse(prev.clearedAt) + wait).toISOString(),
    updatedAt: at,
    version: prev.version + 1,
  };
}

/**
 * The next state of one alert group, or null when its record should go (a pending alert whose condition
 * cleared before it fired: nobody was told, so nothing is left to resolve). Returns `prev` itself when
 * nothing changes, so the caller can skip the write.
 */
export function nextAlert(
  prev: AlertRecord | undefined,
  condition: AlertCondition | undefined,
  now: Date,
  policy: LifecyclePolicy,
): AlertRecord | null | undefined {
  const at = now.toISOString();
  const t = now.getTime();
  if (!condition) return clearing(prev, now, policy);

  if (prev && isActive(prev) && supersedes(prev, condition)) return resolve(prev, at, { superseded: true });
  // A resolved alert whose message still says it is firing is edited first; the new alert takes its place after.
  if (prev?.state === 'resolved' && prev.message && prev.version > prev.rendered) return prev;

  let next: AlertRecord;
  if (!prev || prev.state === 'resolved') {
    next = content(
      {
        id: newAlertId(),
        key: condition.key,
        rule: condition.rule,
        state: 'pending',
        firstSeenAt: at,
        updatedAt: at,
        since: condition.since,
        flaps: 0,
        version: 0,
        rendered: 0,
        notifiedApps: 0,
      } as AlertRecord,
      condition,
    );
  } else {
    next = { ...prev };
    if (prev.clearedAt) {
      // Back while resolving: held as it is, and counted so the next clearing waits longer.
      if (t - Date.parse(prev.clearedAt) >= FLAP_GRACE_MS) next.flaps = prev.flaps + 1;
      next.clearedAt = undefined;
      // Its message said it was clearing: it says firing again.
      if (prev.resolvesAt) {
        next.resolvesAt = undefined;
        next.version = prev.version + 1;
        next.updatedAt = at;
      }
    }
    if (!sameApps(prev.apps, condition.apps) || prev.severity !== condition.severity) {
      next = content(next, condition);
      if (prev.state !== 'pending') {
        next.version = prev.version + 1;
        next.updatedAt = at;
      }
    }
    if (prev.state === 'snoozed' && prev.snoozedUntil && t >= Date.parse(prev.snoozedUntil)) {
      next.state = 'firing';
      next.snoozedUntil = undefined;
      next.snoozedBy = undefined;
      next.version = next.version === prev.version ? prev.version + 1 : next.version;
      next.updatedAt = at;
    }
  }

  if (next.state === 'pending') {
    const holdMs = Math.max(policy.holdDownMs, condition.holdForMs ?? 0);
    if (t - Date.parse(next.firstSeenAt) >= holdMs) {
      next.state = 'firing';
      next.firedAt = at;
      next.updatedAt = at;
      next.version = 1;
      next.notifiedApps = next.apps.length;
      next.notifiedSeverity = next.severity;
    }
  } else if (next.state === 'firing' && worse(next)) {
    // Acked and snoozed alerts change in place but stay quiet: someone is on it, or asked for quiet.
    next.renotify = true;
    next.notifiedApps = next.apps.length;
    next.notifiedSeverity = next.severity;
  }
  return unchanged(prev, next) ? prev : next;
}

function worse(a: AlertRecord): boolean {
  return a.apps.length > a.notifiedApps || SEVERITY_RANK[a.severity] > SEVERITY_RANK[a.notifiedSeverity ?? a.severity];
}

function unchanged(prev: AlertRecord | undefined, next: AlertRecord): boolean {
  return !!prev && JSON.stringify(prev) === JSON.stringify(next);
}

export type AlertChange = { kind: 'ack'; by: string } | { kind: 'snooze'; by: string; untilMs: number };

/** A person's change to an alert (Ack, Snooze): one more version, so the message shows it. */
export function applyChange(prev: AlertRecord, change: AlertChange, now: Date): AlertRecord {
  const at = now.toISOString();
  const base = { ...prev, updatedAt: at, version: prev.version + 1, renotify: false };
  if (change.kind === 'ack')
    return { ...base, state: 'acked', ackedBy: change.by, snoozedUntil: undefined, snoozedBy: undefined };
  return { ...base, state: 'snoozed', snoozedBy: change.by, snoozedUntil: new Date(change.untilMs).toISOString() };
}
