/**
 * step-held-by-missing-app: a step that cannot start because an app of an earlier step does not exist.
 * Argo CD builds the step lists from the generated (desired) Applications (progressive_sync.go
 * PerformProgressiveSyncs -> buildAppDependencyList over desiredApplications at v3.5.1), and getAppsToSync
 * releases the next step only when every app of the earlier steps exists ("if it is not created yet, we
 * cannot progress") and its entry is Healthy. An app that fails validation is never created
 * (applicationset_controller.go validateGeneratedApplications, ErrorOccurred/ApplicationValidationError),
 * so it holds every later step forever, while RolloutProgressing names the next step as if it ran.
 */
import type { Cluster } from '../../infra/argocd/types.js';
import { byText, plural } from '../../core/format.js';
import { matchingSteps, maxConcurrentFor } from '../rollingsync.js';
import type { AddFinding, AppSetContext } from './appset-context.js';
import { joinAnd, nameList, quote, unique } from './finding-text.js';
import type { RuleViews } from './rule.js';

/**
 * A template string rendered with one generator's parameters, as the ApplicationSet controller does
 * for the simple forms (fasttemplate `{{name}}`, Go template `{{.name}}`, `{{index .metadata.labels "x"}}`).
 * Undefined when it uses a parameter we do not have or any other template construct: we do not guess.
 */
function renderParams(template: string, param: (path: string) => string | undefined): string | undefined {
  let ok = true;
  const out = template.replace(/\{\{-?\s*(.*?)\s*-?\}\}/g, (_m, expr: string) => {
    const e = expr.trim();
    const index = /^index\s+\.([A-Za-z0-9_.]+)\s+"([^"]+)"$/.exec(e);
    const value = param(index ? `${index[1]}.${index[2]}` : e.replace(/^\./, ''));
    if (value === undefined) ok = false;
    return value ?? '';
  });
  return ok ? out : undefined;
}

/** Cluster generator parameters: name, nameNormalized, server, metadata labels and annotations. */
function clusterParam(cluster: Cluster): (path: string) => string | undefined {
  return (path) => {
    if (path === 'name') return cluster.name;
    if (path === 'nameNormalized') return cluster.name?.toLowerCase().replace(/[^a-z0-9.-]/g, '-');
    if (path === 'server') return cluster.server;
    if (path.startsWith('metadata.labels.')) return cluster.labels?.[path.slice('metadata.labels.'.length)];
    if (path.startsWith('metadata.annotations.'))
      return cluster.annotations?.[path.slice('metadata.annotations.'.length)];
    return undefined;
  };
}

/** List generator parameters: the element's keys (nested objects by dotted path), strings only. */
function elementParam(element: Record<string, unknown>): (path: string) => string | undefined {
  return (path) => {
    let value: unknown = element;
    for (const part of path.split('.'))
      value = value && typeof value === 'object' ? (value as Record<string, unknown>)[part] : undefined;
    return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean'
      ? String(value)
      : undefined;
  };
}

