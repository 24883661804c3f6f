/**
 * out-of-sync: an app OutOfSync (status.sync.status: its live state differs from git at its target
 * revision) for longer than the rule's threshold. Argo CD records no time for a change of sync status, so
 * the lifecycle counts the threshold from the first sighting (holdForMs). An app waiting its turn in a
 * RollingSync rollout is OutOfSync by design (stuck-step covers it), and so is one a sync window holds; one
 * rollcall's freeze holds is an expected stall.
 */
import { formatDuration } from '../../core/format.js';
import type { FleetApp } from '../model.js';
import { describeFreeze, freezeHolding, type Freeze } from '../freeze.js';
import {
  appConditions,
  byName,
  heldBySyncWindow,
  rolloutMembers,
  type AppHit,
  type ExpectedStall,
  type RuleInputs,
  type RuleResult,
  type RuleSettings,
} from './facts.js';

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

export function outOfSyncAlerts(inputs: RuleInputs, settings: RuleSettings): RuleResult {
  const inRollout = rolloutMembers(inputs.fleet);
  const hits: AppHit[] = [];
  // Auto-sync under a deny window writes no operation: the app just stays OutOfSync. Under rollcall's freeze
  // that is what someone asked for.
  const frozen = new Map<Freeze, FleetApp[]>();
  for (const a of inputs.fleet.apps()) {
    const app = a.app;
    const op = app.status?.operationState;
    if (!outOfSyncOutsideRollout(a, inRollout)) continue;
    const freeze = freezeHolding(inputs.freezes, a.instance, app, inputs.now);
    if (freeze) {
      frozen.set(freeze, [...(frozen.get(freeze) ?? []), a]);
      continue;
    }
    hits.push({
      fleetApp: a,
      since: undefined,
      revision: app.status?.sync?.revision,
      detail: `OutOfSync${op?.finishedAt ? `; last sync ${op.phase} at ${op.finishedAt}` : ''}`,
    });
  }
  const holdForMs = settings.afterMs;
  const conditions = appConditions(
    'out-of-sync',
    hits,
    inputs.now,
    (owner, n) => `${n} app${n === 1 ? '' : 's'} of ${owner} OutOfSync for longer than ${formatDuration(holdForMs)}.`,
    {
      severity: 'warning',
      holdForMs,
    },
  );
  const expected: ExpectedStall[] = [...frozen].map(([freeze, apps]) => ({
    reason: 'sync-window',
    instance: freeze.instance,
    apps: apps.map((a) => a.app.metadata.name).sort(byName),
    message: `${apps.length} app(s) of project ${freeze.project} stay OutOfSync under ${describeFreeze(freeze)}: Argo CD syncs them when it is lifted (\`unfreeze ${freeze.target}\`).`,
  }));
  return { conditions, expected };
}
