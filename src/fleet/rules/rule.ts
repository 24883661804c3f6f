/**
 * The shape of a rule's views: what a rule file exports and the registry (index.ts) binds to its id. A
 * rule judges the fleet in up to three ways: as an alert (conditions now), per RollingSync appset (the
 * findings `diagnose APPSET` shows) and over the whole fleet (findings not tied to one appset).
 */
import type { AlertRuleName } from '../../infra/config/rule-catalog.js';
import type { FleetView } from '../model.js';
import type { AddFinding, AppSetContext, AppSetScope } from './appset-context.js';
import type { AlertCondition, RuleInputs, RuleResult, RuleSettings } from './facts.js';
import type { Finding } from './finding.js';

/** What the alert rules evaluated before this one found (stuck-step runs first, whether it alerts or not). */
export interface AlertContext {
  /** `instance/app` of the apps the rule has conditions for now; empty for a rule not evaluated (switched off). */
  appsOf(rule: AlertRuleName): ReadonlySet<string>;
}

/** A rule judged per ApplicationSet, over the context every appset rule shares. */
export interface AppSetCheck {
  /** The appsets it judges. @defaultValue 'rolling-sync' */
  scope?: AppSetScope;
  check(ctx: AppSetContext, add: AddFinding): void;
}

export interface RuleViews {
  /** The rule as an alert: its conditions now (and stalls that are meant to be there). */
  alert?: (inputs: RuleInputs, settings: RuleSettings, seen: AlertContext) => AlertCondition[] | RuleResult;
  /**
   * The rule as a diagnosis over the whole fleet, given what the appset rules and the fleet rules before it
   * found (`earlier`), so an app is explained once.
   */
  diagnoseFleet?: (fleet: FleetView, now: Date, settings: RuleSettings, earlier: readonly Finding[]) => Finding[];
  /** The rule as a diagnosis of one RollingSync ApplicationSet. */
  appSet?: AppSetCheck;
}
