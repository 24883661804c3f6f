import type {
  Application,
  ApplicationSet,
  ApplicationSetStatus,
  HealthStatusCode,
  SyncStatusCode,
} from '../infra/argocd/types.js';
import {
  advanceRollout,
  automatedEnabled,
  isRollingSync,
  isRollingSyncType,
  rollingSyncOperation,
  rolloutAppState,
} from '../fleet/rollingsync.js';
import { SIM_ANNOTATIONS } from './annotations.js';
import { operationInProgress } from './app-model.js';
import { appSetHealth, invalidGenerated, validationConditions } from './appset-status.js';
import type { InstanceStore, SimState } from './store.js';
import { workKey, type WorkQueue } from './work.js';

const APPSET_RESOURCES_CAP = 5000;

/**
 * The applicationset controller's status and progressive-sync side: validation conditions,
 * RollingSync advanced with the same pure state machine the bot reads it with
 * (src/fleet/rollingsync.ts), the status resources list and health. Generating Applications is not
 * simulated: the fixture holds them.
 */
export class AppSetController {
  /** Appsets driven as RollingSync so far (to notice them leaving it). */
  private readonly rollingSeen = new Set<string>();
  private writingStatus = false;

  constructor(
    private readonly state: SimState,
    private readonly work: WorkQueue,
    /** instance → appset → app names (from ownerReferences), kept by the controller. */
    private readonly owned: Map<string, Map<string, Set<string>>>,
    /** The appset controller's --enable-progressive-syncs. */
    private readonly progressiveSyncs: boolean,
  ) {}

  /** True while this controller writes an appset's status: that write is not a change to react to. */
  get writing(): boolean {
    return this.writingStatus;
  }

