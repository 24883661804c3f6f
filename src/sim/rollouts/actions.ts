import type { ResourceAction, ResourceActionParameter } from '../../infra/argocd/types.js';
import {
  LuaError,
  assign,
  field,
  getn,
  isNil,
  lessThan,
  luaEquals,
  luaUtcDate,
  tonumber,
  truthy,
  type LuaValue,
} from './lua.js';

/**
 * Argo CD v3.5.1's built-in resource actions for the kinds the simulator serves, ported from
 * `resource_customizations/<group>/<kind>/actions/`: `discovery.lua` says which actions a live object offers and
 * which are disabled, each `<action>/action.lua` changes a copy of it. Line numbers in the errors are the scripts'.
 * Kinds with no discovery script offer no action (ListResourceActions answers an empty list).
 */

/** util/lua errScriptDoesNotExist: what GetResourceAction says of an action the kind does not have. */
export class ScriptDoesNotExistError extends Error {
  override readonly name = 'ScriptDoesNotExistError';
  constructor() {
    super('built-in script does not exist');
  }
}

export interface ActionContext {
  /** What `os.date` reads. */
  now: Date;
  /** The request's resourceActionParameters, the scripts' `actionParams` table. */
  params: ResourceActionParameter[];
}

type Obj = Record<string, unknown>;

/**
 * util/lua ImpactedResource: what an action asks the API server to do. An old-style script changes the object it
 * was given (a `patch` of it); a new-style one returns a list, e.g. CronJob's create-job a Job to `create`.
 */
export interface ImpactedResource {
  operation: 'create' | 'patch';
  resource: Obj;
}

/** Changes `obj` in place (old style), or returns the resources to create (new style). */
type ActionScript = (obj: Obj, ctx: ActionContext) => void | ImpactedResource[];

interface KindActions {
  /** discovery.lua: the actions in the order the script builds its table (Argo CD serves them in Go map order). */
  discover(obj: Obj): ResourceAction[];
  scripts: Record<string, ActionScript>;
}

/** A discovery table entry as ExecuteResourceActionDiscovery reads it: `disabled` counts only when it is true. */
function entry(
  name: string,
  disabled: LuaValue,
  extra: Omit<ResourceAction, 'name' | 'disabled'> = {},
): ResourceAction {
  return { name, ...(disabled === true ? { disabled: true } : {}), ...extra };
}

function rolloutDiscovery(obj: Obj): ResourceAction[] {
  const status = field(obj, 'status', 8);
  const spec = field(obj, 'spec', 10);
  let paused: LuaValue = false;
  if (!isNil(status) && !isNil(field(status, 'pauseConditions', 8)))
    paused = getn(field(status, 'pauseConditions', 9), 9) > 0;
  else if (!isNil(field(spec, 'paused', 10))) paused = field(spec, 'paused', 11);
  const fullyPromoted = luaEquals(field(status, 'currentPodHash', 15), field(status, 'stableRS', 15));
  const aborted = truthy(field(status, 'abort', 16));
  let promoteFull: LuaValue = true;
  if (!isNil(status) && !fullyPromoted) {
    const generation = tonumber(field(status, 'observedGeneration', 22));
    if (generation === undefined || lessThan(field(field(obj, 'metadata', 23), 'generation', 23), generation, 23)) {
      // Argo Rollouts v0.9 could promote fully only a canary.
      promoteFull = !isNil(field(field(spec, 'strategy', 25), 'blueGreen', 25));
    } else promoteFull = false;
  }
  const canary = field(field(spec, 'strategy', 32), 'canary', 32);
  const steps = isNil(canary) ? undefined : field(canary, 'steps', 32);
  const skipDisabled =
    isNil(canary) || isNil(steps) || luaEquals(field(status, 'currentStepIndex', 32), getn(steps, 32));
  return [
    entry('restart', false, { displayName: 'Restart Pods' }),
    entry('resume', !truthy(paused)),
    // `a or b` short-circuits as || does: spec.paused is read only when neither came first.
    entry('abort', fullyPromoted || aborted),
    entry('retry', fullyPromoted || !aborted),
    entry('pause', fullyPromoted || aborted || truthy(field(spec, 'paused', 18))),
    entry('promote-full', truthy(promoteFull)),
    entry('skip-current-step', skipDisabled),
  ];
}

