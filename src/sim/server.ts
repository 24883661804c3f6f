import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Fixture } from './fixture-types.js';
import { seedState } from './fixture.js';
import { SimState, type InstanceStore } from './store.js';
import {
  getApplication,
  listApplications,
  patchApplication,
  rollbackApplication,
  syncApplication,
  terminateOperation,
  updateSpec,
} from './http/apps.js';
import {
  createApplicationSet,
  getApplicationSet,
  getCluster,
  listApplicationSets,
  listClusters,
} from './http/appsets.js';
import type { ApiRequest, RouteHandler, RouteResult, SimCore } from './http/context.js';
import { SimController } from './controller.js';
import { SimKube } from './kube/index.js';
import { simTls } from './kube/tls.js';
import type { ScenarioBehaviour } from './scenarios/behaviour.js';
import { GrpcCode, SimApiError, toApiError } from './http/errors.js';
import { applyFault, FaultBook, FaultRequestError, writeHttpFailure } from './http/faults.js';
import { watchApplications, watchApplicationSets } from './http/stream.js';
import { appJsonList } from './http/json.js';
import { accountFrom, type SimAccount } from './http/rbac.js';
import { rfc3339 } from './clock.js';
import { managedResources, resourceTree } from './http/tree.js';
import { getResource, listResourceActions, runResourceActionV1, runResourceActionV2 } from './http/resources.js';
import { SimLiveObjects } from './live-objects.js';
import { SimRolloutsController } from './rollouts/controller.js';
import { listEvents } from './http/events.js';
import { getProject, listProjects, updateProject } from './http/projects.js';
import { FAULT_WINDOW_DESCRIPTION } from './projects.js';
import { podLogs, revisionMetadata } from './http/revisions.js';
import { SimEventLog } from './events.js';
import { SimMetrics } from './metrics.js';

export interface SimServer {
  /** http://127.0.0.1:PORT (instances live under /i/<name>; `rootInstance` also at the root). */
  url: string;
  /** The instance served at the root path. */
  rootInstance: string;
  port: number;
  state: SimState;
  controller: SimController;
  instances: { name: string; url: string; token: string }[];
  /**
   * Simulated Kubernetes API servers (fixture `kube`): `https://127.0.0.1:KUBE_PORT/k/<cluster>`,
   * with a certificate signed by `kubeCaPem`, as client-go (kubectl) needs to send its token.
   * The same paths are also answered over plain http on `url`.
   */
  kube: { cluster: string; url: string; token: string }[];
  /** PEM of the CA the kube server's certificate chains to (empty without simulated clusters). */
  kubeCaPem: string;
  /** Each app's request and latency series, served at `GET /metrics` (metrics.ts). */
  metrics: SimMetrics;
  stop(): Promise<void>;
}

export interface StartSimServerOptions {
  fixture: Fixture;
  /** 0 or absent = a free port. */
  port?: number;
  host?: string;
  speed?: number;
  frozen?: boolean;
  /** Time moves only through controller.advance() (tests). */
  manual?: boolean;
  /**
   * The instance also served at the server root (`/api/v1/...`), as Argo CD runs without `--rootpath`,
   * for clients that address the API at the root. @defaultValue the fixture's first instance
   */
  rootInstance?: string;
  /** SSE keep-alive interval; Argo CD uses 15 s. */
  keepAliveMs?: number;
  scenarioBehaviour?: ScenarioBehaviour;
  /** The fixture is used nowhere else (just loaded or generated): serve its objects without copying. */
  adoptFixture?: boolean;
  /** See src/sim/http/stream.ts; default 'argocd' (no replay, as the real server). */
  watchResume?: 'argocd' | 'replay';
  /** See src/sim/http/stream.ts; default 'first-message' (the real server's headers wait for the first event). */
  watchAnswer?: 'first-message' | 'at-once';
  /** Monotonic milliseconds the app metrics count requests by (tests drive their own). @defaultValue performance.now */
  metricsClock?: () => number;
}

interface Route {
  pattern: string[];
  methods: Partial<Record<string, RouteHandler>>;
}

const route = (path: string, methods: Route['methods']): Route => ({
  pattern: path.split('/').filter(Boolean),
  methods,
});

