/**
 * Alert rules: the registry's rules (src/fleet/rules/) that alert, evaluated over the fleet view (and a few
 * facts only Redis knows) into the problems that exist now, one per group. Grouping is by rule, instance,
 * ApplicationSet (or the app itself when no appset generated it), step and revision, so twelve auth-service
 * apps failing the same revision are one problem listing twelve apps. Whether a problem becomes an alert,
 * and when, is lifecycle.ts's job.
 */
import { ALERT_RULES, type AlertRuleName } from '../../infra/config/schema.js';
import { alertingRules } from '../../fleet/rules/index.js';
import {
  byName,
  ruleSettings,
  type AlertCondition,
  type RuleInputs,
  type RuleResult,
} from '../../fleet/rules/facts.js';

export {
  byName,
  groupBy,
  groupKey,
  heldBySyncWindow,
  oldest,
  ownerOf,
  pausedBy,
  revisionOf,
  ruleSettings,
  shortRevision,
  type AlertCondition,
  type AlertSeverity,
  type ExpectedStall,
  type RuleInputs,
  type RuleResult,
  type RuleSettings,
} from '../../fleet/rules/facts.js';

/**
 * When the problem an alert reports began to hurt, where that is not when the rule noticed it: a
 * stuck step from the moment its apps stopped progressing (the rollout transition to Pending or
 * Progressing that never advanced), not stuckAfter later. Other rules report the bad transition
 * itself, which the change log already marks.
 */
export function alertImpactSince(alert: Pick<AlertCondition, 'rule' | 'since'>): string | undefined {
  return alert.rule === 'stuck-step' ? alert.since : undefined;
}

/**
 * Every rule that is switched on, over the whole fleet. stuck-step runs first and always: the stalls it
 * finds expected are said whether or not it alerts, and apps in a stuck step are left out of sync-failed
 * (the stuck step is the problem on-call acts on, and its message names the failure).
 */
export function evaluateAlertRules(inputs: RuleInputs): RuleResult {
  const out: RuleResult = { conditions: [], expected: [] };
  const rules = alertingRules();
  const found = new Map<AlertRuleName, Set<string>>();
  const seen = { appsOf: (rule: AlertRuleName) => found.get(rule) ?? new Set<string>() };
  const ordered = [...rules.filter((r) => r.id === 'stuck-step'), ...rules.filter((r) => r.id !== 'stuck-step')];
  for (const { id, rule } of ordered) {
    const settings = ruleSettings(inputs.config, id);
    if (!settings.enabled && id !== 'stuck-step') continue;
    const answer = rule.alert!(inputs, settings, seen);
    const result = Array.isArray(answer) ? { conditions: answer, expected: [] } : answer;
    found.set(id, new Set(result.conditions.flatMap((c) => c.apps.map((app) => `${c.instance}/${app}`))));
    out.expected.push(...result.expected);
    if (settings.enabled) out.conditions.push(...result.conditions);
  }
  const rank = (rule: AlertRuleName) => ALERT_RULES.indexOf(rule);
  out.conditions.sort((a, b) => rank(a.rule) - rank(b.rule) || byName(a.key, b.key));
  return out;
}
