import { isDeepStrictEqual } from 'node:util';
import type { RedisClient } from '../../infra/redis.js';
import type { ArgoApi } from '../../infra/argocd/api.js';
import type { Application, ApplicationSet, SyncPolicyAutomated } from '../../infra/argocd/types.js';
import type { FleetApp, FleetAppSet, FleetView } from '../../fleet/model.js';
import { keyBase } from '../../infra/redis.js';
import { hasRollouts } from '../../fleet/argo-rollouts.js';
import { isRollingSync } from '../../fleet/rollingsync.js';
import { RollcallError } from '../../core/errors.js';
import { isArgoError } from '../../infra/argocd/errors.js';
import { automatedEnabled } from '../../fleet/rollingsync.js';
import { PAUSED_AT, PAUSED_BY } from '../../fleet/pause.js';

/**
 * Pausing a rollout, which Argo CD cannot do (argo-cd#17974; argocd-facts A5, A8):
 * - an ApplicationSet with RollingSync is held by setting maxUpdate 0 on every step not yet
 *   complete (the documented "no apps updated"); switching to AllAtOnce or turning the flag
 *   off would release everything at once, so we never do that;
 * - an ApplicationSet without RollingSync stops reaching its apps with
 *   `applicationsSync: create-only`, and its apps' auto-sync is turned off;
 * - a plain Application gets auto-sync off (v3.1+ `automated.enabled: false`);
 * - a target managed by a parent app with auto-sync (app-of-apps) would be reverted from git,
 *   so the parent's auto-sync is paused too.
 * Every change is recorded with the value it replaced, so resume restores exactly that.
 */

export { PAUSED_AT, PAUSED_BY };
export const PAUSE_RUN = 'rollcall.io/pause-run';
const TRACKING_ID = 'argocd.argoproj.io/tracking-id';
const INSTANCE_LABEL = 'app.kubernetes.io/instance';

export type PauseField = 'rollingSync.maxUpdate' | 'syncPolicy.applicationsSync' | 'syncPolicy.automated';

export interface PauseChange {
  instance: string;
  kind: 'ApplicationSet' | 'Application';
  name: string;
  field: PauseField;
  /** The value before the pause (`null` = the field was absent). For maxUpdate: one entry per step. */
  before: unknown;
  /** The value the pause sets. */
  after: unknown;
  reason: string;
  /** Whether the object had no annotations at all before (so resume removes the map, not just keys). */
  hadAnnotations: boolean;
}

export interface PausePlan {
  target: string;
  instance: string;
  changes: PauseChange[];
  /** Apps with a running operation that `terminate=true` would stop. */
  runningOperations: string[];
  warnings: string[];
}

export class PauseError extends RollcallError {
  declare readonly code:
    'unknown_target' | 'nothing_to_pause' | 'already_paused' | 'not_paused' | 'conflict' | 'ambiguous_target';
  constructor(code: PauseError['code'], message: string) {
    super(code, message);
  }
}

function disabledAutomated(automated: SyncPolicyAutomated): SyncPolicyAutomated {
  return { ...automated, enabled: false };
}

/** Steps whose apps are not all Healthy in the appset's own status (all of them without status). */
export function incompleteSteps(appSet: ApplicationSet): number[] {
  const steps = appSet.spec.strategy?.rollingSync?.steps ?? [];
  const entries = appSet.status?.applicationStatus ?? [];
  return steps
    .map((_, i) => i + 1)
    .filter((step) => {
      const inStep = entries.filter((e) => e.step === String(step));
      return !entries.length || inStep.some((e) => e.status !== 'Healthy');
    });
}

/** The parent app of an object managed by Argo CD (annotation tracking, else label tracking). */
export function parentAppName(meta: {
  annotations?: Record<string, string>;
  labels?: Record<string, string>;
}): string | undefined {
  const tracking = meta.annotations?.[TRACKING_ID];
  if (tracking) return tracking.split(':')[0]?.split('_').pop();
  return meta.labels?.[INSTANCE_LABEL]?.split('_').pop();
}

