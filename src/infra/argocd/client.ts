import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import type { RollcallConfig, InstanceConfig } from '../config/schema.js';
import type {
  AppRef,
  ArgoApi,
  ListApplicationsQuery,
  ListOptions,
  PodLogsQuery,
  RollbackOptions,
  WatchHandle,
  WatchOptions,
} from './api.js';
import { errorFromBadBody, errorFromResponse, errorFromTransport, isArgoError, type CallContext } from './errors.js';
import {
  aList,
  aLiveManifest,
  aNamedObject,
  anObject,
  aResourceActionList,
  aWatchEvent,
  ShapeError,
  type AnswerReader,
  isListReader,
  type ReadList,
} from './answers.js';
import { DEFAULT_RETRY, parseRetryAfter, retryDelay, sleep, type RetryPolicy } from './retry.js';
import type {
  AppProject,
  Application,
  ApplicationSet,
  ApplicationSetWatchEvent,
  ApplicationSyncRequest,
  ApplicationTree,
  ApplicationWatchEvent,
  Cluster,
  KubeEventList,
  LogEntry,
  ManagedResourcesResponse,
  ResourceAction,
  ResourceRef,
  RevisionMetadata,
} from './types.js';
import { isAxiosError } from 'axios';
import { BadBodyError, HttpTransport, RejectedItemError, type HttpRequest } from '../http/transport.js';
import { openSseWatch } from './watch.js';
import { argocdRequestDuration, argocdRequestsTotal, statusLabel } from '../metrics.js';

export interface ArgoClientOptions {
  logger?: Logger;
  retry?: RetryPolicy;
  /** Watch tuning; Argo CD sends a keep-alive every 15 s. */
  watch?: { keepAliveMs?: number; subscribeAfterMs?: number; backoff?: Pick<RetryPolicy, 'baseMs' | 'maxMs'> };
}

/**
 * How a call may be retried after a failure.
 * - `idempotent`: reads, merge patches, appset upserts, terminate: repeat on any transient failure.
 * - `sync`: a sync POST that failed in transit (reset, timeout, 502/503/504) may or may not have
 *   started an operation. Argo CD refuses a second sync only while the first still runs; one that
 *   already finished (a dry run, an app with nothing to apply) lets a retry sync the app twice. So
 *   it is retried only when it surely never arrived (like `unsafe`), and fails with
 *   `maybeApplied: true` otherwise: the caller reads the app (its operation carries the caller's
 *   infos) before deciding to send it again.
 * - `unsafe`: JSON patches can apply twice (e.g. an array `add`): retry only when the request
 *   surely never reached Argo CD (connection refused, DNS, 429).
 */
type RetryMode = 'idempotent' | 'sync' | 'unsafe';

type Query = Record<string, string | string[] | boolean | undefined>;

const SURELY_UNDELIVERED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);
const IN_TRANSIT = new Set(['ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ECONNABORTED', 'ERR_SOCKET_CONNECTION_TIMEOUT']);

/**
 * One Argo CD instance over its REST API (ArgoApi). Every call has the configured timeout, counted
 * as time without any answer bytes (a 30 MB list over a slow link may take longer in total).
 */
export class ArgoClient implements ArgoApi {
  readonly instance: string;
  private readonly http: HttpTransport;
  private readonly baseUrl: string;
  private readonly timeoutMs: number;
  private readonly retry: RetryPolicy;
  private readonly logger?: Logger;
  private readonly watchOptions: Required<NonNullable<ArgoClientOptions['watch']>>;

  constructor(cfg: InstanceConfig, opts: ArgoClientOptions = {}) {
    this.instance = cfg.name;
    this.baseUrl = cfg.url.replace(/\/+$/, '');
    this.timeoutMs = cfg.timeout;
    this.retry = { ...DEFAULT_RETRY, ...opts.retry };
    this.logger = opts.logger?.child({ instance: cfg.name });
    this.watchOptions = {
      keepAliveMs: opts.watch?.keepAliveMs ?? 15_000,
      subscribeAfterMs: opts.watch?.subscribeAfterMs ?? 1000,
      backoff: opts.watch?.backoff ?? { baseMs: 500, maxMs: 30_000 },
    };
    this.http = new HttpTransport({
      baseUrl: `${this.baseUrl}/api/v1`,
      timeoutMs: cfg.timeout,
      headers: { Authorization: `Bearer ${cfg.token}`, Accept: 'application/json' },
      tls: cfg.tls,
    });
  }

