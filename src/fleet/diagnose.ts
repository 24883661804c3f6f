/**
 * Diagnosis of ApplicationSet RollingSync: every appset rule of the registry (./rules/, one file per rule,
 * each with the Argo CD v3.5 behaviour behind it) run over one appset's shared context, its findings
 * sorted the way on-call reads them. Works on the mirror only (FleetView); it never calls Argo CD.
 */
import type { FleetAppSet, FleetView } from './model.js';
import type { Finding, Severity } from './rules/finding.js';
import { FLEET_RULES } from './rules/index.js';
import { appSetScope, buildContext, type AddFinding, type DiagnoseOptions } from './rules/appset-context.js';
import { RULE_IDS, type RuleId } from '../infra/config/rule-catalog.js';
import { byText } from '../core/format.js';

export type { Finding, Severity } from './rules/finding.js';
export { DEFAULT_STUCK_AFTER_MS, type DiagnoseOptions } from './rules/appset-context.js';

/** Stable rule ids, in display order within a severity: the registry's (config/rule-catalog.ts). */
export const RULES = RULE_IDS;

export type { RuleId };

/** Most severe first: the order findings are shown in. */
export const SEVERITY_RANK: Record<Severity, number> = { critical: 0, warning: 1, info: 2 };

/** Every ApplicationSet whose strategy type is RollingSync, on every instance. Each finding carries appSet + instance. */
export function diagnoseFleet(fleet: FleetView, opts: DiagnoseOptions & { now: Date }): Finding[] {
  const findings: Finding[] = [];
  for (const target of fleet.appSets()) {
    if (!appSetScope(target.appSet)) continue;
    findings.push(...diagnoseAppSet(fleet, target, opts));
  }
  return sortFleetFindings(findings);
}

/** Findings for one ApplicationSet, sorted by severity then step. Empty for an appset not using RollingSync. */
export function diagnoseAppSet(
  fleet: FleetView,
  target: FleetAppSet,
  opts: DiagnoseOptions & { now: Date },
): Finding[] {
  const scope = appSetScope(target.appSet);
  if (!scope) return [];
  const ctx = buildContext(fleet, target, opts);
  const out: Finding[] = [];
  const add: AddFinding = (f) => out.push({ ...f, appSet: ctx.name, instance: target.instance });
  for (const rule of FLEET_RULES)
    if (rule.appSet && (rule.appSet.scope ?? 'rolling-sync') === scope) rule.appSet.check(ctx, add);
  return sortFindings(out);
}

function ruleRank(rule: string): number {
  const i = (RULES as readonly string[]).indexOf(rule);
  return i === -1 ? RULES.length : i;
}

function compareWithinAppSet(a: Finding, b: Finding): number {
  return (
    SEVERITY_RANK[a.severity] - SEVERITY_RANK[b.severity] ||
    (a.step ?? 0) - (b.step ?? 0) ||
    ruleRank(a.rule) - ruleRank(b.rule)
  );
}

function sortFindings(findings: Finding[]): Finding[] {
  return findings.sort(compareWithinAppSet);
}

function sortFleetFindings(findings: Finding[]): Finding[] {
  return findings.sort(
    (a, b) =>
      SEVERITY_RANK[a.severity] - SEVERITY_RANK[b.severity] ||
      byText(a.instance ?? '', b.instance ?? '') ||
      byText(a.appSet ?? '', b.appSet ?? '') ||
      compareWithinAppSet(a, b),
  );
}