// Paths below /api/v1, as Argo CD's grpc-gateway mux registers them.
const ROUTES: Route[] = [
  route('applications', { GET: listApplications }),
  route('applications/:name', { GET: getApplication, PATCH: patchApplication }),
  route('applications/:name/sync', { POST: syncApplication }),
  route('applications/:name/operation', { DELETE: terminateOperation }),
  route('applications/:name/rollback', { POST: rollbackApplication }),
  route('applications/:name/resource-tree', { GET: resourceTree }),
  route('applications/:name/managed-resources', { GET: managedResources }),
  route('applications/:name/resource', { GET: getResource }),
  route('applications/:name/resource/actions', { GET: listResourceActions, POST: runResourceActionV1 }),
  route('applications/:name/resource/actions/v2', { POST: runResourceActionV2 }),
  route('applications/:name/spec', { PUT: updateSpec }),
  route('applications/:name/events', { GET: listEvents }),
  route('applications/:name/logs', { GET: podLogs }),
  route('applications/:name/pods/:podName/logs', { GET: podLogs }),
  route('applications/:name/revisions/:revision/metadata', { GET: revisionMetadata }),
  route('projects', { GET: listProjects }),
  route('projects/:name', { GET: getProject, PUT: updateProject }),
  route('applicationsets', { GET: listApplicationSets, POST: createApplicationSet }),
  // No PATCH or PUT exists for ApplicationSets (A8): only GET and DELETE on one.
  route('applicationsets/:name', { GET: getApplicationSet }),
  route('clusters', { GET: listClusters }),
  route('clusters/:id', { GET: getCluster }),
  route('stream/applications', { GET: watchApplications }),
  route('stream/applicationsets', { GET: watchApplicationSets }),
  route('session/userinfo', {
    GET: (req) => ({ json: { loggedIn: true, username: req.account.name, iss: 'argocd' } }),
  }),
];

/** The subject of every sim token, as Argo CD records it in operation.initiatedBy.username. */
const SIM_USER = 'admin';

function matchRoute(segments: string[]): { route: Route; params: Record<string, string> } | undefined {
  for (const r of ROUTES) {
    if (r.pattern.length !== segments.length) continue;
    const params: Record<string, string> = {};
    let ok = true;
    for (let i = 0; i < segments.length; i++) {
      const p = r.pattern[i];
      if (p.startsWith(':')) params[p.slice(1)] = segments[i];
      else if (p !== segments[i]) {
        ok = false;
        break;
      }
    }
    if (ok) return { route: r, params };
  }
  return undefined;
}