function appSetIgnoresSyncPolicy(appSet: ApplicationSet): boolean {
  return (appSet.spec.ignoreApplicationDifferences ?? []).some((rule: any) =>
    (rule?.jsonPointers ?? []).some(
      (p: string) => p === '/spec/syncPolicy' || p === '/spec/syncPolicy/automated' || p === '/spec',
    ),
  );
}

function parentChanges(
  fleet: FleetView,
  instance: string,
  meta: ApplicationSet['metadata'],
  seen: Set<string>,
): { changes: PauseChange[]; warnings: string[] } {
  const changes: PauseChange[] = [];
  const warnings: string[] = [];
  let current = meta;
  for (let depth = 0; depth < 5; depth++) {
    const parentName = parentAppName(current);
    if (!parentName || seen.has(parentName)) break;
    const parent = fleet.appsNamed(parentName).find((a) => a.instance === instance);
    if (!parent) break;
    seen.add(parentName);
    const automated = parent.app.spec.syncPolicy?.automated;
    if (automatedEnabled(automated)) {
      warnings.push(
        `${current.name} is managed from git by the app ${parentName} (auto-sync${automated?.selfHeal ? ' with self-heal' : ''}): ` +
          `the change would be reverted from git, so ${parentName}'s auto-sync is paused too.`,
      );
      changes.push({
        instance,
        kind: 'Application',
        name: parentName,
        field: 'syncPolicy.automated',
        before: automated,
        after: disabledAutomated(automated!),
        reason: `parent of ${current.name}: its auto-sync would revert the pause from git`,
        hadAnnotations: !!parent.app.metadata.annotations,
      });
    }
    current = parent.app.metadata;
  }
  return { changes, warnings };
}

function planAppSet(fleet: FleetView, target: FleetAppSet): PausePlan {
  const appSet = target.appSet;
  const name = appSet.metadata.name;
  const changes: PauseChange[] = [];
  const warnings: string[] = [];
  const runningOperations: string[] = [];
  const hadAnnotations = !!appSet.metadata.annotations;
  if (appSet.metadata.annotations?.[PAUSED_BY])
    throw new PauseError(
      'already_paused',
      `ApplicationSet ${name} is already paused by ${appSet.metadata.annotations[PAUSED_BY]}: resume it first`,
    );
  const apps = fleet.appsOf(target.instance, name);
  if (isRollingSync(appSet)) {
    const steps = appSet.spec.strategy!.rollingSync!.steps!;
    const incomplete = new Set(incompleteSteps(appSet));
    if (!incomplete.size)
      throw new PauseError('nothing_to_pause', `the RollingSync rollout of ${name} is complete: nothing to hold`);
    const before = steps.map((s) => (s.maxUpdate === undefined ? null : s.maxUpdate));
    const after = steps.map((s, i) => (incomplete.has(i + 1) ? 0 : s.maxUpdate === undefined ? null : s.maxUpdate));
    changes.push({
      instance: target.instance,
      kind: 'ApplicationSet',
      name,
      field: 'rollingSync.maxUpdate',
      before,
      after,
      reason: `maxUpdate 0 on step${incomplete.size > 1 ? 's' : ''} ${[...incomplete].join(', ')}: no app there leaves Waiting (apps already Pending/Progressing finish their sync)`,
      hadAnnotations,
    });
    const byStatus = new Map((appSet.status?.applicationStatus ?? []).map((e) => [e.application, e.status]));
    for (const a of apps) {
      const phase = a.app.status?.operationState?.phase;
      if ((phase === 'Running' || a.app.operation) && byStatus.get(a.app.metadata.name) !== 'Healthy')
        runningOperations.push(a.app.metadata.name);
    }
  } else {
    changes.push({
      instance: target.instance,
      kind: 'ApplicationSet',
      name,
      field: 'syncPolicy.applicationsSync',
      before: appSet.spec.syncPolicy?.applicationsSync ?? null,
      after: 'create-only',
      reason: 'create-only: template changes stop reaching existing apps',
      hadAnnotations,
    });
    for (const a of apps) {
      const automated = a.app.spec.syncPolicy?.automated;
      if (!automatedEnabled(automated)) continue;
      changes.push({
        instance: target.instance,
        kind: 'Application',
        name: a.app.metadata.name,
        field: 'syncPolicy.automated',
        before: automated,
        after: disabledAutomated(automated!),
        reason: `auto-sync off (generated by ${name}, which create-only stops from reverting it)`,
        hadAnnotations: !!a.app.metadata.annotations,
      });
    }
    for (const a of apps)
      if (a.app.status?.operationState?.phase === 'Running') runningOperations.push(a.app.metadata.name);
  }
  const parents = parentChanges(fleet, target.instance, appSet.metadata, new Set());
  changes.push(...parents.changes);
  warnings.push(...parents.warnings);
  return { target: name, instance: target.instance, changes, runningOperations, warnings };
}