const ROLLOUT_SCRIPTS: Record<string, ActionScript> = {
  abort: (obj) => assign(field(obj, 'status', 1), 'abort', true, 1),
  pause: (obj) => assign(field(obj, 'spec', 1), 'paused', true, 1),
  restart: (obj, ctx) => assign(field(obj, 'spec', 3), 'restartAt', luaUtcDate(ctx.now), 3),
  retry: (obj) => assign(field(obj, 'status', 1), 'abort', undefined, 1),
  resume(obj) {
    const status = field(obj, 'status', 1);
    const conditions = field(status, 'pauseConditions', 1);
    if (!isNil(conditions) && getn(conditions, 1) > 0) assign(status, 'pauseConditions', undefined, 2);
    const spec = field(obj, 'spec', 5);
    if (!isNil(field(spec, 'paused', 5)) && truthy(field(spec, 'paused', 5))) assign(spec, 'paused', false, 6);
  },
  'promote-full'(obj) {
    const status = field(obj, 'status', 1);
    if (isNil(status)) return;
    const generation = tonumber(field(status, 'observedGeneration', 2));
    if (generation === undefined || lessThan(field(field(obj, 'metadata', 3), 'generation', 3), generation, 3)) {
      // Argo Rollouts v0.9 and below: no promoteFull field, so jump past the last step.
      assign(status, 'abort', undefined, 5);
      const steps = field(field(field(field(obj, 'spec', 6), 'strategy', 6), 'canary', 6), 'steps', 6);
      if (!isNil(steps)) assign(status, 'currentStepIndex', getn(steps, 7), 7);
    } else assign(status, 'promoteFull', true, 11);
  },
  'skip-current-step'(obj) {
    const status = field(obj, 'status', 1);
    if (isNil(status)) return;
    const canary = field(field(field(obj, 'spec', 2), 'strategy', 2), 'canary', 2);
    if (isNil(canary) || isNil(field(canary, 'steps', 2))) return;
    const index = field(status, 'currentStepIndex', 2);
    if (!lessThan(index, getn(field(canary, 'steps', 2), 2), 2)) return;
    const conditions = field(status, 'pauseConditions', 3);
    if (!isNil(conditions) && getn(conditions, 3) > 0) assign(status, 'pauseConditions', undefined, 4);
    assign(status, 'currentStepIndex', (index as number) + 1, 6);
  },
};

function deploymentDiscovery(obj: Obj): ResourceAction[] {
  const paused = field(field(obj, 'spec', 9), 'paused', 9) ?? false;
  return [
    entry('restart', undefined, { iconClass: 'fa fa-fw fa-redo' }),
    entry('pause', paused, { iconClass: 'fa fa-fw fa-pause-circle' }),
    entry('resume', !truthy(paused), { iconClass: 'fa fa-fw fa-play-circle' }),
    entry('scale', undefined, { iconClass: 'fa fa-fw fa-plus-circle', params: [{ name: 'replicas' }] }),
  ];
}

const DEPLOYMENT_SCRIPTS: Record<string, ActionScript> = {
  pause: (obj) => assign(field(obj, 'spec', 1), 'paused', true, 1),
  resume: (obj) => assign(field(obj, 'spec', 1), 'paused', undefined, 1),
  restart(obj, ctx) {
    const template = field(field(obj, 'spec', 2), 'template', 2);
    if (isNil(field(template, 'metadata', 2))) assign(template, 'metadata', {}, 3);
    const metadata = field(template, 'metadata', 5);
    if (isNil(field(metadata, 'annotations', 5))) assign(metadata, 'annotations', {}, 6);
    assign(field(metadata, 'annotations', 8), 'kubectl.kubernetes.io/restartedAt', luaUtcDate(ctx.now), 8);
  },
  scale(obj, ctx) {
    const raw = ctx.params.find((p) => p.name === 'replicas')?.value;
    const replicas = tonumber(raw);
    // error(..., 0): a message without a position.
    if (replicas === undefined) {
      if (raw === undefined) throw new LuaError(5, 'cannot perform concat operation between string and nil');
      throw new LuaError(undefined, `invalid number: ${raw}`);
    }
    assign(field(obj, 'spec', 8), 'replicas', replicas, 8);
  },
};

function cronJobDiscovery(obj: Obj): ResourceAction[] {
  const suspend = field(field(obj, 'spec', 4), 'suspend', 4);
  return [
    entry('create-job', undefined, { iconClass: 'fa fa-fw fa-plus', displayName: 'Create Job' }),
    !isNil(suspend) && truthy(suspend)
      ? entry('resume', undefined, { iconClass: 'fa fa-fw fa-play' })
      : entry('suspend', undefined, { iconClass: 'fa fa-fw fa-pause' }),
  ];
}

/**
 * create-job's deepCopy: an empty table (an empty object or list) is copied as nil, so it leaves the Job. Only
 * tables that are empty in the CronJob go: one whose members all went is kept, empty.
 */
function luaDeepCopy(value: LuaValue): LuaValue {
  if (isNil(value) || typeof value !== 'object') return value;
  const entries = Object.entries(value as Obj).filter(([, v]) => v !== null);
  if (!entries.length) return undefined;
  if (Array.isArray(value)) return value.map(luaDeepCopy).filter((v) => v !== undefined);
  const copy: Obj = {};
  for (const [k, v] of entries) {
    const c = luaDeepCopy(v);
    if (c !== undefined) copy[k] = c;
  }
  return copy;
}