  // ---------- applications ----------

  listApplications(
    query: ListApplicationsQuery = {},
    opts: ListOptions<Application> = {},
  ): Promise<ReadList<Application>> {
    return this.call(
      { method: 'GET', path: '/applications', query: applicationQuery(query) },
      {
        resource: 'applications',
        action: 'get',
        project: query.projects?.length === 1 ? query.projects[0] : undefined,
      },
      'idempotent',
      aList<Application>('application', { map: opts.each, onResourceVersion: opts.onResourceVersion }),
    );
  }

  getApplication(ref: AppRef, opts: { refresh?: 'normal' | 'hard' } = {}): Promise<Application> {
    return this.call(
      { method: 'GET', path: appPath(ref.name), query: { ...refQuery(ref), refresh: opts.refresh } },
      { resource: 'applications', action: 'get', app: ref.name, project: ref.project },
      'idempotent',
      APPLICATION,
    );
  }

  resourceTree(ref: AppRef): Promise<ApplicationTree> {
    return this.call(
      { method: 'GET', path: `${appPath(ref.name)}/resource-tree`, query: refQuery(ref) },
      { resource: 'applications', action: 'get', app: ref.name, project: ref.project },
      'idempotent',
      anObject<ApplicationTree>('a resource tree object'),
    );
  }

  managedResources(ref: AppRef): Promise<ManagedResourcesResponse> {
    return this.call(
      { method: 'GET', path: `${appPath(ref.name)}/managed-resources`, query: refQuery(ref) },
      { resource: 'applications', action: 'get', app: ref.name, project: ref.project },
      'idempotent',
      aList<NonNullable<ManagedResourcesResponse['items']>[number]>('resource', { itemsOmittedWhenEmpty: true }),
    );
  }

  resourceEvents(ref: AppRef, resource?: { uid: string; name: string; namespace?: string }): Promise<KubeEventList> {
    const params = {
      ...refQuery(ref),
      ...(resource
        ? { resourceUID: resource.uid, resourceName: resource.name, resourceNamespace: resource.namespace ?? '' }
        : {}),
    };
    return this.call(
      { method: 'GET', path: `${appPath(ref.name)}/events`, query: params },
      { resource: 'applications', action: 'get', app: ref.name, project: ref.project },
      'idempotent',
      aList<NonNullable<KubeEventList['items']>[number]>('event'),
    );
  }

  // ---------- read verbs: revision metadata, pod logs ----------

  revisionMetadata(
    ref: AppRef,
    revision: string,
    opts: { versionId?: number; sourceIndex?: number } = {},
  ): Promise<RevisionMetadata> {
    const params: Query = {
      ...refQuery(ref),
      versionId: opts.versionId?.toString(),
      sourceIndex: opts.sourceIndex?.toString(),
    };
    return this.call(
      { method: 'GET', path: `${appPath(ref.name)}/revisions/${encodeURIComponent(revision)}/metadata`, query: params },
      { resource: 'applications', action: 'get', app: ref.name, project: ref.project },
      'idempotent',
      anObject<RevisionMetadata>('a revision metadata object'),
    );
  }