function planApps(fleet: FleetView, apps: FleetApp[], label: string): PausePlan {
  const instance = apps[0].instance;
  const changes: PauseChange[] = [];
  const warnings: string[] = [];
  const seen = new Set<string>();
  for (const a of apps) {
    if (a.appSet) {
      const owner = fleet.appSetsNamed(a.appSet).find((s) => s.instance === a.instance);
      if (owner && !appSetIgnoresSyncPolicy(owner.appSet)) {
        throw new PauseError(
          'conflict',
          `${a.app.metadata.name} is generated by the ApplicationSet ${a.appSet}, which would revert its auto-sync on the next reconcile ` +
            `(no ignoreApplicationDifferences on /spec/syncPolicy): pause the ApplicationSet instead — \`pause ${a.appSet}\`` +
            (hasRollouts(a.app)
              ? `. To pause its Argo Rollouts canary rather than its sync: \`pause ${label} kind=rollout\``
              : ''),
        );
      }
    }
    const automated = a.app.spec.syncPolicy?.automated;
    if (!automatedEnabled(automated)) continue;
    changes.push({
      instance: a.instance,
      kind: 'Application',
      name: a.app.metadata.name,
      field: 'syncPolicy.automated',
      before: automated,
      after: disabledAutomated(automated!),
      reason: 'auto-sync off',
      hadAnnotations: !!a.app.metadata.annotations,
    });
    const parents = parentChanges(fleet, a.instance, a.app.metadata, seen);
    changes.push(...parents.changes.filter((c) => !changes.some((x) => x.name === c.name && x.kind === c.kind)));
    warnings.push(...parents.warnings);
  }
  if (!changes.length)
    throw new PauseError('nothing_to_pause', `auto-sync is already off on ${label}: nothing to pause`);
  return { target: label, instance, changes, runningOperations: [], warnings };
}

/** What pausing `target` (an ApplicationSet name, or the apps a selector chose) would change. */
export function planPause(
  fleet: FleetView,
  target: { appSet?: FleetAppSet; apps?: FleetApp[]; label?: string },
): PausePlan {
  if (target.appSet) return planAppSet(fleet, target.appSet);
  if (target.apps?.length) {
    const instances = new Set(target.apps.map((a) => a.instance));
    if (instances.size > 1)
      throw new PauseError(
        'ambiguous_target',
        `the selection spans instances ${[...instances].join(', ')}: add instance=`,
      );
    return planApps(fleet, target.apps, target.label ?? `${target.apps.length} apps`);
  }
  throw new PauseError('unknown_target', 'nothing matches the pause target');
}

// ---------- applying ----------

function pauseAnnotations(by: string, at: string, runId: string): Record<string, string> {
  return { [PAUSED_BY]: by, [PAUSED_AT]: at, [PAUSE_RUN]: runId };
}

