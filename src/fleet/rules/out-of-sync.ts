/**
 * out-of-sync: an app OutOfSync (status.sync.status: its live state differs from git at its target
 * revision) for longer than the rule's threshold. Argo CD records no time for a change of sync status, so
 * the lifecycle counts the threshold from the first sighting (holdForMs). An app waiting its turn in a
 * RollingSync rollout is OutOfSync by design (stuck-step covers it), and so is one a sync window holds.
 */
import { absoluteTime, formatDuration } from '../../core/format.js';
import type { FleetApp } from '../model.js';
import {
  appConditions,
  heldBySyncWindow,
  rolloutMembers,
  type AlertCondition,
  type AppHit,
  type RuleInputs,
  type RuleSettings,
} from './facts.js';
import type { RuleViews } from './rule.js';

/**
 * The rule's judgement of one app, before its threshold: OutOfSync, neither waiting in a rollout
 * (`inRollout`: `rolloutMembers` of the fleet) nor held by a sync window.
 */
export function outOfSyncOutsideRollout(a: FleetApp, inRollout: ReadonlySet<string>): boolean {
  const app = a.app;
  return (
    app.status?.sync?.status === 'OutOfSync' &&
    !inRollout.has(`${a.instance}/${app.metadata.name}`) &&
    !heldBySyncWindow(app)
  );
}

export function outOfSyncAlerts(inputs: RuleInputs, settings: RuleSettings): AlertCondition[] {
  const inRollout = rolloutMembers(inputs.fleet);
  const hits: AppHit[] = [];
  for (const a of inputs.fleet.apps()) {
    const app = a.app;
    const op = app.status?.operationState;
    if (!outOfSyncOutsideRollout(a, inRollout)) continue;
    hits.push({
      fleetApp: a,
      since: undefined,
      revision: app.status?.sync?.revision,
      detail: `OutOfSync${op?.finishedAt ? `; last sync ${op.phase} at ${absoluteTime(op.finishedAt)}` : ''}`,
    });
  }
  const holdForMs = settings.afterMs;
  return appConditions(
    'out-of-sync',
    hits,
    inputs.now,
    (owner, n) => `${n} app${n === 1 ? '' : 's'} of ${owner} OutOfSync for longer than ${formatDuration(holdForMs)}.`,
    {
      severity: 'warning',
      holdForMs,
    },
  );
}

export const outOfSyncRule: RuleViews = { alert: (inputs, settings) => outOfSyncAlerts(inputs, settings) };