/** `os.date("!%y%m%d%H%M")`: the minute, in UTC, that names a Job create-job makes. */
function luaUtcMinute(now: Date): string {
  return now.toISOString().replace(/^\d\d(\d\d)-(\d\d)-(\d\d)T(\d\d):(\d\d).*$/, '$1$2$3$4$5');
}

const CRONJOB_SCRIPTS: Record<string, ActionScript> = {
  // "kubectl create job --from=cronjob/NAME", declaratively: one Job per minute, owned by the CronJob.
  'create-job'(obj, ctx) {
    const template = field(field(obj, 'spec', 35), 'jobTemplate', 35);
    const metadata = (luaDeepCopy(field(template, 'metadata', 35)) ?? {}) as Obj;
    const name = field(field(obj, 'metadata', 39), 'name', 39);
    if (typeof name !== 'string') throw new LuaError(39, 'cannot perform concat operation between nil and string');
    metadata.name = `${name}-${luaUtcMinute(ctx.now)}`;
    const namespace = field(field(obj, 'metadata', 40), 'namespace', 40);
    if (isNil(namespace)) delete metadata.namespace;
    else metadata.namespace = namespace;
    const annotations = (isNil(metadata.annotations) ? {} : metadata.annotations) as Obj;
    annotations['cronjob.kubernetes.io/instantiate'] = 'manual';
    metadata.annotations = annotations;
    metadata.ownerReferences = [
      {
        apiVersion: obj.apiVersion,
        kind: obj.kind,
        name,
        uid: field(field(obj, 'metadata', 50), 'uid', 50),
        blockOwnerDeletion: true,
        controller: true,
      },
    ];
    const spec = luaDeepCopy(field(field(field(obj, 'spec', 56), 'jobTemplate', 56), 'spec', 56));
    const job: Obj = { apiVersion: 'batch/v1', kind: 'Job', metadata, ...(isNil(spec) ? {} : { spec }) };
    return [{ operation: 'create', resource: job }];
  },
  suspend: (obj) => assign(field(obj, 'spec', 1), 'suspend', true, 1),
  resume(obj) {
    const spec = field(obj, 'spec', 1);
    if (!isNil(field(spec, 'suspend', 1)) && truthy(field(spec, 'suspend', 1))) assign(spec, 'suspend', false, 2);
  },
};

/** By Argo CD's key for a kind (GetConfigMapKey): `group/Kind`, or `Kind` for the core group. */
const BUILTIN: Record<string, KindActions> = {
  'argoproj.io/Rollout': { discover: rolloutDiscovery, scripts: ROLLOUT_SCRIPTS },
  'apps/Deployment': { discover: deploymentDiscovery, scripts: DEPLOYMENT_SCRIPTS },
  'batch/CronJob': { discover: cronJobDiscovery, scripts: CRONJOB_SCRIPTS },
};

export function actionsKey(group: string | undefined, kind: string): string {
  return group ? `${group}/${kind}` : kind;
}

/** ListResourceActions for a live object; throws LuaError when discovery.lua fails on it. */
export function discoverActions(group: string | undefined, kind: string, obj: Obj): ResourceAction[] {
  const kindActions = BUILTIN[actionsKey(group, kind)];
  return kindActions ? kindActions.discover(obj) : [];
}

/**
 * What an action asks of the API server (ExecuteResourceAction): an old-style script's changed copy of `obj` as a
 * `patch`, or a new-style script's list. Throws ScriptDoesNotExistError for an action the kind does not have and
 * LuaError where the script fails. A disabled action runs all the same: Argo CD's RunResourceActionV2 never
 * consults discovery (`disabled` only greys the UI's menu).
 */
export function actionImpacts(
  group: string | undefined,
  kind: string,
  action: string,
  obj: Obj,
  ctx: ActionContext,
): ImpactedResource[] {
  const scripts = BUILTIN[actionsKey(group, kind)]?.scripts;
  if (!scripts || !Object.hasOwn(scripts, action)) throw new ScriptDoesNotExistError();
  const copy = structuredClone(obj);
  return scripts[action](copy, ctx) ?? [{ operation: 'patch', resource: copy }];
}

/** The object an old-style action leaves (the `patch` of `actionImpacts`); throws for an action that creates. */
export function runActionScript(
  group: string | undefined,
  kind: string,
  action: string,
  obj: Obj,
  ctx: ActionContext,
): Obj {
  const impacts = actionImpacts(group, kind, action, obj, ctx);
  const patched = impacts.find((i) => i.operation === 'patch');
  if (impacts.length !== 1 || !patched) throw new Error(`${kind} action ${action} does not patch the object`);
  return patched.resource;
}
