import type {
  HealthStatusCode,
  RolloutCondition,
  RolloutPauseCondition,
  RolloutSpec,
  RolloutStatus,
} from '../../infra/argocd/types.js';
import { calculateRolloutPhase, currentSetWeight, rolloutResources } from '../../fleet/argo-rollouts.js';
import { SIM_ANNOTATIONS } from '../annotations.js';
import { parseGoDuration, rfc3339 } from '../clock.js';
import type { SimKubeCluster } from '../kube/index.js';
import { POD_HASH_LABEL, REVISION_ANNOTATION, revisionOf, type SimLiveObjects } from '../live-objects.js';
import type { InstanceStore, SimState } from '../store.js';
import { rolloutHealth } from './health.js';

type Obj = Record<string, any>;

export interface SimRolloutsOptions {
  /** From scaling a ReplicaSet up to its new pods being available, simulated. @defaultValue 10000 */
  podReadyMs?: number;
  /** How long a simulated duration lasts on the controller's clock (SimClock.span). @defaultValue as given */
  span?: (ms: number) => number;
}

/** What one reconcile decided for a Rollout, before replica counts and conditions are written. */
interface Decision {
  /** Desired replicas by ReplicaSet pod-template hash; ReplicaSets not named scale to 0. */
  replicas: Map<string, number>;
  stableRS: string;
  currentStepIndex?: number;
  pauseConditions: RolloutPauseCondition[];
  /** A pause condition was added in this reconcile (controllerPause turns true). */
  pauseAdded: boolean;
  abort: boolean;
  promoteFull: boolean;
  weights?: NonNullable<RolloutStatus['canary']>['weights'];
  blueGreen?: { activeSelector?: string; previewSelector?: string };
  /** The current step is one a progress deadline does not apply to (a pause, an analysis). */
  indefinite: boolean;
}

const DEFAULT_PROGRESS_DEADLINE_S = 600;
const HEALTH_ORDER: readonly HealthStatusCode[] = [
  'Healthy',
  'Suspended',
  'Progressing',
  'Missing',
  'Degraded',
  'Unknown',
];
// rand.SafeEncodeString's alphabet; it encodes the decimal digits of a 32-bit hash, so only 10 of them appear.
const SAFE = 'bcdfghjklmnpqrstvwxz2456789';

/**
 * A pod-template hash as Argo Rollouts makes one (hash.ComputePodTemplateHash: FNV-1a of the template, its
 * decimal digits through rand.SafeEncodeString), over the template's JSON here: stable, and shaped like the real.
 */