  /**
   * PodLogs answers with grpc-gateway's stream shape even when it does not follow: one JSON object per
   * line, `{"result": LogEntry}`, or `{"error": {...}}` when the stream fails midway. An app without
   * matching pods gets an empty body (the server returns before sending anything). Needs `logs, get`
   * on top of `applications, get`.
   */
  async podLogs(ref: AppRef, query: PodLogsQuery): Promise<LogEntry[]> {
    const params: Query = {
      ...refQuery(ref),
      podName: query.podName,
      container: query.container,
      namespace: query.namespace,
      kind: query.kind,
      group: query.group,
      resourceName: query.resourceName,
      tailLines: query.tailLines === undefined ? undefined : String(query.tailLines),
      sinceSeconds: query.sinceSeconds === undefined ? undefined : String(query.sinceSeconds),
      previous: query.previous,
      follow: false,
    };
    const url = `${appPath(ref.name)}/logs`;
    const rbac = { resource: 'logs', action: 'get', app: ref.name, project: ref.project } as const;
    const body = await this.call<string>(
      { method: 'GET', path: url, query: params, responseType: 'text' },
      rbac,
      'idempotent',
    );
    const entries: LogEntry[] = [];
    for (const line of String(body ?? '').split('\n')) {
      if (!line.trim()) continue;
      let message: { result?: LogEntry; error?: { grpc_code?: number; http_code?: number; message?: string } };
      try {
        message = JSON.parse(line) as typeof message;
      } catch {
        // A line that is not grpc-gateway's is a log cut short or a proxy's page: the lines shown would not be all there are.
        throw errorFromBadBody(this.context('GET', url, rbac), line, 'a line of the log stream is not JSON');
      }
      if (message.error) {
        const e = message.error;
        throw errorFromResponse(this.context('GET', url, rbac), e.http_code ?? 500, {
          error: e.message,
          code: e.grpc_code,
          message: e.message,
        });
      }
      if (message.result && !message.result.last) entries.push(message.result);
    }
    return entries;
  }

  // ---------- one resource: the live object and its actions ----------

  liveResource<T = Record<string, unknown>>(ref: AppRef, resource: ResourceRef): Promise<T> {
    return this.call(
      { method: 'GET', path: `${appPath(ref.name)}/resource`, query: resourceQuery(ref, resource) },
      { resource: 'applications', action: 'get', app: ref.name, project: ref.project },
      'idempotent',
      aLiveManifest<T>(),
    );
  }

  listResourceActions(ref: AppRef, resource: ResourceRef): Promise<ResourceAction[]> {
    return this.call(
      { method: 'GET', path: `${appPath(ref.name)}/resource/actions`, query: resourceQuery(ref, resource) },
      { resource: 'applications', action: 'get', app: ref.name, project: ref.project },
      'idempotent',
      aResourceActionList<ResourceAction>(),
    );
  }

  async runResourceAction(
    ref: AppRef,
    resource: ResourceRef,
    action: string,
    params: Record<string, string> = {},
  ): Promise<void> {
    const entries = Object.entries(params);
    const body = dropUndefined({
      ...resourceQuery(ref, resource),
      name: ref.name,
      action,
      resourceActionParameters: entries.length ? entries.map(([name, value]) => ({ name, value })) : undefined,
    });
    await this.call(
      { method: 'POST', path: `${appPath(ref.name)}/resource/actions/v2`, body },
      {
        resource: 'applications',
        action: `action/${resource.group ?? ''}/${resource.kind}/${action}`,
        app: ref.name,
        project: ref.project,
      },
      'unsafe',
      anObject<Record<string, unknown>>('an empty object'),
    );
  }

  sync(request: ApplicationSyncRequest): Promise<Application> {
    return this.call(
      { method: 'POST', path: `${appPath(request.name)}/sync`, body: syncBody(request) },
      { resource: 'applications', action: 'sync', app: request.name, project: request.project },
      'sync',
      APPLICATION,
    );
  }

  async terminateOperation(ref: AppRef): Promise<void> {
    try {
      await this.call<unknown>(
        { method: 'DELETE', path: `${appPath(ref.name)}/operation`, query: refQuery(ref) },
        { resource: 'applications', action: 'sync', app: ref.name, project: ref.project },
        'idempotent',
      );
    } catch (error) {
      // A retry after a terminate that was applied but whose answer was lost finds nothing running:
      // the goal (no running operation) holds.
      if (isArgoError(error, 'no_operation') && error.maybeApplied) return;
      throw error;
    }
  }

  /**
   * A rollback is a sync in disguise (Argo CD's Rollback writes a sync operation), so it is retried
   * like one: never after it may have arrived. RBAC: `sync` in v3.5 (v3.6 adds an opt-in `rollback`).
   */
  rollback(ref: AppRef, opts: RollbackOptions): Promise<Application> {
    const body = {
      name: ref.name,
      id: opts.id,
      prune: opts.prune,
      dryRun: opts.dryRun,
      appNamespace: ref.appNamespace,
      project: ref.project,
    };
    return this.call(
      { method: 'POST', path: `${appPath(ref.name)}/rollback`, body: dropUndefined(body) },
      { resource: 'applications', action: 'sync', app: ref.name, project: ref.project },
      'sync',
      APPLICATION,
    );
  }