  /** One reconcile of the appset at `now`: conditions, RollingSync progress, resources, health, and the operations a released step asks for. */
  reconcile(instance: string, name: string, now: Date): void {
    const store = this.state.instance(instance);
    const appSet = store?.appSets.get(name);
    if (!store || !appSet) return;
    const apps = [...(this.owned.get(instance)?.get(name) ?? [])]
      .map((n) => store.apps.get(n))
      .filter((a): a is Application => !!a)
      .sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0));
    const status: ApplicationSetStatus = structuredClone(appSet.status ?? {});
    const progressive = this.progressiveSyncsOn(appSet);
    const rolling = isRollingSync(appSet);
    const rollingType = isRollingSyncType(appSet);
    let toSync: string[] = [];
    const invalid = invalidGenerated(appSet);
    status.conditions = validationConditions(status.conditions ?? [], invalid, now);
    if (!status.conditions.length) delete status.conditions;

    if (progressive && rollingType && !rolling) {
      // RollingSync without steps: PerformProgressiveSyncs still runs, writes no entries (the progress
      // pass keeps none without steps) and, with no step to wait on, reports the rollout complete.
      const advance = advanceRollout(appSet, [], now);
      delete status.applicationStatus;
      status.conditions = advance.conditions;
    } else if (progressive && rolling) {
      // RollingSync owns syncing: the appset controller keeps autosync off on what it generates (A5, v3.3+).
      for (const app of apps) {
        const automated = app.spec.syncPolicy?.automated;
        if (automated && automated.enabled !== false) {
          const next = structuredClone(app);
          next.spec.syncPolicy!.automated = { ...automated, enabled: false };
          store.putApp(next);
        }
      }
      const states = apps.map((a) => rolloutAppState(appSet, store.apps.get(a.metadata.name) ?? a));
      // The step lists come from every generated app, including those that failed validation and so
      // were never created: they hold later steps (getAppsToSync).
      const generated = [
        ...states.map((a) => ({ name: a.name, labels: a.labels })),
        ...invalid.map((i) => ({ name: i.name, labels: i.labels ?? {} })),
      ];
      const advance = advanceRollout(
        { ...appSet, status: { ...appSet.status, conditions: status.conditions } },
        states,
        now,
        generated,
      );
      status.applicationStatus = advance.applicationStatus;
      status.conditions = advance.conditions;
      // Argo CD re-asserts the operation on every Pending app of a released step until it starts.
      toSync = advance.pendingSync;
    } else {
      // The controller deletes progressive-sync entries when the feature is off or the strategy left RollingSync (A1).
      if (status.applicationStatus) delete status.applicationStatus;
      // Leaving RollingSync writes the template's automated policy back: autosync is on again and every
      // OutOfSync app syncs at once (A5: this is not a pause). Only on a change seen while running, so a
      // fixture is served as captured.
      if (this.rollingSeen.delete(workKey(instance, name))) this.restoreTemplateAutomated(store, appSet, apps);
    }
    if (progressive && rolling) this.rollingSeen.add(workKey(instance, name));
    // setApplicationSetStatusCondition evaluates RolloutProgressing on every write for an appset that is
    // not RollingSync, with no condition of that type to set: it is removed. (With the progressive-syncs
    // flag off but the strategy still RollingSync it is not evaluated, so it stays as it was.)
    if (!rollingType && status.conditions?.some((c) => c.type === 'RolloutProgressing')) {
      status.conditions = status.conditions.filter((c) => c.type !== 'RolloutProgressing');
      if (!status.conditions.length) delete status.conditions;
    }
    // SetConditions keeps them sorted by type.
    status.conditions?.sort((a, b) => (a.type < b.type ? -1 : a.type > b.type ? 1 : 0));

    if (rolling || appSet.status?.resources) {
      const resources = apps.map((a) => ({
        group: 'argoproj.io',
        version: 'v1alpha1',
        kind: 'Application',
        name: a.metadata.name,
        namespace: a.metadata.namespace ?? 'argocd',
        status: a.status?.sync?.status ?? ('Unknown' as SyncStatusCode),
        health: { status: a.status?.health?.status ?? ('Unknown' as HealthStatusCode) },
      }));
      status.resources = resources.slice(0, APPSET_RESOURCES_CAP);
      status.resourcesCount = resources.length;
    }
    if (rollingType || invalid.length || appSet.status?.health) status.health = appSetHealth(status);

    if (JSON.stringify(status) !== JSON.stringify(appSet.status ?? {})) {
      const next = structuredClone(appSet);
      next.status = status;
      this.writingStatus = true;
      try {
        store.putAppSet(next);
      } finally {
        this.writingStatus = false;
      }
    }

    // create-only / create-delete: the controller never updates existing apps, and RollingSync writes its
    // operation through that update path, so nothing new starts (A8 b).
    const policy = appSet.spec.syncPolicy?.applicationsSync;
    if (policy === 'create-only' || policy === 'create-delete') return;
    const current = store.appSets.get(name)!;
    const pendingSince = new Map(
      (current.status?.applicationStatus ?? []).map((e) => [e.application, e.lastTransitionTime]),
    );
    for (const appName of toSync) {
      const app = store.apps.get(appName);
      if (!app || operationInProgress(app)) continue;
      const started = Date.parse(app.status?.operationState?.startedAt ?? '');
      if (started > Date.parse(pendingSince.get(appName) ?? '')) continue;
      this.work.writeOperation(store, app, rollingSyncOperation(current));
    }
  }

  private progressiveSyncsOn(appSet: ApplicationSet): boolean {
    return this.progressiveSyncs && appSet.metadata.annotations?.[SIM_ANNOTATIONS.progressiveSyncs] !== 'disabled';
  }

  /** Whether this controller, not autosync, syncs the appset's apps. */
  drivesRollingSync(appSet: ApplicationSet): boolean {
    return this.progressiveSyncsOn(appSet) && isRollingSync(appSet);
  }

  private restoreTemplateAutomated(store: InstanceStore, appSet: ApplicationSet, apps: Application[]): void {
    const template = appSet.spec.template?.spec?.syncPolicy?.automated;
    if (!automatedEnabled(template)) return;
    for (const app of apps) {
      const current = store.apps.get(app.metadata.name) ?? app;
      if (automatedEnabled(current.spec.syncPolicy?.automated)) continue;
      const next = structuredClone(current);
      next.spec.syncPolicy = { ...next.spec.syncPolicy, automated: structuredClone(template) };
      store.putApp(next);
    }
  }
}
