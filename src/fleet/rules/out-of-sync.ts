/**
 * out-of-sync: an app OutOfSync (status.sync.status: its live state differs from git at its target
 * revision, controller/state.go CompareAppState at v3.5.1) for longer than the rule's threshold. Argo CD
 * records no time for a change of sync status (SyncStatus has none, pkg/apis/application/v1alpha1/types.go), so
 * the lifecycle counts the threshold from the first sighting (holdForMs). An app waiting its turn in a
 * RollingSync rollout is OutOfSync by design (stuck-step covers it), and so is one a sync window holds; one
 * rollcall's freeze holds is an expected stall. An app in no step (entry step -1) is not in a rollout:
 * RollingSync never syncs it (progressive_sync.go getAppStep and getAppsToSync at v3.5.1), so its OutOfSync
 * lasts until someone syncs it.
 */
import type { ApplicationSetApplicationStatus } from '../../infra/argocd/types.js';
import { absoluteTime, formatDuration } from '../../core/format.js';
import type { FleetApp, FleetView } from '../model.js';
import { describeFreeze, freezeHolding, type Freeze } from '../freeze.js';
import { isRollingSync } from '../rollingsync.js';
import {
  appConditions,
  byName,
  heldBySyncWindow,
  type AppHit,
  type ExpectedStall,
  type RuleInputs,
  type RuleResult,
  type RuleSettings,
} from './facts.js';
import type { RuleViews } from './rule.js';

/** The entry puts the app in a step (1, 2, ...); `-1` is no step. */
function inStep(entry: ApplicationSetApplicationStatus): boolean {
  return Number(entry.step) >= 1;
}

/**
 * The rollout has not reached the app yet: its RollingSync entry is Waiting or Pending in a step, and
 * RollingSync syncs it once its step is released (and maxUpdate has room). An app in no step waits for
 * nothing. What `status` calls waiting.
 */
export function waitingForStep(entry: ApplicationSetApplicationStatus | undefined): boolean {
  return !!entry && inStep(entry) && (entry.status === 'Waiting' || entry.status === 'Pending');
}

/** `instance/app` of every app whose RollingSync entry in a step is not Healthy: the rollout is still getting to it. */
export function rolloutMembers(fleet: FleetView): Set<string> {
  const out = new Set<string>();
  for (const s of fleet.appSets()) {
    if (!isRollingSync(s.appSet)) continue;
    for (const e of s.appSet.status?.applicationStatus ?? [])
      if (e.status !== 'Healthy' && inStep(e)) out.add(`${s.instance}/${e.application}`);
  }
  return out;
}

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
      detail: `OutOfSync${op?.finishedAt ? `; last sync ${op.phase} at ${absoluteTime(op.finishedAt)}` : ''}`,
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

export const outOfSyncRule: RuleViews = { alert: (inputs, settings) => outOfSyncAlerts(inputs, settings) };
