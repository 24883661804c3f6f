/**
 * app-degraded: an app Degraded or Missing for longer than the rule's `after` (5m by default), whatever
 * synced it, or if nothing did. Argo CD's app health is the worst of its resources' health, set by the
 * application controller on every reconcile and timed by status.health.lastTransitionTime (down-apps.ts has
 * the v3.5.1 sources): a crash-looping pod is Degraded with or without a sync, and nothing in Argo CD reacts
 * to it (auto-sync and selfHeal act only on OutOfSync). `after` is how long it must have been down: pods
 * restarting during a rollout are Degraded for moments; a crash loop stays.
 *
 * Apps another rule explains better are left to it, so each down app is reported once: apps whose RollingSync
 * entry is Pending or Progressing (stuck-step: the rollout waits on their sync), apps with a failed sync
 * (sync-failed) or Degraded right after a successful one (degraded-after-sync, which names the revision);
 * in `diagnose` also an app of a finished step (degraded-after-healthy).
 */
import type { Application } from '../../infra/argocd/types.js';
import { formatDuration, oneLine, plural, truncate } from '../../core/format.js';
import type { FleetApp, FleetView } from '../model.js';
import { degradedMessages, isDown, pruneFix, type DownHealth } from './down-apps.js';
import {
  ALERT_QUOTE_MAX,
  appConditions,
  byName,
  groupBy,
  inFlightInRollout,
  ownerOf,
  revisionOf,
  type AlertCondition,
  type AppHit,
  type RuleInputs,
  type RuleSettings,
} from './facts.js';
import type { Finding } from './finding.js';
import type { AlertContext, RuleViews } from './rule.js';

/** The findings of these rules already explain the down apps they name (their revision, their step). */
const EXPLAINED_BY = ['stuck-step', 'degraded-after-sync', 'degraded-after-healthy'] as const;

/** An app that is down, as the rule judges it before its threshold. */
export interface DownApp {
  health: DownHealth;
  /** When its health turned (status.health.lastTransitionTime); undefined when Argo CD gives no time. */
  since?: string;
}

/** The rule's judgement of one app: Degraded or Missing, and since when. */
export function appDown(app: Application): DownApp | undefined {
  const health = app.status?.health;
  if (!isDown(health?.status)) return undefined;
  return { health: health.status, since: health.lastTransitionTime };
}

/** Down for at least `afterMs` (an app whose health carries no time counts at once; the lifecycle holds it). */
export function downLongEnough(down: DownApp, now: Date, afterMs: number): boolean {
  return !down.since || now.getTime() - Date.parse(down.since) >= afterMs;
}

/** What the app's own resources say, else its health message. */
function downReason(app: Application): string | undefined {
  const resource = app.status?.resources?.find((r) => isDown(r.health?.status) && r.health?.message);
  const message = resource
    ? `${resource.kind}/${resource.name}: ${resource.health!.message}`
    : app.status?.health?.message;
  return message ? truncate(oneLine(message), ALERT_QUOTE_MAX) : undefined;
}

interface DownHit extends AppHit {
  down: DownApp;
}

function hits(fleet: FleetView, now: Date, afterMs: number, skip: ReadonlySet<string>): DownHit[] {
  const inFlight = inFlightInRollout(fleet);
  const out: DownHit[] = [];
  for (const a of fleet.apps()) {
    const key = `${a.instance}/${a.app.metadata.name}`;
    const down = appDown(a.app);
    if (!down || skip.has(key) || inFlight.has(key) || !downLongEnough(down, now, afterMs)) continue;
    const reason = downReason(a.app);
    out.push({
      fleetApp: a,
      since: down.since,
      revision: revisionOf(a.app),
      detail: `${down.health}${reason ? `: ${reason}` : ''}`,
      down,
    });
  }
  return out;
}

/** "Degraded", "Missing", or both, for what the apps are. */
function healthWord(downs: DownApp[]): string {
  const kinds = new Set(downs.map((d) => d.health));
  return kinds.size === 1 ? [...kinds][0] : 'Degraded or Missing';
}

