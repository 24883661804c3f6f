/**
 * instance-unreachable: rollcall's mirror of an Argo CD instance is stale (its list or watch fails), so
 * nothing rollcall says about that instance's apps is current. Argo CD's API server is the only source:
 * the mirror's `health()` says whether it is in sync with it and the last error.
 */
import { oneLine, truncate } from '../../core/format.js';
import { ALERT_QUOTE_MAX, groupKey, type AlertCondition, type RuleInputs, type RuleSettings } from './facts.js';
import type { RuleViews } from './rule.js';

/** An unreachable instance's own error, in full but on one line: it is the whole of the alert's detail. */
const ERROR_DETAIL_MAX = 400;

export function instanceUnreachableAlerts(inputs: RuleInputs, settings: RuleSettings): AlertCondition[] {
  const out: AlertCondition[] = [];
  for (const h of inputs.fleet.health()) {
    if (h.synced) continue;
    out.push({
      key: groupKey({ rule: 'instance-unreachable', instance: h.instance }),
      rule: 'instance-unreachable',
      severity: 'critical',
      instance: h.instance,
      apps: [],
      since: h.lastEventAt ?? inputs.now.toISOString(),
      summary: `Argo CD instance ${h.instance} is unreachable: rollcall's view of it is stale${h.error ? ` (${truncate(oneLine(h.error), ALERT_QUOTE_MAX)})` : ''}.`,
      details: h.error ? [truncate(oneLine(h.error), ERROR_DETAIL_MAX)] : [],
      holdForMs: settings.afterMs,
    });
  }
  return out;
}

export const instanceUnreachableRule: RuleViews = {
  alert: (inputs, settings) => instanceUnreachableAlerts(inputs, settings),
};