  patchApplication(ref: AppRef, patch: unknown, patchType: 'merge' | 'json'): Promise<Application> {
    const body = {
      name: ref.name,
      patch: JSON.stringify(patch),
      patchType,
      appNamespace: ref.appNamespace,
      project: ref.project,
    };
    return this.call(
      { method: 'PATCH', path: appPath(ref.name), body: dropUndefined(body) },
      { resource: 'applications', action: 'update', app: ref.name, project: ref.project },
      patchType === 'merge' ? 'idempotent' : 'unsafe',
      APPLICATION,
    );
  }

  // ---------- applicationsets ----------

  listApplicationSets(
    query: { selector?: string; projects?: string[]; appsetNamespace?: string } = {},
    opts: Pick<ListOptions<ApplicationSet>, 'onResourceVersion'> = {},
  ): Promise<ReadList<ApplicationSet>> {
    return this.call(
      {
        method: 'GET',
        path: '/applicationsets',
        query: { selector: query.selector, projects: query.projects, appsetNamespace: query.appsetNamespace },
      },
      { resource: 'applicationsets', action: 'get' },
      'idempotent',
      aList<ApplicationSet>('ApplicationSet', { onResourceVersion: opts.onResourceVersion }),
    );
  }

  getApplicationSet(name: string, appsetNamespace?: string): Promise<ApplicationSet> {
    return this.call(
      { method: 'GET', path: `/applicationsets/${encodeURIComponent(name)}`, query: { appsetNamespace } },
      { resource: 'applicationsets', action: 'get', appSet: name, project: undefined },
      'idempotent',
      APPLICATION_SET,
    );
  }

  /** There is no PATCH for ApplicationSets (A8/B3): POST the full object with upsert=true. */
  upsertApplicationSet(appSet: ApplicationSet, opts: { dryRun?: boolean } = {}): Promise<ApplicationSet> {
    return this.call(
      {
        method: 'POST',
        path: '/applicationsets',
        query: { upsert: 'true', dryRun: opts.dryRun ? 'true' : undefined },
        body: appSet,
      },
      {
        resource: 'applicationsets',
        action: 'update',
        appSet: appSet.metadata.name,
        project: appSet.spec?.template?.spec?.project,
      },
      'idempotent',
      APPLICATION_SET,
    );
  }

  // ---------- clusters ----------

  /** Cluster `config` holds credentials: it is dropped here so it never reaches the mirror, logs or replies. */
  async listClusters(): Promise<ReadList<Cluster>> {
    const list = await this.call(
      { method: 'GET', path: '/clusters' },
      { resource: 'clusters', action: 'get' },
      'idempotent',
      aList<Cluster>('cluster'),
    );
    const items = list.items.map((c: Cluster) => {
      const { config: _config, ...rest } = c;
      return rest;
    });
    return { ...list, items };
  }

  // ---------- projects ----------

  listProjects(): Promise<ReadList<AppProject>> {
    return this.call(
      { method: 'GET', path: '/projects' },
      { resource: 'projects', action: 'get' },
      'idempotent',
      aList<AppProject>('AppProject'),
    );
  }

  getProject(name: string): Promise<AppProject> {
    return this.call(
      { method: 'GET', path: projectPath(name) },
      { resource: 'projects', action: 'get', project: name },
      'idempotent',
      APP_PROJECT,
    );
  }

  /**
   * Retried like a read: the resourceVersion makes a second delivery of an applied write fail as
   * `argocd_modified` (with maybeApplied) instead of applying twice, and the caller reads the project again.
   */
  updateProject(project: AppProject): Promise<AppProject> {
    const name = project.metadata.name;
    return this.call(
      { method: 'PUT', path: projectPath(name), body: { project } },
      { resource: 'projects', action: 'update', project: name },
      'idempotent',
      APP_PROJECT,
    );
  }

  // ---------- watch ----------