function setStepsMaxUpdate(appSet: ApplicationSet, values: unknown[]): void {
  const steps = appSet.spec.strategy!.rollingSync!.steps!;
  steps.forEach((step, i) => {
    const v = values[i];
    if (v === null || v === undefined) delete step.maxUpdate;
    else step.maxUpdate = v as number | string;
  });
}

function currentValue(obj: ApplicationSet | Application, field: PauseField): unknown {
  if (field === 'rollingSync.maxUpdate')
    return ((obj as ApplicationSet).spec.strategy?.rollingSync?.steps ?? []).map((s) =>
      s.maxUpdate === undefined ? null : s.maxUpdate,
    );
  if (field === 'syncPolicy.applicationsSync') return (obj as ApplicationSet).spec.syncPolicy?.applicationsSync ?? null;
  return (obj as Application).spec.syncPolicy?.automated ?? null;
}

const same = (a: unknown, b: unknown) => isDeepStrictEqual(a, b);

/** ApplicationSets change only by upserting the full object (there is no PATCH; argocd-facts B3). */
async function upsertAppSet(api: ArgoApi, name: string, mutate: (s: ApplicationSet) => void): Promise<ApplicationSet> {
  const fresh = await api.getApplicationSet(name);
  const next = structuredClone(fresh);
  delete next.status;
  mutate(next);
  return api.upsertApplicationSet(next);
}

function jsonPointer(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}

export interface PauseContext {
  argocd: ReadonlyMap<string, ArgoApi>;
  by: string;
  runId: string;
  now: Date;
}

function apiFor(argocd: ReadonlyMap<string, ArgoApi>, instance: string): ArgoApi {
  const api = argocd.get(instance);
  if (!api) throw new PauseError('unknown_target', `no Argo CD instance named ${instance}`);
  return api;
}

/** Applies one change and annotates the object. Re-applying an already-applied change is a no-op. */
export async function applyPauseChange(change: PauseChange, ctx: PauseContext): Promise<void> {
  const api = apiFor(ctx.argocd, change.instance);
  const annotations = pauseAnnotations(ctx.by, ctx.now.toISOString(), ctx.runId);
  if (change.kind === 'ApplicationSet') {
    await upsertAppSet(api, change.name, (s) => {
      if (change.field === 'rollingSync.maxUpdate') setStepsMaxUpdate(s, change.after as unknown[]);
      else s.spec.syncPolicy = { ...s.spec.syncPolicy, applicationsSync: change.after as string };
      s.metadata.annotations = { ...s.metadata.annotations, ...annotations };
    });
    return;
  }
  await api.patchApplication(
    { name: change.name },
    { metadata: { annotations }, spec: { syncPolicy: { automated: { enabled: false } } } },
    'merge',
  );
}

export async function terminateOperations(instance: string, apps: string[], ctx: PauseContext): Promise<string[]> {
  const api = apiFor(ctx.argocd, instance);
  const terminated: string[] = [];
  for (const name of apps) {
    try {
      await api.terminateOperation({ name });
      terminated.push(name);
    } catch (error) {
      if (!isArgoError(error, 'no_operation')) throw error;
    }
  }
  return terminated;
}

/** Re-reads every changed object: the changes that no longer hold (reverted by a controller or from git). */
export async function verifyPause(
  changes: PauseChange[],
  argocd: ReadonlyMap<string, ArgoApi>,
): Promise<PauseChange[]> {
  const reverted: PauseChange[] = [];
  for (const change of changes) {
    const api = apiFor(argocd, change.instance);
    const obj =
      change.kind === 'ApplicationSet'
        ? await api.getApplicationSet(change.name)
        : await api.getApplication({ name: change.name });
    if (!same(currentValue(obj, change.field), change.after)) reverted.push(change);
  }
  return reverted;
}

// ---------- resume ----------

