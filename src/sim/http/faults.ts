import type { ServerResponse } from 'node:http';
import type { SyncWindow } from '../../infra/argocd/types.js';
import { FAULT_WINDOW_DESCRIPTION, projectsOf } from '../projects.js';
import type { SimCore } from './context.js';
import type { SimControllerPort } from './controller-port.js';

/**
 * Faults injected with POST /_sim/faults. HTTP-level ones (latency, 5xx, 429) are applied here
 * before a request reaches the fake Argo CD; app and cluster faults go to the controller.
 */
export type HttpFault =
  | {
      kind: 'latency';
      instance?: string;
      ms: number;
      match?: string;
      /** The whole path below the instance (no query), where `match` would also hit longer ones. */
      path?: string;
      method?: string;
      until?: number;
      remaining?: number;
    }
  | {
      kind: 'http5xx';
      instance?: string;
      status: 502 | 503 | 504;
      match?: string;
      path?: string;
      method?: string;
      until?: number;
      remaining?: number;
    }
  | {
      kind: 'http429';
      instance?: string;
      retryAfterSeconds: number;
      match?: string;
      path?: string;
      method?: string;
      until?: number;
      remaining?: number;
    }
  | {
      /**
       * The request is served in full (a sync starts its operation and is recorded) but its answer
       * never arrives: the connection is destroyed instead, as when a proxy or the network drops it.
       */
      kind: 'answerLost';
      instance?: string;
      match?: string;
      path?: string;
      method?: string;
      until?: number;
      remaining?: number;
    }
  | {
      /**
       * A 200 whose body is not Argo CD's JSON, as a proxy that cuts answers short or serves its own page
       * sends it: `body` verbatim, or the real answer (served in full first) cut after `truncateAt` characters.
       */
      kind: 'badBody';
      body?: string;
      truncateAt?: number;
      instance?: string;
      match?: string;
      path?: string;
      method?: string;
      until?: number;
      remaining?: number;
    };

export class FaultBook {
  readonly http: HttpFault[] = [];

  private applies(f: HttpFault, instance: string, method: string, path: string, wallNow: number): boolean {
    if (f.instance && f.instance !== instance) return false;
    if (f.method && f.method.toUpperCase() !== method) return false;
    if (f.match && !path.includes(f.match)) return false;
    if (f.path && f.path !== path) return false;
    if (f.until !== undefined && wallNow > f.until) return false;
    if (f.remaining !== undefined && f.remaining <= 0) return false;
    return true;
  }

  /**
   * Latency to add, the failure (if any) to answer with, and whether the answer is to be lost after
   * the request was served; consumes counted faults.
   */
  take(instance: string, method: string, path: string): { delayMs: number; failure?: HttpFault; loseAnswer: boolean } {
    const now = Date.now();
    let delayMs = 0;
    let failure: HttpFault | undefined;
    let loseAnswer = false;
    for (const f of this.http) {
      if (!this.applies(f, instance, method, path, now)) continue;
      if (f.kind === 'latency') delayMs += f.ms;
      else if (f.kind === 'answerLost') {
        if (!loseAnswer && !failure) {
          loseAnswer = true;
          if (f.remaining !== undefined) f.remaining--;
        }
      } else if (!failure && !loseAnswer) {
        failure = f;
        if (f.remaining !== undefined) f.remaining--;
      }
    }
    // Drop spent faults so the list does not grow in long runs.
    for (let i = this.http.length - 1; i >= 0; i--) {
      const f = this.http[i];
      if ((f.remaining !== undefined && f.remaining <= 0) || (f.until !== undefined && now > f.until))
        this.http.splice(i, 1);
    }
    return { delayMs, failure, loseAnswer };
  }

  clearHttp(instance?: string): void {
    for (let i = this.http.length - 1; i >= 0; i--)
      if (!instance || this.http[i].instance === instance) this.http.splice(i, 1);
  }
}

