/**
 * How findings word what they quote: lists of names, Argo CD's own messages, an app's operation and
 * health. Shared by the rules so every finding reads the same way.
 */
import type { Application } from '../../infra/argocd/types.js';
import { code, oneLine, truncate } from '../../core/format.js';

/** How many names a message lists before "+N more". */
export const NAMES_SHOWN = 3;
/** Argo CD messages (operation, health) can be whole stack traces; keep findings readable in Slack. */
const QUOTE_MAX = 180;

export function nameList(names: string[]): string {
  const shown = names.slice(0, NAMES_SHOWN).join(', ');
  return names.length > NAMES_SHOWN ? `${shown}, +${names.length - NAMES_SHOWN} more` : shown;
}

export function joinAnd(items: string[]): string {
  return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}

export function unique<T>(items: T[]): T[] {
  return [...new Set(items)];
}

/**
 * Argo CD's own words, as a code span: its messages quote names themselves (`Deployment.apps "payments" is
 * invalid`), so double quotes around them would nest. Go error chains put the root cause last ("...: dial
 * tcp ...: connection refused"): a long one keeps its head and tail, each ending at a space.
 */
export function quote(text: string): string {
  return code(truncate(oneLine(text), QUOTE_MAX, 'ends'));
}

/** Operation phase/message, health, the first failing resource: what on-call needs to see why an app does not progress. */
export function appDetail(app: Application | undefined): string {
  if (!app) return 'not in the mirror';
  const parts: string[] = [];
  const op = app.status?.operationState;
  if (op) {
    const retried = op.retryCount ? ` after ${op.retryCount} ${op.retryCount === 1 ? 'retry' : 'retries'}` : '';
    // Argo CD's operation message wraps the failing resource's message ("one or more objects failed to apply, reason: ...");
    // the resource and its own message say the same more precisely.
    const failed = op.syncResult?.resources?.find((r) => r.status === 'SyncFailed' && r.message);
    if (failed) parts.push(`operation ${op.phase}${retried}: ${failed.kind}/${failed.name}: ${quote(failed.message!)}`);
    else parts.push(`operation ${op.phase}${retried}${op.message ? `: ${quote(op.message)}` : ''}`);
  } else if (app.operation) {
    parts.push('operation requested, not started yet');
  }
  const sync = app.status?.sync?.status;
  const health = app.status?.health?.status;
  const sick = app.status?.resources?.find((r) => r.health && r.health.status !== 'Healthy' && r.health.message);
  const state = [sync && `sync ${sync}`, health && `health ${health}`].filter(Boolean).join(', ');
  if (state) parts.push(`${state}${sick ? `: ${sick.kind}/${sick.name}: ${quote(sick.health!.message!)}` : ''}`);
  const cond = app.status?.conditions?.find((c) => /Error$/.test(c.type));
  if (cond) parts.push(`${cond.type}: ${quote(cond.message)}`);
  return parts.length ? parts.join('; ') : 'no operation or health details';
}
