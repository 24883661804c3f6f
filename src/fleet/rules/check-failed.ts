/**
 * check-failed: a metric check failing on apps rollcall watches — a guarded RollingSync rollout (`guard`) or the
 * watch after a bulk sync (`watch=`). Argo CD calls such apps Healthy: its health is the resources' status, not
 * what they serve (a canary answering 30% errors is Healthy to Argo CD). The watchers judge the checks through
 * Prometheus and keep the failures they see in Redis; this rule turns the ones in force into alerts, and they
 * resolve once the watcher clears them (the checks pass again, or the watch ends).
 */
import { groupKey, type AlertCondition, type CheckRegression } from './facts.js';
import type { RuleViews } from './rule.js';

export function checkFailedAlerts(regressions: readonly CheckRegression[]): AlertCondition[] {
  return regressions.map((r) => ({
    key: groupKey({ rule: 'check-failed', instance: r.instance, appSet: r.appSet, extra: r.key }),
    rule: 'check-failed',
    severity: 'critical',
    instance: r.instance,
    ...(r.appSet ? { appSet: r.appSet, rolloutTarget: r.appSet } : {}),
    apps: [...r.apps].sort(),
    since: r.since,
    summary: r.summary,
    details: r.details,
  }));
}

export const checkFailedRule: RuleViews = {
  alert: (inputs) => (inputs.regressions ? checkFailedAlerts(inputs.regressions) : []),
};