/** What a proxy in front of Argo CD answers with: 503 from Argo itself is gRPC Unavailable JSON. */
export function writeHttpFailure(res: ServerResponse, f: HttpFault): void {
  if (f.kind === 'http429') {
    res.writeHead(429, { 'content-type': 'text/plain; charset=utf-8', 'retry-after': String(f.retryAfterSeconds) });
    res.end('Too Many Requests\n');
    return;
  }
  if (f.kind === 'badBody') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(f.body ?? '');
    return;
  }
  if (f.kind !== 'http5xx') return;
  if (f.status === 503) {
    const message =
      'connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:8083: connect: connection refused"';
    res.writeHead(503, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: message, code: 14, message, details: [] }));
    return;
  }
  const text = f.status === 502 ? '502 Bad Gateway' : '504 Gateway Time-out';
  res.writeHead(f.status, { 'content-type': 'text/html' });
  res.end(
    `<html>\r\n<head><title>${text}</title></head>\r\n<body>\r\n<center><h1>${text}</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n`,
  );
}

export class FaultRequestError extends Error {}

/**
 * Adds (or takes back) the faults API's deny window: every minute for 24 h, always active. Scoped to one
 * app (its project), one project, or every project of the instance; `off` without a scope removes them all.
 */
function setFaultWindow(core: SimCore, instance: string, scope: { project?: string; app?: string }, on: boolean) {
  const store = core.state.instance(instance)!;
  const projects = projectsOf(store, core.now().toISOString());
  const appProject = scope.app ? store.apps.get(scope.app)?.spec.project || 'default' : undefined;
  const names = scope.project ? [scope.project] : appProject ? [appProject] : [...projects.keys()];
  const applications = [scope.app ?? '*'];
  const ours = (w: SyncWindow) =>
    w.description === FAULT_WINDOW_DESCRIPTION &&
    (!on && !scope.app && !scope.project ? true : JSON.stringify(w.applications) === JSON.stringify(applications));
  let changed = 0;
  for (const name of names) {
    const project = projects.get(name);
    if (!project) throw new FaultRequestError(`no project "${name}" on instance "${instance}"`);
    const windows = project.spec.syncWindows ?? [];
    const has = windows.some(ours);
    if (on === has) continue;
    const next = structuredClone(project);
    next.spec.syncWindows = on
      ? [
          ...windows,
          {
            kind: 'deny',
            schedule: '* * * * *',
            duration: '24h',
            applications,
            timeZone: 'UTC',
            description: FAULT_WINDOW_DESCRIPTION,
          },
        ]
      : windows.filter((w) => !ours(w));
    if (!next.spec.syncWindows.length) delete next.spec.syncWindows;
    store.putProject(next);
    changed++;
  }
  return changed;
}

const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const str = (v: unknown) => (typeof v === 'string' && v ? v : undefined);