export function appDegradedAlerts(inputs: RuleInputs, settings: RuleSettings, seen: AlertContext): AlertCondition[] {
  const skip = new Set([
    ...seen.appsOf('stuck-step'),
    ...seen.appsOf('sync-failed'),
    ...seen.appsOf('degraded-after-sync'),
  ]);
  return appConditions(
    'app-degraded',
    hits(inputs.fleet, inputs.now, settings.afterMs, skip),
    inputs.now,
    (owner, n, _since, group) =>
      `${plural(n, 'app')} of ${owner} ${healthWord(group.map((h) => h.down))} for longer than ${formatDuration(settings.afterMs)}.`,
    // Argo CD gave no transition time for some: the lifecycle counts `after` from the first sighting.
    (group) => (group.some((h) => !h.since) ? { holdForMs: settings.afterMs } : {}),
  );
}

/** One finding per owner: the down apps, what their resources say, and the fix the fleet shows. */
export function diagnoseAppDegraded(
  fleet: FleetView,
  now: Date,
  afterMs: number,
  earlier: readonly Finding[],
): Finding[] {
  const skip = new Set<string>();
  for (const f of earlier)
    if ((EXPLAINED_BY as readonly string[]).includes(f.rule))
      for (const app of f.apps ?? []) skip.add(`${f.instance}/${app}`);
  const out: Finding[] = [];
  const groups = groupBy(
    hits(fleet, now, afterMs, skip),
    (h) => `${h.fleetApp.instance}|${h.fleetApp.appSet ?? `app:${h.fleetApp.app.metadata.name}`}`,
  );
  for (const group of groups.values()) {
    group.sort((a, b) => byName(a.fleetApp.app.metadata.name, b.fleetApp.app.metadata.name));
    out.push(finding(fleet, now, group));
  }
  return out;
}

function finding(fleet: FleetView, now: Date, group: DownHit[]): Finding {
  const apps: FleetApp[] = group.map((h) => h.fleetApp);
  const owner = ownerOf(apps[0]);
  const messages = degradedMessages(apps);
  const crashLoop = messages.some((m) => m.includes('CrashLoopBackOff'));
  const word = healthWord(group.map((h) => h.down));
  const times = group.map((h) => h.since).filter((t): t is string => !!t);
  const longest = times.length ? Math.max(...times.map((t) => now.getTime() - Date.parse(t))) : undefined;
  const missingOnly = word === 'Missing';
  const first = apps[0].app.metadata.name;
  return {
    rule: 'app-degraded',
    severity: 'critical',
    message:
      `${owner.appSet ? `${plural(apps.length, 'app')} of appset ${owner.appSet}` : `App ${first}`} ${crashLoop ? `${apps.length === 1 ? 'is' : 'are'} crash-looping` : `${apps.length === 1 ? 'is' : 'are'} ${word}`}` +
      `${longest !== undefined ? ` (down for ${formatDuration(longest)})` : ''}${messages.length ? `: ${messages.slice(0, 2).join('; ')}` : ''}.`,
    details: group.map((h) => `${h.fleetApp.app.metadata.name} (${h.fleetApp.cluster}): ${h.detail}`),
    why:
      "Argo CD's app health is the worst health of its resources: a pod waiting in CrashLoopBackOff or another back-off is Degraded, and an app none of whose resources exists is Missing. " +
      'Health does not depend on a sync, and nothing in Argo CD acts on it: auto-sync and selfHeal run only on OutOfSync, so a Synced app stays down until someone acts.',
    fix:
      pruneFix(fleet, apps, group[0].revision) ??
      (missingOnly
        ? `Its resources do not exist in the cluster: sync to create them (\`sync ${first}\`), and find out who deleted them (\`changes\`).`
        : `\`app ${first}\` shows the failing resources and their messages: fix what they name (an image, a config, a dependency), or roll back to the last Healthy revision (\`rollback ${first}\`).`),
    apps: apps.map((a) => a.app.metadata.name),
    ...(owner.appSet ? { appSet: owner.appSet } : {}),
    instance: apps[0].instance,
  };
}

export const appDegradedRule: RuleViews = {
  alert: (inputs, settings, seen) => appDegradedAlerts(inputs, settings, seen),
  diagnoseFleet: (fleet, now, settings, earlier) => diagnoseAppDegraded(fleet, now, settings.afterMs, earlier),
};