function sendJson(res: ServerResponse, status: number, body: unknown | string): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function sendError(res: ServerResponse, error: SimApiError): void {
  sendJson(res, error.httpStatus, error.body());
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function bearer(req: IncomingMessage): string | undefined {
  const auth = req.headers.authorization;
  if (auth?.startsWith('Bearer ')) return auth.slice(7).trim();
  // The UI's cookie works too (B1).
  const cookie = req.headers.cookie
    ?.split(';')
    .map((c) => c.trim())
    .find((c) => c.startsWith('argocd.token='));
  return cookie?.slice('argocd.token='.length);
}

/** Prometheus' text exposition format, version 0.0.4: what a scrape negotiates down to without protobuf. */
const EXPOSITION_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

function serveMetrics(req: IncomingMessage, res: ServerResponse, metrics: SimMetrics): void {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' });
    res.end(`${req.method} is not allowed on /metrics: scrape it with GET\n`);
    return;
  }
  const text = metrics.exposition();
  res.writeHead(200, { 'content-type': EXPOSITION_CONTENT_TYPE, 'content-length': Buffer.byteLength(text) });
  res.end(req.method === 'HEAD' ? undefined : text);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Serializes every app once in the background, a few hundred per tick, so the first full List of
 * a large fleet joins cached strings instead of stringifying 10,000 apps while the client waits.
 */
function warmListCache(state: SimState): { stop(): void } {
  const queue = [...state.instances.values()].flatMap((s) => [...s.apps.keys()].map((name) => [s, name] as const));
  let stopped = false;
  const tick = () => {
    if (stopped) return;
    for (let n = 0; n < 250 && queue.length; n++) {
      const [store, name] = queue.pop()!;
      const app = store.apps.get(name);
      if (app) appJsonList(app);
    }
    if (queue.length) setImmediate(tick).unref();
  };
  setImmediate(tick).unref();
  return { stop: () => void (stopped = true) };
}

export async function startSimServer(opts: StartSimServerOptions): Promise<SimServer> {
  const state = new SimState();
  seedState(state, opts.fixture, { copy: !opts.adoptFixture });
  const controller = new SimController(state, {
    speed: opts.speed,
    frozen: opts.frozen,
    manual: opts.manual,
    behaviour: opts.scenarioBehaviour,
  });
  const kube = new SimKube(opts.fixture.kube ?? [], () => controller.clock.now());
  const live = new SimLiveObjects(kube);
  // Argo Rollouts on the simulated clusters, on the controller's clock, once per pass.
  const rollouts = new SimRolloutsController(live, state, { span: (ms) => controller.clock.span(ms) });
  controller.addReconciler((now) => rollouts.reconcile(now));
  const faults = new FaultBook();
  // Tokens are "issued" when the simulator starts (the iat in RBAC denials).
  const issuedAt = rfc3339(controller.clock.now());
  const admin: SimAccount = { name: SIM_USER, issuedAt };
  const accounts = new Map(
    opts.fixture.instances.map((i) => [
      i.name,
      new Map((i.accounts ?? []).map((a) => [a.token, accountFrom(a, issuedAt)])),
    ]),
  );
  const events = new SimEventLog(state, () => controller.clock.now());
  const metrics = new SimMetrics(state, {
    behaviour: opts.scenarioBehaviour,
    faults: controller.faults,
    monotonicMs: opts.metricsClock,
  });
  const rootName = opts.rootInstance ?? opts.fixture.instances[0]?.name;
  if (rootName !== undefined && !state.instance(rootName))
    throw new Error(
      `rootInstance "${rootName}" is not an instance of this fixture (${[...state.instances.keys()].join(', ')})`,
    );
  const core: SimCore = {
    state,
    controller,
    keepAliveMs: opts.keepAliveMs ?? 15_000,
    watchResume: opts.watchResume ?? 'argocd',
    watchAnswer: opts.watchAnswer ?? 'first-message',
    frozen: !!opts.frozen,
    now: () => controller.clock.now(),
    openStreams: new Map(),
    events,
    live,
    sealedSecretHealth(cluster, namespace, name) {
      const ss = kube.clusters.get(cluster)?.get('SealedSecret', namespace, name) as
        { status?: { conditions?: { type: string; status: string; message?: string }[] } } | undefined;
      if (!ss) return undefined;
      const synced = ss.status?.conditions?.find((c) => c.type === 'Synced');
      if (!synced) return { status: 'Progressing' };
      return synced.status === 'True' ? { status: 'Healthy' } : { status: 'Degraded', message: synced.message };
    },
  };

  /** The deny windows the faults API wrote into AppProjects. */
  const faultWindows = () =>
    [...state.instances.values()].flatMap((store) =>
      [...store.projects.values()].flatMap((p) =>
        (p.spec.syncWindows ?? [])
          .filter((w) => w.description === FAULT_WINDOW_DESCRIPTION)
          .map((w) => ({ instance: store.name, project: p.metadata.name, applications: w.applications ?? [] })),
      ),
    );

  async function handleSim(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const what = url.pathname.replace(/^\/_sim\/?/, '');
    if (what === 'operations' && req.method === 'GET') {
      const instance = url.searchParams.get('instance');
      return sendJson(res, 200, instance ? state.operations.filter((o) => o.instance === instance) : state.operations);
    }
    if (what === 'operations' && req.method === 'DELETE') {
      state.operations.length = 0;
      return sendJson(res, 200, {});
    }
    if (what === 'faults' && req.method === 'POST') {
      let body: unknown;
      try {
        body = JSON.parse((await readBody(req)) || '{}');
        return sendJson(res, 200, applyFault(core, faults, body));
      } catch (error) {
        if (error instanceof FaultRequestError || error instanceof SyntaxError)
          return sendJson(res, 400, { error: error.message });
        throw error;
      }
    }
    if (what === 'faults' && req.method === 'GET')
      return sendJson(res, 200, { http: faults.http, syncWindows: faultWindows() });
    if (what === 'advance' && req.method === 'POST') {
      const body = JSON.parse((await readBody(req)) || '{}') as { ms?: unknown };
      if (typeof body.ms !== 'number' || !(body.ms >= 0))
        return sendJson(res, 400, { error: 'expected {"ms": <non-negative number>}' });
      controller.advance(body.ms);
      return sendJson(res, 200, { now: controller.clock.now().toISOString() });
    }
    if (what === 'state' && req.method === 'GET') {
      return sendJson(res, 200, {
        now: controller.clock.now().toISOString(),
        instances: [...state.instances.values()].map((s) => ({
          name: s.name,
          resourceVersion: s.resourceVersion,
          applications: s.apps.size,
          applicationSets: s.appSets.size,
          clusters: s.clusters.size,
        })),
      });
    }
    return sendJson(res, 404, { error: `no simulator endpoint ${req.method} ${url.pathname}` });
  }

  async function handleApi(
    req: IncomingMessage,
    res: ServerResponse,
    store: InstanceStore,
    path: string,
    url: URL,
  ): Promise<void> {
    const method = req.method ?? 'GET';
    const { delayMs, failure, loseAnswer } = faults.take(store.name, method, path);
    if (delayMs) await sleep(delayMs);
    if (failure?.kind === 'badBody' && failure.truncateAt !== undefined) {
      const cutAt = failure.truncateAt;
      return serveApi(req, res, store, path, url, (status, body) =>
        sendJson(res, status, (typeof body === 'string' ? body : JSON.stringify(body)).slice(0, cutAt)),
      );
    }
    if (failure) return writeHttpFailure(res, failure);
    if (!loseAnswer) return serveApi(req, res, store, path, url, (status, body) => sendJson(res, status, body));
    // Served in full (an operation started and recorded), then the connection is dropped before any answer byte.
    const drop = () => void res.destroy();
    await serveApi(req, res, store, path, url, drop).catch(drop);
  }

  async function serveApi(
    req: IncomingMessage,
    res: ServerResponse,
    store: InstanceStore,
    path: string,
    url: URL,
    answer: (status: number, body: unknown) => void,
  ): Promise<void> {
    const method = req.method ?? 'GET';
    const fail = (error: SimApiError) => answer(error.httpStatus, error.body());

    if (path === '/api/version') return sendJson(res, 200, { Version: 'v3.5.1+109ca7c' });
    const token = bearer(req);
    if (!token) return fail(new SimApiError(GrpcCode.Unauthenticated, 'no session information'));
    const account = token === store.token ? admin : accounts.get(store.name)?.get(token);
    if (!account) return fail(new SimApiError(GrpcCode.Unauthenticated, 'invalid session: token signature is invalid'));

    if (!path.startsWith('/api/v1/')) return fail(new SimApiError(GrpcCode.NotFound, 'Not Found'));
    let segments: string[];
    try {
      segments = path.slice('/api/v1/'.length).split('/').filter(Boolean).map(decodeURIComponent);
    } catch {
      return fail(new SimApiError(GrpcCode.InvalidArgument, `malformed path ${path}`));
    }
    const found = matchRoute(segments);
    if (!found) return fail(new SimApiError(GrpcCode.NotFound, 'Not Found'));
    const handler = found.route.methods[method];
    if (!handler) return fail(new SimApiError(GrpcCode.Unimplemented, 'Method Not Allowed', 405));
    const rawBody = method === 'GET' || method === 'HEAD' ? '' : await readBody(req);
    const apiReq: ApiRequest = {
      core,
      store,
      method,
      path,
      params: found.params,
      query: url.searchParams,
      headers: req.headers,
      rawBody,
      req,
      res,
      user: account.name,
      account,
    };
    const result: RouteResult = await handler(apiReq);
    if (result === 'handled') return;
    const status = result.status ?? 200;
    if ('raw' in result) return answer(status, result.raw);
    return answer(status, result.json);
  }

  const handleKube = (req: IncomingMessage, res: ServerResponse, url: URL) =>
    kube.handle(req, res, url, (op) =>
      state.record({
        at: controller.clock.now().toISOString(),
        instance: 'kube',
        cluster: op.cluster,
        method: op.method,
        path: op.path,
        body: op.body,
      }),
    );

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://sim');
    const run = async () => {
      if (url.pathname === '/metrics') return serveMetrics(req, res, metrics);
      if (url.pathname.startsWith('/_sim/') || url.pathname === '/_sim') return handleSim(req, res, url);
      if (url.pathname.startsWith('/k/') && (await handleKube(req, res, url))) return;
      const m = /^\/i\/([^/]+)(\/.*)?$/.exec(url.pathname);
      if (!m && rootName !== undefined && (url.pathname.startsWith('/api/') || url.pathname === '/api'))
        return handleApi(req, res, state.instance(rootName)!, url.pathname, url);
      const store = m ? state.instance(decodeURIComponent(m[1])) : undefined;
      if (!m || !store) {
        return sendJson(res, 404, {
          error: `no Argo CD instance at ${url.pathname}: instances are served under /i/<name> (${[...state.instances.keys()].join(', ')})`,
        });
      }
      return handleApi(req, res, store, m[2] ?? '/', url);
    };
    run().catch((error: unknown) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      const mapped = toApiError(error);
      if (mapped) return sendError(res, mapped);
      const message = error instanceof Error ? error.message : String(error);
      sendError(res, new SimApiError(GrpcCode.Internal, message));
    });
  });
  server.keepAliveTimeout = 5_000;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const base = `http://127.0.0.1:${port}`;

  let kubeServer: HttpsServer | undefined;
  let kubeBase = base;
  let kubeCaPem = '';
  if (kube.clusters.size) {
    const host = opts.host ?? '127.0.0.1';
    const tls = simTls([...new Set(['127.0.0.1', 'localhost', host])]);
    kubeCaPem = tls.caPem;
    const httpsServer = createHttpsServer({ cert: tls.certPem + tls.caPem, key: tls.keyPem }, (req, res) => {
      const url = new URL(req.url ?? '/', 'https://sim');
      handleKube(req, res, url)
        .then((handled) => {
          if (handled) return;
          res.writeHead(404, { 'content-type': 'application/json' });
          res.end(
            JSON.stringify({
              kind: 'Status',
              apiVersion: 'v1',
              status: 'Failure',
              reason: 'NotFound',
              code: 404,
              message: `simulated clusters are served under /k/<cluster> (${[...kube.clusters.keys()].join(', ')})`,
            }),
          );
        })
        .catch(() => res.destroy());
    });
    httpsServer.keepAliveTimeout = 5_000;
    await new Promise<void>((resolve, reject) => {
      httpsServer.once('error', reject);
      httpsServer.listen(0, host, () => resolve());
    });
    kubeServer = httpsServer;
    kubeBase = `https://127.0.0.1:${(httpsServer.address() as AddressInfo).port}`;
  }
  controller.start();
  const warmer = warmListCache(state);

  return {
    url: base,
    port,
    rootInstance: rootName ?? '',
    state,
    controller,
    instances: [...state.instances.values()].map((s) => ({
      name: s.name,
      url: `${base}/i/${encodeURIComponent(s.name)}`,
      token: s.token,
    })),
    kube: [...kube.clusters.values()].map((c) => ({
      cluster: c.name,
      url: `${kubeBase}/k/${encodeURIComponent(c.name)}`,
      token: c.token,
    })),
    kubeCaPem,
    metrics,
    async stop() {
      warmer.stop();
      metrics.stop();
      events.stop();
      rollouts.stop();
      controller.stop();
      kube.stop();
      for (const res of core.openStreams.keys()) res.end();
      core.openStreams.clear();
      server.closeAllConnections();
      kubeServer?.closeAllConnections();
      await Promise.all([
        new Promise<void>((resolve) => server.close(() => resolve())),
        kubeServer ? new Promise<void>((resolve) => kubeServer.close(() => resolve())) : undefined,
      ]);
    },
  };
}