  watchApplications(query: ListApplicationsQuery, options: WatchOptions<ApplicationWatchEvent>): WatchHandle {
    const { resourceVersion, fields: _fields, ...rest } = query;
    return this.watch<ApplicationWatchEvent>(
      '/stream/applications',
      applicationQuery(rest),
      resourceVersion,
      aWatchEvent<ApplicationWatchEvent>('application'),
      (e) => e.application.metadata.resourceVersion,
      { resource: 'applications', action: 'get' },
      options,
    );
  }

  watchApplicationSets(
    query: { selector?: string; projects?: string[]; resourceVersion?: string },
    options: WatchOptions<ApplicationSetWatchEvent>,
  ): WatchHandle {
    return this.watch<ApplicationSetWatchEvent>(
      '/stream/applicationsets',
      { selector: query.selector, projects: query.projects },
      query.resourceVersion,
      aWatchEvent<ApplicationSetWatchEvent>('applicationSet'),
      (e) => e.applicationSet.metadata.resourceVersion,
      { resource: 'applicationsets', action: 'get' },
      options,
    );
  }

  private watch<E>(
    path: string,
    params: Query,
    resourceVersion: string | undefined,
    toEvent: (result: unknown) => E,
    resourceVersionOf: (e: E) => string | undefined,
    rbac: Pick<CallContext, 'resource' | 'action'>,
    options: WatchOptions<E>,
  ): WatchHandle {
    const ctx = this.context('GET', path, rbac);
    return openSseWatch<E>(
      {
        instance: this.instance,
        describe: `GET ${path}`,
        keepAliveMs: this.watchOptions.keepAliveMs,
        subscribeAfterMs: this.watchOptions.subscribeAfterMs,
        backoff: this.watchOptions.backoff,
        initialResourceVersion: resourceVersion,
        logger: this.logger,
        toEvent,
        resourceVersionOf,
        connect: async (rv, signal) => {
          const res = await this.http.request<Readable>({
            method: 'GET',
            path,
            query: { ...params, resourceVersion: rv },
            // identity: a gzip-compressing proxy would otherwise buffer the stream (and we do not inflate it).
            headers: { Accept: 'text/event-stream', 'Accept-Encoding': 'identity' },
            responseType: 'stream',
            // The stream lives for hours: liveness is the keep-alive check, not a request timeout.
            timeoutMs: 0,
            signal,
            anyStatus: true,
            decompress: false,
          });
          return { status: res.status, stream: res.data };
        },
        errorFor: (status, body) => errorFromResponse(ctx, status, body),
        badMessage: (text, problem) => errorFromBadBody(ctx, text, problem),
        transportError: (error) => {
          const e = error as NodeJS.ErrnoException | undefined;
          return errorFromTransport(ctx, e?.code, e?.message ?? String(error));
        },
      },
      options,
    );
  }

  // ---------- plumbing ----------

  private context(
    method: string,
    path: string,
    rest: Omit<CallContext, 'instance' | 'url' | 'method' | 'path' | 'timeoutMs'>,
  ): CallContext {
    return { instance: this.instance, url: this.baseUrl, method, path, timeoutMs: this.timeoutMs, ...rest };
  }