/** Restores exactly the saved value, refusing when someone changed the paused field since. */
export async function resumeChange(
  change: PauseChange,
  argocd: ReadonlyMap<string, ArgoApi>,
): Promise<'restored' | 'already-restored'> {
  const api = apiFor(argocd, change.instance);
  const obj =
    change.kind === 'ApplicationSet'
      ? await api.getApplicationSet(change.name)
      : await api.getApplication({ name: change.name });
  const now = currentValue(obj, change.field);
  const annotated = !!obj.metadata.annotations?.[PAUSED_BY];
  if (same(now, change.before) && !annotated) return 'already-restored';
  if (!same(now, change.after) && !same(now, change.before)) {
    throw new PauseError(
      'conflict',
      `${change.kind} ${change.name} changed since the pause: ${change.field} is now ${JSON.stringify(now)} (the pause set ${JSON.stringify(change.after)}). ` +
        `rollcall will not overwrite that; restore ${JSON.stringify(change.before)} by hand if that is still right.`,
    );
  }
  if (change.kind === 'ApplicationSet') {
    await upsertAppSet(api, change.name, (s) => {
      if (change.field === 'rollingSync.maxUpdate') setStepsMaxUpdate(s, change.before as unknown[]);
      else if (change.before === null) {
        delete s.spec.syncPolicy!.applicationsSync;
        if (!Object.keys(s.spec.syncPolicy!).length) delete s.spec.syncPolicy;
      } else s.spec.syncPolicy = { ...s.spec.syncPolicy, applicationsSync: change.before as string };
      removeAnnotations(s.metadata, change.hadAnnotations);
    });
    return 'restored';
  }
  const ops: unknown[] = [
    change.before === null
      ? { op: 'remove', path: '/spec/syncPolicy/automated' }
      : { op: 'replace', path: '/spec/syncPolicy/automated', value: change.before },
  ];
  if (!change.hadAnnotations) ops.push({ op: 'remove', path: '/metadata/annotations' });
  else
    for (const key of [PAUSED_BY, PAUSED_AT, PAUSE_RUN])
      if (obj.metadata.annotations?.[key] !== undefined)
        ops.push({ op: 'remove', path: `/metadata/annotations/${jsonPointer(key)}` });
  await api.patchApplication({ name: change.name }, ops, 'json');
  return 'restored';
}

function removeAnnotations(meta: ApplicationSet['metadata'], hadAnnotations: boolean): void {
  if (!meta.annotations) return;
  for (const key of [PAUSED_BY, PAUSED_AT, PAUSE_RUN]) delete meta.annotations[key];
  if (!hadAnnotations && !Object.keys(meta.annotations).length) delete meta.annotations;
}

// ---------- what is paused ----------

export interface PauseRecord {
  target: string;
  instance: string;
  by: string;
  at: string;
  runId: string;
  changes: PauseChange[];
}

/** Paused targets in Redis, one hash field per target: `/argo paused` and resume read them. */
export class PauseStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  private get key() {
    return `${keyBase(this.prefix)}paused`;
  }

  async save(record: PauseRecord): Promise<void> {
    await this.redis.hset(this.key, `${record.instance}/${record.target}`, JSON.stringify(record));
  }

  async get(instance: string, target: string): Promise<PauseRecord | undefined> {
    const raw = await this.redis.hget(this.key, `${instance}/${target}`);
    return raw ? (JSON.parse(raw) as PauseRecord) : undefined;
  }

  async find(target: string): Promise<PauseRecord[]> {
    return (await this.list()).filter((r) => r.target === target);
  }

  async remove(instance: string, target: string): Promise<void> {
    await this.redis.hdel(this.key, `${instance}/${target}`);
  }

  async list(): Promise<PauseRecord[]> {
    const all = await this.redis.hgetall(this.key);
    return Object.values(all)
      .map((raw) => JSON.parse(raw) as PauseRecord)
      .sort((a, b) => a.at.localeCompare(b.at));
  }
}