/** Applies one POST /_sim/faults body; throws FaultRequestError with a message for a bad one. */
export function applyFault(core: SimCore, faults: FaultBook, body: unknown): { applied: string } {
  if (!body || typeof body !== 'object' || Array.isArray(body))
    throw new FaultRequestError('expected a JSON object {instance?, kind, ...}');
  const b = body as Record<string, unknown>;
  const kind = str(b.kind);
  const instance = str(b.instance);
  if (instance && !core.state.instance(instance))
    throw new FaultRequestError(
      `unknown instance "${instance}" (known: ${[...core.state.instances.keys()].join(', ')})`,
    );
  const scope = { instance, match: str(b.match), path: str(b.path), method: str(b.method) };
  const limits = () => {
    const count = num(b.count);
    const forMs = num(b.forMs);
    return {
      ...(count !== undefined ? { remaining: count } : {}),
      ...(forMs !== undefined ? { until: Date.now() + forMs } : {}),
    };
  };
  const controller: SimControllerPort = core.controller;
  const needInstance = () => {
    if (instance) return instance;
    if (core.state.instances.size === 1) return [...core.state.instances.keys()][0];
    throw new FaultRequestError(`"${kind}" needs "instance" when several instances are served`);
  };
  const needApp = (inst: string) => {
    const app = str(b.app);
    if (!app) throw new FaultRequestError(`"${kind}" needs "app"`);
    if (!core.state.instance(inst)!.apps.has(app)) throw new FaultRequestError(`no app "${app}" on instance "${inst}"`);
    return app;
  };
  switch (kind) {
    case 'latency': {
      const ms = num(b.ms);
      if (ms === undefined || ms < 0) throw new FaultRequestError('"latency" needs "ms" >= 0');
      faults.http.push({ kind, ms, ...scope, ...limits() });
      return { applied: `latency ${ms}ms` };
    }
    case 'http5xx': {
      const status = num(b.status) ?? 503;
      if (status !== 502 && status !== 503 && status !== 504)
        throw new FaultRequestError('"http5xx" status must be 502, 503 or 504');
      faults.http.push({ kind, status, ...scope, ...limits() });
      return { applied: `http ${status}` };
    }
    case 'http429': {
      const retryAfterSeconds = num(b.retryAfterSeconds) ?? 1;
      faults.http.push({ kind, retryAfterSeconds, ...scope, ...limits() });
      return { applied: `http 429 retry-after ${retryAfterSeconds}s` };
    }
    case 'answerLost': {
      faults.http.push({ kind, ...scope, ...limits() });
      return { applied: 'answers lost after the request is served' };
    }
    case 'badBody': {
      const body = typeof b.body === 'string' ? b.body : undefined;
      const truncateAt = num(b.truncateAt);
      if ((body === undefined) === (truncateAt === undefined) || (truncateAt !== undefined && truncateAt < 0))
        throw new FaultRequestError('"badBody" needs either "body" (a string) or "truncateAt" (>= 0)');
      faults.http.push({ kind, body, truncateAt, ...scope, ...limits() });
      return {
        applied:
          body !== undefined
            ? `200 with body ${JSON.stringify(body.slice(0, 40))}`
            : `200 cut after ${truncateAt} characters`,
      };
    }
    case 'fail': {
      const inst = needInstance();
      const app = needApp(inst);
      controller.faults.failApp(inst, app, str(b.message));
      return { applied: `fail ${inst}/${app}` };
    }
    case 'crashloop': {
      const inst = needInstance();
      const app = needApp(inst);
      controller.faults.crashLoop(inst, app);
      return { applied: `crashloop ${inst}/${app}` };
    }
    case 'clusterDown': {
      const inst = needInstance();
      const cluster = str(b.cluster);
      if (!cluster) throw new FaultRequestError('"clusterDown" needs "cluster"');
      controller.faults.clusterDown(inst, cluster, b.down !== false);
      return { applied: `clusterDown ${inst}/${cluster} ${b.down !== false}` };
    }
    case 'syncWindow': {
      // A real deny window in the AppProjects (every one of the instance, one project, or one app's own),
      // which Argo CD's rules then enforce: manual syncs refused, automated ones held.
      const app = str(b.app);
      const instances = instance ? [instance] : app ? [needInstance()] : [...core.state.instances.keys()];
      let changed = 0;
      for (const inst of instances) {
        if (app) needApp(inst);
        changed += setFaultWindow(core, inst, { project: str(b.project), app }, b.active !== false);
      }
      return { applied: `syncWindow ${b.active === false ? 'off' : 'on'} (${changed} project(s) changed)` };
    }
    case 'dropStreams': {
      // The server (or a proxy idle timeout) ends open watch streams: clients must reconnect.
      let dropped = 0;
      const watches = str(b.watches);
      if (watches && watches !== 'applications' && watches !== 'applicationsets')
        throw new FaultRequestError(`"watches" must be applications or applicationsets, not "${watches}"`);
      for (const [res, open] of core.openStreams) {
        if ((instance && open.instance !== instance) || (watches && open.watches !== watches)) continue;
        res.end();
        core.openStreams.delete(res);
        dropped++;
      }
      return { applied: `dropped ${dropped} stream(s)` };
    }
    case 'clear': {
      const app = str(b.app);
      if (app) {
        const inst = needInstance();
        needApp(inst);
        controller.faults.clear(inst, app);
        return { applied: `clear ${inst}/${app}` };
      }
      faults.clearHttp(instance);
      for (const inst of instance ? [instance] : [...core.state.instances.keys()])
        setFaultWindow(core, inst, {}, false);
      return { applied: `clear http faults${instance ? ` on ${instance}` : ''}` };
    }
    default:
      throw new FaultRequestError(
        `unknown fault kind "${String(b.kind)}": use fail, crashloop, clear, latency, http5xx, http429, answerLost, badBody, clusterDown, syncWindow or dropStreams`,
      );
  }
}