  private async call<T>(
    request: HttpRequest,
    rbac: Omit<CallContext, 'instance' | 'url' | 'method' | 'path' | 'timeoutMs'>,
    mode: RetryMode,
    read?: AnswerReader<T>,
  ): Promise<T> {
    const ctx = this.context(request.method, request.path, rbac);
    // A list is read item by item as it arrives, each checked (and kept lean) before the next.
    if (read && isListReader(read)) request = { ...request, eachItem: read.eachItem, eachField: read.eachField };
    let inTransitFailure = false;
    for (let attempt = 0; ; attempt++) {
      const started = Date.now();
      let data: unknown;
      try {
        const res = await this.http.request<unknown>(request);
        argocdRequestsTotal.inc({ instance: this.instance, method: ctx.method, code: statusLabel(res.status) });
        argocdRequestDuration.observe({ instance: this.instance }, (Date.now() - started) / 1000);
        this.logger?.debug(
          { method: ctx.method, path: ctx.path, status: res.status, ms: Date.now() - started, attempt },
          'argocd call',
        );
        data = res.data;
      } catch (error) {
        if (error instanceof RejectedItemError) {
          if (!(error.cause instanceof ShapeError)) throw error.cause;
          throw errorFromBadBody(ctx, error.bodyStart, error.cause.message, answered(ctx));
        }
        const failure = classify(error);
        argocdRequestsTotal.inc({ instance: this.instance, method: ctx.method, code: statusLabel(failure.status) });
        argocdRequestDuration.observe({ instance: this.instance }, (Date.now() - started) / 1000);
        // A mutating call whose attempt failed in transit may have been applied by Argo CD.
        const maybeApplied = ctx.method !== 'GET' && (inTransitFailure || failure.kind === 'in-transit');
        const final =
          failure.kind === 'final' ||
          attempt >= this.retry.retries ||
          (mode !== 'idempotent' && failure.kind === 'in-transit');
        this.logger?.[final ? 'debug' : 'warn'](
          {
            method: ctx.method,
            path: ctx.path,
            status: failure.status,
            code: failure.transportCode,
            ms: Date.now() - started,
            attempt,
          },
          final ? 'argocd call failed' : 'argocd call failed, retrying',
        );
        if (final) {
          const extra = { maybeApplied };
          if (failure.badBody !== undefined) throw errorFromBadBody(ctx, failure.badBody, 'not JSON', answered(ctx));
          if (failure.status !== undefined) throw errorFromResponse(ctx, failure.status, failure.body, extra);
          if (failure.unknown) throw failure.unknown;
          throw errorFromTransport(ctx, failure.transportCode, failure.detail, extra);
        }
        if (failure.kind === 'in-transit') inTransitFailure = true;
        await sleep(retryDelay(attempt, this.retry, failure.retryAfterMs));
        continue;
      }
      if (!read) return data as T;
      try {
        return read(data, this.instance);
      } catch (error) {
        if (!(error instanceof ShapeError)) throw error;
        throw errorFromBadBody(ctx, JSON.stringify(data) ?? '', error.message, answered(ctx));
      }
    }
  }
}

/**
 * A 2xx answer, however garbled, means the server took the request: a mutating call was probably applied,
 * and the caller checks before sending it again.
 */
function answered(ctx: CallContext): { maybeApplied: boolean } {
  return { maybeApplied: ctx.method !== 'GET' };
}

interface Failure {
  kind: 'undelivered' | 'in-transit' | 'final';
  status?: number;
  body?: unknown;
  transportCode?: string;
  detail: string;
  retryAfterMs?: number;
  /** Not an HTTP failure at all (a bug): rethrown as is. */
  unknown?: unknown;
  /** A 2xx answer whose body is not JSON: its text. */
  badBody?: string;
}

function classify(error: unknown): Failure {
  // Retrying cannot make a server that answers garbage answer Argo CD's JSON; saying so at once can.
  if (error instanceof BadBodyError)
    return { kind: 'final', status: error.status, badBody: error.body, detail: error.message };
  if (!isAxiosError(error)) return { kind: 'final', detail: String(error), unknown: error };
  const res = error.response;
  // axios fails an answer whose connection dropped mid-body with the answer's 2xx status attached: the body
  // was lost in transit, as when the connection drops before the status.
  if (res && res.status >= 200 && res.status < 300)
    return { kind: 'in-transit', transportCode: 'ECONNRESET', detail: error.message };
  if (res) {
    const status = res.status;
    const retryAfterMs = parseRetryAfter(res.headers?.['retry-after'] as string | undefined);
    if (status === 429) return { kind: 'undelivered', status, body: res.data, detail: error.message, retryAfterMs };
    if (status === 502 || status === 503 || status === 504)
      return { kind: 'in-transit', status, body: res.data, detail: error.message, retryAfterMs };
    return { kind: 'final', status, body: res.data, detail: error.message };
  }
  const code = error.code;
  if (code && SURELY_UNDELIVERED.has(code)) return { kind: 'undelivered', transportCode: code, detail: error.message };
  if ((code && IN_TRANSIT.has(code)) || /socket hang up/i.test(error.message))
    return { kind: 'in-transit', transportCode: code ?? 'ECONNRESET', detail: error.message };
  // TLS failures and anything unknown: retrying cannot help.
  return { kind: 'final', transportCode: code, detail: error.message };
}