/** Whether a cluster generator's selector picks the cluster (matchLabels AND matchExpressions). */
function clusterSelected(
  selector:
    | {
        matchLabels?: Record<string, string>;
        matchExpressions?: { key: string; operator: string; values?: string[] }[];
      }
    | undefined,
  labels: Record<string, string>,
): boolean {
  for (const [k, v] of Object.entries(selector?.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of selector?.matchExpressions ?? []) {
    const has = Object.prototype.hasOwnProperty.call(labels, e.key);
    if (e.operator === 'In' && !(has && (e.values ?? []).includes(labels[e.key]))) return false;
    if (e.operator === 'NotIn' && has && (e.values ?? []).includes(labels[e.key])) return false;
    if (e.operator === 'Exists' && !has) return false;
    if (e.operator === 'DoesNotExist' && has) return false;
  }
  return true;
}

type ClusterSelector = Parameters<typeof clusterSelected>[0];

/**
 * Apps a single cluster or list generator would generate on this instance that do not exist, by name
 * and the steps their generated labels select; undefined when the generator or the name cannot be rendered.
 */
function missingGenerated(ctx: AppSetContext): { name: string; steps: number[] }[] | undefined {
  const generators = ctx.appSet.spec?.generators ?? [];
  const nameTemplate = ctx.appSet.spec?.template?.metadata?.name;
  if (generators.length !== 1 || typeof nameTemplate !== 'string') return undefined;
  const generator = generators[0] as { clusters?: { selector?: ClusterSelector }; list?: { elements?: unknown[] } };
  let params: ((path: string) => string | undefined)[];
  if (generator.clusters)
    params = ctx.clusters
      .filter((c) => clusterSelected(generator.clusters!.selector, c.labels ?? {}))
      .map(clusterParam);
  else if (Array.isArray(generator.list?.elements))
    params = generator.list.elements
      .filter((e): e is Record<string, unknown> => !!e && typeof e === 'object')
      .map(elementParam);
  else return undefined;
  const out: { name: string; steps: number[] }[] = [];
  for (const param of params) {
    const name = renderParams(nameTemplate, param);
    if (name === undefined) return undefined;
    if (ctx.appByName.has(name)) continue;
    const labels: Record<string, string> = {};
    for (const [k, v] of Object.entries(ctx.appSet.spec?.template?.metadata?.labels ?? {})) {
      const rendered = renderParams(String(v), param);
      if (rendered !== undefined) labels[k] = rendered;
    }
    out.push({ name, steps: matchingSteps(labels, ctx.steps) });
  }
  return out.sort((a, b) => byText(a.name, b.name));
}

function check(ctx: AppSetContext, add: AddFinding) {
  const step = ctx.currentStep;
  if (step === null || step < 2) return;
  const members = ctx.stepMembers[step - 1] ?? [];
  const waiting = members.filter((a) => ctx.entryByApp.get(a.name)?.status === 'Waiting');
  const inFlight = members.some((a) => ['Pending', 'Progressing'].includes(ctx.entryByApp.get(a.name)?.status ?? ''));
  if (!waiting.length || inFlight) return;
  if (maxConcurrentFor(ctx.steps[step - 1].maxUpdate, members.length) === 0) return;
  const policy = ctx.appSet.spec?.syncPolicy?.applicationsSync;
  if (policy === 'create-only' || policy === 'create-delete') return;
  const earlier = ctx.stepApps.slice(0, step - 1).flat();
  if (!earlier.every((a) => ctx.entryByApp.get(a.name)?.status === 'Healthy')) return;
  const error = ctx.appSet.status?.conditions?.find((c) => c.type === 'ErrorOccurred' && c.status === 'True');
  const missing = (missingGenerated(ctx) ?? []).filter((m) => m.steps.some((n) => n < step));
  const names = missing.map((m) => m.name);
  const where = missing.length
    ? `${plural(missing.length, 'Application')} the ApplicationSet generates for ${joinAnd(unique(missing.map((m) => `step ${m.steps[0]}`)))} ${missing.length === 1 ? 'does' : 'do'} not exist: ${nameList(names)}`
    : `an Application the ApplicationSet generates for an earlier step does not exist (every existing app of steps 1–${step - 1} is Healthy)`;
  const reason = error?.message
    ? ` Argo CD says why (${error.reason ?? 'ErrorOccurred'}): ${quote(error.message)}.`
    : '';
  add({
    rule: 'step-held-by-missing-app',
    severity: 'critical',
    message: `Step ${step} cannot start: its ${plural(waiting.length, 'app')} stay Waiting because ${where}.${reason}`,
    why:
      'RollingSync builds its step lists from the Applications the generators produce, not from the ones that exist, and releases a step only when every app of the earlier steps exists and is Healthy (progressive_sync.go getAppsToSync). ' +
      'An app that fails validation (bad destination, unknown project, duplicate name) is never created, so it holds every later step forever; ' +
      'Argo CD keeps no applicationStatus entry for it, and RolloutProgressing names the next step as if it were running.',
    fix:
      (error?.message
        ? 'Fix what the ErrorOccurred condition names (e.g. register the destination cluster or create the project) '
        : 'Find the app in the argocd-applicationset-controller log ("validation error found during application validation") and fix it ') +
      `so the ApplicationSet can create ${names.length ? names[0] : 'it'}; or change the generator or the steps so no step expects an app that cannot exist.`,
    step,
    apps: names.length ? names : waiting.map((a) => a.name),
  });
}

export const stepHeldByMissingAppRule: RuleViews = { appSet: { check } };