export function podTemplateHash(template: unknown): string {
  let h = 0x811c9dc5;
  for (const byte of Buffer.from(JSON.stringify(template ?? {}))) {
    h ^= byte;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return [...String(h)].map((d) => SAFE[d.charCodeAt(0) % SAFE.length]).join('');
}

/**
 * A small Argo Rollouts controller for the Rollouts on simulated clusters, driven by the simulator's clock. Each
 * pass reconciles every Rollout the way Argo Rollouts v1.x does at the level its status shows: a new pod template
 * gets a ReplicaSet and starts over at step 0; canary steps setWeight (done once the canary's pods are available)
 * and pause (indefinite until resumed, or for a duration); past the last step the canary becomes stable;
 * blue-green brings the preview up, waits for promotion (BlueGreenPause when autoPromotionEnabled is false) and
 * then switches the active service. abort, promoteFull, spec.paused, restartAt and a progress deadline act as they
 * do upstream; analysis and experiment steps pass at once. status.phase/message are CalculateRolloutPhase's.
 * Then each app's Rollout health is read with Argo CD's health.lua, as the app controller would on the change.
 */
export class SimRolloutsController {
  private readonly podReadyMs: number;
  private readonly span: (ms: number) => number;
  /** ReplicaSet uid → simulated ms of its last scale-up. */
  private readonly scaledAt = new Map<string, number>();
  /** Rollout uid → its status as last compared (canonical JSON), by the resourceVersion it had then. */
  private readonly lastStatus = new Map<string, { resourceVersion: string; status: string }>();
  /**
   * Rollout uid → the versions of it and its ReplicaSets when a reconcile last changed nothing, and when time alone
   * would next change something (pods ready, a timed pause over, the progress deadline): until then, or until
   * anyone writes them, a pass skips it.
   */
  private readonly idle = new Map<string, { versions: string; wakeAt: number }>();
  /** An app changed since the last look at Argo CD's side (a sync may have rewritten its health). */
  private appsChanged = true;
  private readonly detach: (() => void)[] = [];

  constructor(
    private readonly live: SimLiveObjects,
    private readonly state: SimState,
    opts: SimRolloutsOptions = {},
  ) {
    this.span = opts.span ?? ((ms) => ms);
    this.podReadyMs = this.span(opts.podReadyMs ?? 10_000);
    for (const store of state.instances.values()) {
      const onApp = () => void (this.appsChanged = true);
      store.events.on('app', onApp);
      this.detach.push(() => store.events.off('app', onApp));
    }
  }

  stop(): void {
    for (const d of this.detach) d();
    this.detach.length = 0;
  }

  reconcile(now: Date): void {
    let changed = false;
    let rollouts = 0;
    for (const cluster of this.live.clusters())
      for (const ro of cluster.list('Rollout')) {
        rollouts++;
        if (this.reconcileRollout(cluster, ro, now)) changed = true;
      }
    // Without a Rollout anywhere there is nothing to tell the apps (a 10,000-app fleet is not scanned for it).
    if (!rollouts || (!changed && !this.appsChanged)) return;
    this.appsChanged = false;
    for (const store of this.state.instances.values()) this.syncApps(store, now);
  }

  /** One reconcile of one Rollout; true when it wrote the Rollout or one of its ReplicaSets. */
  private reconcileRollout(cluster: SimKubeCluster, ro: Obj, now: Date): boolean {
    const t = now.getTime();
    const sets = this.live.replicaSetsOf(cluster, ro);
    const versions = () => [ro.metadata.resourceVersion, ...sets.map((rs) => rs.metadata.resourceVersion)].join(',');
    const idle = this.idle.get(ro.metadata.uid);
    if (idle && idle.versions === versions() && t < idle.wakeAt) return false;
    const before = versions();
    const spec = ro.spec as RolloutSpec;
    const prev = (ro.status ?? {}) as RolloutStatus;
    const hash = podTemplateHash(spec.template);
    for (const rs of sets) this.settle(cluster, rs, t);
    let current = sets.find((rs) => rs.metadata.labels?.[POD_HASH_LABEL] === hash);
    if (!current) {
      current = this.createReplicaSet(cluster, ro, hash, sets);
      sets.push(current);
    }
    const revision = String(revisionOf(current));
    const revisionChanged = ro.metadata.annotations?.[REVISION_ANNOTATION] !== revision;
    if (revisionChanged) ro.metadata.annotations = { ...ro.metadata.annotations, [REVISION_ANNOTATION]: revision };
    const base = this.baseState(spec, prev, hash);
    const decision = spec.strategy?.blueGreen
      ? this.blueGreen(spec, prev, base, hash, sets, t)
      : this.canary(spec, prev, base, hash, sets, t, now);
    for (const rs of sets) this.scale(cluster, rs, decision.replicas.get(rs.metadata.labels?.[POD_HASH_LABEL]) ?? 0, t);
    const status = canonical(this.statusOf(ro, prev, decision, hash, sets, now));
    const seen = this.lastStatus.get(ro.metadata.uid);
    const was = seen && seen.resourceVersion === ro.metadata.resourceVersion ? seen.status : canonical(prev);
    if (status !== was || revisionChanged) {
      ro.status = JSON.parse(status) as RolloutStatus;
      cluster.update(ro);
    }
    this.lastStatus.set(ro.metadata.uid, { resourceVersion: ro.metadata.resourceVersion, status });
    const wrote = versions() !== before;
    // A reconcile that wrote something is followed by another one, as Argo Rollouts requeues after a change.
    if (wrote) this.idle.delete(ro.metadata.uid);
    else this.idle.set(ro.metadata.uid, { versions: before, wakeAt: this.wakeAt(ro, decision, sets) });
    return wrote;
  }

  /** When time alone changes this Rollout next: pods becoming ready, a timed pause ending, the progress deadline. */
  private wakeAt(ro: Obj, d: Decision, sets: Obj[]): number {
    const spec = ro.spec as RolloutSpec;
    const status = ro.status as RolloutStatus;
    const times: number[] = [];
    for (const rs of sets)
      if (
        (rs.status?.availableReplicas ?? 0) < (rs.spec?.replicas ?? 0) &&
        rs.metadata.annotations?.[SIM_ANNOTATIONS.crashLoop] !== 'true'
      )
        times.push((this.scaledAt.get(rs.metadata.uid) ?? 0) + this.podReadyMs);
    const step = spec.strategy?.canary?.steps?.[status.currentStepIndex ?? 0];
    for (const c of status.pauseConditions ?? []) {
      const start = Date.parse(c.startTime);
      const stepMs = c.reason === 'CanaryPauseStep' ? pauseDurationMs(step?.pause?.duration) : undefined;
      const autoSeconds = spec.strategy?.blueGreen?.autoPromotionSeconds;
      if (stepMs !== undefined) times.push(start + this.span(stepMs) + 1000);
      if (c.reason === 'BlueGreenPause' && autoSeconds) times.push(start + this.span(autoSeconds * 1000) + 1000);
    }
    const progressing = status.conditions?.find((c) => c.type === 'Progressing');
    if (progressing?.reason === 'ReplicaSetUpdated' && !d.indefinite)
      times.push(
        Date.parse(progressing.lastUpdateTime ?? '') +
          this.span((spec.progressDeadlineSeconds ?? DEFAULT_PROGRESS_DEADLINE_S) * 1000) +
          1000,
      );
    if (spec.restartAt && spec.restartAt !== status.restartedAt) times.push(Date.parse(spec.restartAt));
    return Math.min(Infinity, ...times.filter((x) => Number.isFinite(x)));
  }

  /** calculateBaseStatus and resetRolloutStatus: a changed pod template starts over; promoteFull lasts until stable. */
  private baseState(spec: RolloutSpec, prev: RolloutStatus, hash: string): Decision {
    const steps = spec.strategy?.canary?.steps ?? [];
    // A first deploy has nothing to compare with: its ReplicaSet is stable at once.
    const stableRS = prev.stableRS || hash;
    const changed = prev.currentPodHash !== undefined && prev.currentPodHash !== hash;
    const atEnd = stableRS === hash;
    return {
      replicas: new Map(),
      stableRS,
      currentStepIndex: steps.length
        ? changed
          ? atEnd
            ? steps.length
            : 0
          : (prev.currentStepIndex ?? 0)
        : undefined,
      pauseConditions: changed ? [] : [...(prev.pauseConditions ?? [])],
      pauseAdded: false,
      abort: changed ? false : Boolean(prev.abort),
      promoteFull: !changed && hash !== stableRS && Boolean(prev.promoteFull),
      indefinite: false,
    };
  }

  private canary(
    spec: RolloutSpec,
    prev: RolloutStatus,
    d: Decision,
    hash: string,
    sets: Obj[],
    t: number,
    now: Date,
  ): Decision {
    const canary = spec.strategy!.canary!;
    const steps = canary.steps ?? [];
    const replicas = spec.replicas ?? 1;
    const routed = Boolean(canary.trafficRouting);
    const current = sets.find((rs) => rs.metadata.labels?.[POD_HASH_LABEL] === hash)!;
    const weightsOf = (canaryWeight: number, stableHash: string) =>
      routed
        ? {
            canary: {
              weight: canaryWeight,
              ...(canary.canaryService ? { serviceName: canary.canaryService } : {}),
              podTemplateHash: hash,
            },
            stable: {
              weight: 100 - canaryWeight,
              ...(canary.stableService ? { serviceName: canary.stableService } : {}),
              podTemplateHash: stableHash,
            },
          }
        : undefined;
    if (d.promoteFull) {
      d.pauseConditions = [];
      d.abort = false;
      if (steps.length) d.currentStepIndex = steps.length;
    }
    if (d.stableRS === hash) {
      d.replicas.set(hash, replicas);
      if (steps.length) d.currentStepIndex = steps.length;
      d.pauseConditions = [];
      d.weights = weightsOf(0, hash);
      return d;
    }
    if (d.abort) {
      // The stable ReplicaSet takes all traffic and pods back; the canary scales down and waits for a retry.
      if (steps.length) d.currentStepIndex = 0;
      d.pauseConditions = [];
      d.replicas.set(d.stableRS, replicas);
      d.weights = weightsOf(0, d.stableRS);
      return d;
    }
    const index = d.currentStepIndex ?? steps.length;
    const step = steps[index];
    const setWeight = currentSetWeight({ spec, status: { ...prev, abort: false, currentStepIndex: index } });
    const canaryWanted = step ? Math.ceil((replicas * setWeight) / 100) : replicas;
    const available = current.status?.availableReplicas ?? 0;
    const atDesired = (current.spec?.replicas ?? 0) === canaryWanted && available >= canaryWanted;
    d.replicas.set(hash, canaryWanted);
    // With traffic routing the stable ReplicaSet keeps every pod until promotion; a basic canary shares them.
    d.replicas.set(d.stableRS, routed ? replicas : Math.max(replicas - canaryWanted, 0));
    // Traffic never goes to a canary with no available pod (rollout/trafficrouting.go).
    const prevWeight = prev.canary?.weights?.canary.weight ?? 0;
    d.weights = weightsOf(available === 0 ? 0 : atDesired ? setWeight : prevWeight, d.stableRS);
    if (!step) {
      if (atDesired) {
        d.stableRS = hash;
        d.replicas = new Map([[hash, replicas]]);
        d.weights = weightsOf(0, hash);
      }
      return d;
    }
    d.indefinite =
      Boolean(step.pause && step.pause.duration === undefined) || (!step.pause && step.setWeight === undefined);
    if (spec.paused) return d;
    if (typeof step.setWeight === 'number') {
      if (atDesired) d.currentStepIndex = index + 1;
    } else if (step.pause) {
      const held = d.pauseConditions.find((c) => c.reason === 'CanaryPauseStep');
      const durationMs = pauseDurationMs(step.pause.duration);
      const resumed = Boolean(prev.controllerPause) && !held;
      const waited = durationMs !== undefined && held && t > Date.parse(held.startTime) + this.span(durationMs);
      if (resumed || waited) {
        d.currentStepIndex = index + 1;
        d.pauseConditions = d.pauseConditions.filter((c) => c.reason !== 'CanaryPauseStep');
      } else if (!held) {
        d.pauseConditions.push({ reason: 'CanaryPauseStep', startTime: rfc3339(now) });
        d.pauseAdded = true;
      }
    } else d.currentStepIndex = index + 1;
    return d;
  }

  private blueGreen(
    spec: RolloutSpec,
    prev: RolloutStatus,
    d: Decision,
    hash: string,
    sets: Obj[],
    t: number,
  ): Decision {
    const bg = spec.strategy!.blueGreen!;
    const replicas = spec.replicas ?? 1;
    const current = sets.find((rs) => rs.metadata.labels?.[POD_HASH_LABEL] === hash)!;
    let active = prev.blueGreen?.activeSelector || d.stableRS;
    if (d.promoteFull) {
      d.pauseConditions = [];
      d.abort = false;
    }
    if (d.stableRS === hash) {
      d.replicas.set(hash, replicas);
      d.pauseConditions = [];
      d.blueGreen = { activeSelector: hash, previewSelector: hash };
      return d;
    }
    d.replicas.set(d.stableRS, replicas);
    if (d.abort) {
      d.pauseConditions = [];
      d.blueGreen = { activeSelector: d.stableRS, previewSelector: '' };
      return d;
    }
    d.replicas.set(hash, replicas);
    const ready = (current.status?.availableReplicas ?? 0) >= replicas;
    if (active !== hash && ready && !spec.paused) {
      const held = d.pauseConditions.find((c) => c.reason === 'BlueGreenPause');
      let promoted: boolean;
      if (d.promoteFull) promoted = true;
      else if (bg.autoPromotionEnabled === false) promoted = Boolean(prev.controllerPause) && !held;
      else {
        const seconds = bg.autoPromotionSeconds ?? 0;
        promoted = seconds === 0 || (!!held && t > Date.parse(held.startTime) + this.span(seconds * 1000));
      }
      if (promoted) {
        active = hash;
        d.pauseConditions = d.pauseConditions.filter((c) => c.reason !== 'BlueGreenPause');
      } else if (!held) {
        d.pauseConditions.push({ reason: 'BlueGreenPause', startTime: rfc3339(t) });
        d.pauseAdded = true;
      }
    }
    // The reconcile after the cutover marks the new ReplicaSet stable (no post-promotion analysis here).
    if (active === hash && prev.blueGreen?.activeSelector === hash) {
      d.stableRS = hash;
      d.replicas = new Map([[hash, replicas]]);
    }
    d.indefinite = d.pauseConditions.length > 0;
    d.blueGreen = { activeSelector: active, previewSelector: hash };
    return d;
  }

  /** The status Argo Rollouts would persist: replica counts, pause and abort fields, conditions, then the phase. */
  private statusOf(ro: Obj, prev: RolloutStatus, d: Decision, hash: string, sets: Obj[], now: Date): RolloutStatus {
    const spec = ro.spec as RolloutSpec;
    const sum = (f: (rs: Obj) => number) => sets.reduce((n, rs) => n + f(rs), 0);
    const current = sets.find((rs) => rs.metadata.labels?.[POD_HASH_LABEL] === hash)!;
    const paused = d.pauseConditions.length > 0;
    const counts = {
      replicas: sum((rs) => rs.status?.replicas ?? 0),
      updatedReplicas: current.status?.replicas ?? 0,
      readyReplicas: sum((rs) => rs.status?.readyReplicas ?? 0),
      availableReplicas: sum((rs) => rs.status?.availableReplicas ?? 0),
    };
    const restartAt = spec.restartAt && Date.parse(spec.restartAt) <= now.getTime() ? spec.restartAt : prev.restartedAt;
    const status: RolloutStatus = {
      ...(d.abort ? { abort: true, abortedAt: prev.abortedAt ?? rfc3339(now) } : {}),
      ...(paused
        ? { pauseConditions: d.pauseConditions, controllerPause: Boolean(prev.controllerPause) || d.pauseAdded }
        : {}),
      currentPodHash: hash,
      ...counts,
      HPAReplicas: counts.replicas,
      ...(d.currentStepIndex !== undefined ? { currentStepIndex: d.currentStepIndex } : {}),
      observedGeneration: String(ro.metadata.generation ?? 1),
      conditions: this.conditions(ro, prev, d, hash, counts, now),
      canary: d.weights ? { weights: d.weights } : {},
      blueGreen: d.blueGreen ?? {},
      selector: Object.entries(current.spec?.selector?.matchLabels ?? {})
        .filter(([k]) => k !== POD_HASH_LABEL)
        .map(([k, v]) => `${k}=${String(v)}`)
        .join(','),
      stableRS: d.stableRS,
      ...(restartAt ? { restartedAt: restartAt } : {}),
      ...(d.promoteFull && d.stableRS !== hash ? { promoteFull: true } : {}),
    };
    const { phase, message } = calculateRolloutPhase(spec, status);
    return { ...status, phase, ...(message ? { message } : {}) };
  }

  /** calculateRolloutConditions: Progressing (with the progress deadline), Available, Completed, Paused. */
  private conditions(
    ro: Obj,
    prev: RolloutStatus,
    d: Decision,
    hash: string,
    counts: { replicas: number; updatedReplicas: number; availableReplicas: number },
    now: Date,
  ): RolloutCondition[] {
    const spec = ro.spec as RolloutSpec;
    const at = rfc3339(now);
    const replicas = spec.replicas ?? 1;
    const rsName = `${ro.metadata.name}-${hash}`;
    const before = (type: string) => prev.conditions?.find((c) => c.type === type);
    const made = (
      type: string,
      status: string,
      reason: string,
      message: string,
      progressed = false,
    ): RolloutCondition => {
      const old = before(type);
      const same = old?.status === status && old?.reason === reason;
      return {
        type,
        status,
        reason,
        message,
        lastUpdateTime: same && !progressed && old.lastUpdateTime ? old.lastUpdateTime : at,
        lastTransitionTime: same && old.lastTransitionTime ? old.lastTransitionTime : at,
      };
    };
    const paused = d.pauseConditions.length > 0 || Boolean(spec.paused);
    const complete = d.stableRS === hash && counts.availableReplicas >= replicas && counts.updatedReplicas >= replicas;
    const oldProgress = before('Progressing');
    let progressing: RolloutCondition;
    if (d.abort)
      progressing = made(
        'Progressing',
        'False',
        'RolloutAborted',
        `Rollout aborted update to revision ${ro.metadata.annotations?.[REVISION_ANNOTATION] ?? ''}`,
      );
    else if (paused) progressing = made('Progressing', 'Unknown', 'RolloutPaused', 'Rollout is paused');
    else if (complete)
      progressing = made(
        'Progressing',
        'True',
        'NewReplicaSetAvailable',
        `ReplicaSet "${rsName}" has successfully progressed.`,
      );
    else {
      const progressed =
        !oldProgress ||
        ['RolloutPaused', 'RolloutAborted', 'NewReplicaSetAvailable'].includes(oldProgress.reason ?? '') ||
        counts.replicas !== (prev.replicas ?? 0) ||
        counts.updatedReplicas !== (prev.updatedReplicas ?? 0) ||
        counts.availableReplicas !== (prev.availableReplicas ?? 0) ||
        d.currentStepIndex !== prev.currentStepIndex;
      const deadlineMs = this.span((spec.progressDeadlineSeconds ?? DEFAULT_PROGRESS_DEADLINE_S) * 1000);
      const since = Date.parse(oldProgress?.lastUpdateTime ?? at);
      if (progressed)
        progressing = made('Progressing', 'True', 'ReplicaSetUpdated', `ReplicaSet "${rsName}" is progressing.`, true);
      else if (
        oldProgress!.reason === 'ProgressDeadlineExceeded' ||
        (!d.indefinite && now.getTime() - since > deadlineMs)
      )
        progressing = made(
          'Progressing',
          'False',
          'ProgressDeadlineExceeded',
          `ReplicaSet "${rsName}" has timed out progressing.`,
        );
      else progressing = oldProgress!;
    }
    const available = counts.availableReplicas >= replicas;
    return [
      made(
        'Available',
        available ? 'True' : 'False',
        'AvailableReason',
        available ? 'Rollout has minimum availability' : 'Rollout does not have minimum availability',
      ),
      made('Completed', d.stableRS === hash ? 'True' : 'False', 'RolloutCompleted', 'RolloutCompleted'),
      progressing,
      ...(paused ? [made('Paused', 'True', 'RolloutPaused', 'Rollout is paused')] : []),
    ];
  }

  // ---------- ReplicaSets and their pods ----------

  private createReplicaSet(cluster: SimKubeCluster, ro: Obj, hash: string, sets: Obj[]): Obj {
    const revision = sets.reduce((n, rs) => Math.max(n, revisionOf(rs)), 0) + 1;
    const template = structuredClone(ro.spec.template ?? {});
    template.metadata = { ...template.metadata, labels: { ...template.metadata?.labels, [POD_HASH_LABEL]: hash } };
    return cluster.update({
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      metadata: {
        name: `${ro.metadata.name}-${hash}`,
        namespace: ro.metadata.namespace,
        labels: { ...ro.spec.template?.metadata?.labels, [POD_HASH_LABEL]: hash },
        annotations: { [REVISION_ANNOTATION]: String(revision) },
        ownerReferences: [
          {
            apiVersion: 'argoproj.io/v1alpha1',
            kind: 'Rollout',
            name: ro.metadata.name,
            uid: ro.metadata.uid,
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
      },
      spec: {
        replicas: 0,
        selector: { matchLabels: { ...ro.spec.selector?.matchLabels, [POD_HASH_LABEL]: hash } },
        template,
      },
      status: { replicas: 0 },
    });
  }

  /** Pods scaled up become available podReadyMs later; a crash-looping ReplicaSet's never do. */
  private settle(cluster: SimKubeCluster, rs: Obj, t: number): void {
    const desired = rs.spec?.replicas ?? 0;
    const crashing = rs.metadata.annotations?.[SIM_ANNOTATIONS.crashLoop] === 'true';
    let available = Math.min(rs.status?.availableReplicas ?? 0, desired);
    if (!crashing && available < desired && t >= (this.scaledAt.get(rs.metadata.uid) ?? 0) + this.podReadyMs)
      available = desired;
    if (crashing) available = 0;
    const generation = rs.metadata.generation ?? 1;
    const s = rs.status ?? {};
    if (
      s.replicas === desired &&
      s.fullyLabeledReplicas === desired &&
      s.readyReplicas === available &&
      s.availableReplicas === available &&
      s.observedGeneration === generation
    )
      return;
    rs.status = {
      replicas: desired,
      fullyLabeledReplicas: desired,
      readyReplicas: available,
      availableReplicas: available,
      observedGeneration: generation,
    };
    cluster.update(rs);
  }

  private scale(cluster: SimKubeCluster, rs: Obj, replicas: number, t: number): void {
    const before = rs.spec?.replicas ?? 0;
    if (before === replicas && rs.status?.replicas === replicas) return;
    if (replicas > before) this.scaledAt.set(rs.metadata.uid, t);
    rs.spec = { ...rs.spec, replicas };
    const available = Math.min(rs.status?.availableReplicas ?? 0, replicas);
    rs.status = {
      ...rs.status,
      replicas,
      fullyLabeledReplicas: replicas,
      readyReplicas: available,
      availableReplicas: available,
    };
    cluster.update(rs);
  }

  // ---------- Argo CD's view: resource health and the app's ----------

  /**
   * What Argo CD's app controller makes of the Rollouts it watches: each Rollout resource's health by health.lua,
   * the app's as the worst of its resources', and the images its pods run in status.summary. Apps whose cluster
   * Argo CD cannot reach (a ComparisonError) keep what the fault gave them.
   */
  private syncApps(store: InstanceStore, now: Date): void {
    for (const app of store.apps.values()) {
      if (!rolloutResources(app).length || app.status?.conditions?.some((c) => c.type === 'ComparisonError')) continue;
      const cluster = this.live.clusterOf(store, app);
      if (!cluster) continue;
      const healths = new Map<number, { status: HealthStatusCode; message?: string }>();
      const images = new Set<string>();
      (app.status?.resources ?? []).forEach((r, i) => {
        if (r.kind !== 'Rollout' || r.group !== 'argoproj.io') return;
        const ro = this.live.get(store, app, r);
        if (!ro) return;
        const health = rolloutHealth(ro);
        healths.set(i, health.message ? { status: health.status, message: health.message } : { status: health.status });
        for (const rs of this.live.replicaSetsOf(cluster, ro))
          if ((rs.status?.replicas ?? 0) > 0)
            for (const c of rs.spec?.template?.spec?.containers ?? []) if (c.image) images.add(c.image);
      });
      if (!healths.size) continue;
      const resources = (app.status?.resources ?? []).map((r, i) => healths.get(i) ?? r.health);
      const worst = resources.reduce<HealthStatusCode>(
        (w, h) => (h && HEALTH_ORDER.indexOf(h.status) > HEALTH_ORDER.indexOf(w) ? h.status : w),
        'Healthy',
      );
      const imageList = [...images].sort();
      const unchanged =
        app.status?.health?.status === worst &&
        (app.status?.summary?.images ?? []).join('\n') === imageList.join('\n') &&
        [...healths].every(([i, h]) => {
          const was = app.status!.resources![i].health;
          return was?.status === h.status && (was.message ?? '') === (h.message ?? '');
        });
      if (unchanged) continue;
      const next = structuredClone(app);
      const status = next.status!;
      for (const [i, h] of healths) status.resources![i].health = h;
      if (status.health?.status !== worst) status.health = { status: worst, lastTransitionTime: rfc3339(now) };
      status.summary = { ...status.summary, images: imageList };
      store.putApp(next);
    }
  }
}

/** JSON with keys in order: statuses are compared whatever order their fields were written in. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object')
    return `{${Object.keys(v)
      .filter((k) => (v as Obj)[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Obj)[k])}`)
      .join(',')}}`;
  return JSON.stringify(v) ?? 'null';
}

function pauseDurationMs(duration: number | string | undefined): number | undefined {
  if (duration === undefined) return undefined;
  if (typeof duration === 'number') return duration * 1000;
  return /^\d+$/.test(duration) ? Number(duration) * 1000 : parseGoDuration(duration);
}