const APPLICATION = aNamedObject<Application>('an Application');
const APPLICATION_SET = aNamedObject<ApplicationSet>('an ApplicationSet');
const APP_PROJECT = aNamedObject<AppProject>('an AppProject');

function projectPath(name: string): string {
  return `/projects/${encodeURIComponent(name)}`;
}

function appPath(name: string): string {
  return `/applications/${encodeURIComponent(name)}`;
}

function refQuery(ref: AppRef): Query {
  return { appNamespace: ref.appNamespace, project: ref.project };
}

/** ApplicationResourceRequest: the resource's identity and the app's scope; `group` left out for the core group. */
function resourceQuery(ref: AppRef, r: ResourceRef): Record<string, string | undefined> {
  return {
    namespace: r.namespace,
    resourceName: r.name,
    version: r.version,
    group: r.group || undefined,
    kind: r.kind,
    appNamespace: ref.appNamespace,
    project: ref.project,
  };
}

/** List/stream query (B2): `projects` repeated per value, `fields` as one comma-joined value. */
function applicationQuery(q: ListApplicationsQuery): Query {
  return {
    selector: q.selector,
    projects: q.projects,
    appNamespace: q.appNamespace,
    repo: q.repo,
    name: q.name,
    resourceVersion: q.resourceVersion,
    fields: q.fields?.length ? q.fields.join(',') : undefined,
  };
}

/**
 * Sync `infos` that make Argo CD's own history and UI say who asked (the Slack or terminal user,
 * not only the bot's account) and which rollcall run it belongs to. Argo CD copies them onto the
 * operation (`operation.info`), where the UI's sync panel and `argocd app get` show them.
 */
export function attributionInfos(opts: {
  runInfoName: string;
  runId: string;
  user: string;
  surface: string;
}): { name: string; value: string }[] {
  return [
    { name: opts.runInfoName, value: opts.runId },
    { name: REQUESTED_BY_INFO, value: `${opts.user} (${opts.surface}, via rollcall run ${opts.runId})` },
  ];
}

const REQUESTED_BY_INFO = 'Requested by';

/**
 * The person who asked for an operation rollcall started, read back from the info `attributionInfos`
 * wrote: Argo CD's `initiatedBy` names only the token's account, which is rollcall's own.
 */
export function requesterOf(info: readonly { name: string; value: string }[] | undefined): string | undefined {
  const value = info?.find((i) => i.name === REQUESTED_BY_INFO)?.value;
  return value ? (/^(.+?) \([^()]*, via rollcall run [^()]*\)$/.exec(value)?.[1] ?? value) : undefined;
}

/** B4: syncOptions as `{items}`, hook force inline under `hook`, sourcePositions as numbers. */
export function syncBody(r: ApplicationSyncRequest): Record<string, unknown> {
  let strategy: ApplicationSyncRequest['strategy'];
  if (r.strategy?.hook) strategy = { hook: { force: r.strategy.hook.force ?? false } };
  else if (r.strategy?.apply) strategy = { apply: { force: r.strategy.apply.force ?? false } };
  const syncOptions = r.syncOptions as ApplicationSyncRequest['syncOptions'] | string[] | undefined;
  return dropUndefined({
    name: r.name,
    appNamespace: r.appNamespace,
    project: r.project,
    revision: r.revision,
    revisions: r.revisions,
    sourcePositions: r.sourcePositions?.map(Number),
    prune: r.prune,
    dryRun: r.dryRun,
    strategy,
    resources: r.resources,
    syncOptions: Array.isArray(syncOptions) ? { items: syncOptions } : syncOptions,
    retryStrategy: r.retryStrategy,
    infos: r.infos,
  });
}

function dropUndefined<T extends Record<string, unknown>>(o: T): T {
  for (const k of Object.keys(o)) if (o[k] === undefined) delete o[k];
  return o;
}

export function createClients(config: RollcallConfig, opts: ArgoClientOptions = {}): Map<string, ArgoClient> {
  return new Map(config.instances.map((i) => [i.name, new ArgoClient(i, opts)]));
}
