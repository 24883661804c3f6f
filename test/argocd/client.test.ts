import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ArgoClient, createClients } from '../../src/infra/argocd/client.js';
import { ArgoError } from '../../src/infra/argocd/errors.js';
import { configSchema, instanceSchema } from '../../src/infra/config/schema.js';
import type { AppProject, Application, ApplicationSet } from '../../src/infra/argocd/types.js';
import { startRecordingServer, type RecordingServer } from '../support/recording-server.js';

const ROOT = '/argocd';
const API = `${ROOT}/api/v1`;
const TOKEN = 'tok-abc.def';

let server: RecordingServer;

function client(opts: { timeout?: number; retries?: number; retryAfterCapMs?: number } = {}) {
  const cfg = instanceSchema.parse({
    name: 'eu',
    url: `${server.url}${ROOT}/`,
    token: TOKEN,
    timeout: opts.timeout ?? 2000,
  });
  return new ArgoClient(cfg, {
    retry: { retries: opts.retries ?? 3, baseMs: 5, maxMs: 20, retryAfterCapMs: opts.retryAfterCapMs ?? 1500 },
  });
}

const app = (name: string): Application => ({
  metadata: { name, namespace: 'argocd' },
  spec: { project: 'payments', destination: { name: 'prod-eu1' } },
});

async function failure(p: Promise<unknown>): Promise<ArgoError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(ArgoError);
    return e as ArgoError;
  }
  throw new Error('expected the call to fail');
}

beforeAll(async () => {
  server = await startRecordingServer();
});
afterAll(async () => {
  await server.stop();
});
beforeEach(() => {
  server.requests.length = 0;
});

describe('request shapes', () => {
  it('lists applications under the root path with the Bearer token, repeated projects and comma-joined fields', async () => {
    server.on('GET', `${API}/applications`, {
      body: { metadata: { resourceVersion: '42' }, items: [app('a'), app('b')] },
    });
    const list = await client().listApplications({
      selector: 'team=payments,tier!=db',
      projects: ['payments', 'platform'],
      fields: ['items.metadata.name', 'items.status.sync.status'],
      resourceVersion: '41',
    });
    expect(list.items?.map((a) => a.metadata.name)).toEqual(['a', 'b']);
    expect(list.metadata.resourceVersion).toBe('42');
    const [req] = server.requestsTo(`${API}/applications`);
    expect(req.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(req.query.getAll('projects')).toEqual(['payments', 'platform']);
    expect(req.query.get('selector')).toBe('team=payments,tier!=db');
    expect(req.query.getAll('fields')).toEqual(['items.metadata.name,items.status.sync.status']);
    expect(req.query.get('resourceVersion')).toBe('41');
    expect(req.url).toContain('projects=payments&projects=platform');
  });

  it('turns a null items list into an empty array', async () => {
    server.on('GET', `${API}/applications`, { body: { metadata: {}, items: null } });
    expect((await client().listApplications()).items).toEqual([]);
  });

  it('gets an app with refresh, project and appNamespace, and escapes the name', async () => {
    server.on('GET', `${API}/applications/pay%20ments`, { body: app('pay ments') });
    await client().getApplication(
      { name: 'pay ments', project: 'payments', appNamespace: 'team-a' },
      { refresh: 'hard' },
    );
    const [req] = server.requestsTo(`${API}/applications/pay%20ments`);
    expect(Object.fromEntries(req.query)).toEqual({ project: 'payments', appNamespace: 'team-a', refresh: 'hard' });
  });

  it('reads the resource tree and managed resources', async () => {
    server.on('GET', `${API}/applications/web/resource-tree`, {
      body: { nodes: [{ version: 'v1', kind: 'Pod', name: 'web-1' }] },
    });
    server.on('GET', `${API}/applications/web/managed-resources`, { body: { items: null } });
    const c = client();
    expect((await c.resourceTree({ name: 'web' })).nodes[0].name).toBe('web-1');
    expect((await c.managedResources({ name: 'web', project: 'p' })).items).toEqual([]);
    expect(server.requestsTo(`${API}/applications/web/managed-resources`)[0].query.get('project')).toBe('p');
  });

  it('sends the full sync body in the real JSON shape (B4)', async () => {
    server.on('POST', `${API}/applications/auth-config/sync`, { body: app('auth-config') });
    await client().sync({
      name: 'auth-config',
      project: 'payments',
      revision: 'v2.15.1',
      prune: true,
      dryRun: false,
      strategy: { hook: { force: true } },
      resources: [{ group: 'apps', kind: 'Deployment', name: 'auth', namespace: 'auth' }],
      syncOptions: { items: ['Prune=false', 'ServerSideApply=true'] },
      retryStrategy: { limit: 3, backoff: { duration: '5s', factor: 2, maxDuration: '3m' } },
      sourcePositions: ['1', 2] as unknown as number[],
      revisions: ['a', 'b'],
    });
    const [req] = server.requestsTo(`${API}/applications/auth-config/sync`, 'POST');
    expect(req.json).toEqual({
      name: 'auth-config',
      project: 'payments',
      revision: 'v2.15.1',
      revisions: ['a', 'b'],
      sourcePositions: [1, 2],
      prune: true,
      dryRun: false,
      strategy: { hook: { force: true } },
      resources: [{ group: 'apps', kind: 'Deployment', name: 'auth', namespace: 'auth' }],
      syncOptions: { items: ['Prune=false', 'ServerSideApply=true'] },
      retryStrategy: { limit: 3, backoff: { duration: '5s', factor: 2, maxDuration: '3m' } },
    });
    expect(req.headers['content-type']).toContain('application/json');
  });

  it('terminates with DELETE .../operation and patches with the patch as a JSON string', async () => {
    server.on('DELETE', `${API}/applications/web/operation`, { body: {} });
    server.on('PATCH', `${API}/applications/web`, { body: app('web') });
    const c = client();
    await c.terminateOperation({ name: 'web', project: 'shop' });
    await c.patchApplication({ name: 'web' }, { spec: { syncPolicy: { automated: null } } }, 'merge');
    expect(server.requestsTo(`${API}/applications/web/operation`, 'DELETE')[0].query.get('project')).toBe('shop');
    expect(server.requestsTo(`${API}/applications/web`, 'PATCH')[0].json).toEqual({
      name: 'web',
      patch: '{"spec":{"syncPolicy":{"automated":null}}}',
      patchType: 'merge',
    });
  });

  it('upserts an ApplicationSet with the full object via POST ?upsert=true&dryRun=true', async () => {
    const appSet: ApplicationSet = {
      metadata: { name: 'payments', namespace: 'argocd' },
      spec: {
        generators: [],
        template: { metadata: {}, spec: { project: 'payments', destination: {} } },
        strategy: { type: 'RollingSync' },
      },
    };
    server.on('POST', `${API}/applicationsets`, { body: appSet });
    server.on('GET', `${API}/applicationsets`, { body: { metadata: {}, items: [appSet] } });
    server.on('GET', `${API}/applicationsets/payments`, { body: appSet });
    const c = client();
    await c.upsertApplicationSet(appSet, { dryRun: true });
    await c.listApplicationSets({ projects: ['payments'], selector: 'tier=web' });
    await c.getApplicationSet('payments', 'argocd');
    const [post] = server.requestsTo(`${API}/applicationsets`, 'POST');
    expect(Object.fromEntries(post.query)).toEqual({ upsert: 'true', dryRun: 'true' });
    expect(post.json).toEqual(appSet);
    expect(Object.fromEntries(server.requestsTo(`${API}/applicationsets`, 'GET')[0].query)).toEqual({
      projects: 'payments',
      selector: 'tier=web',
    });
    expect(server.requestsTo(`${API}/applicationsets/payments`)[0].query.get('appsetNamespace')).toBe('argocd');
  });

  it('lists clusters and drops their credentials', async () => {
    server.on('GET', `${API}/clusters`, {
      body: { items: [{ name: 'prod-eu1', server: 'https://1.2.3.4', config: { bearerToken: 'secret' } }] },
    });
    const clusters = await client().listClusters();
    expect(clusters.items).toEqual([{ name: 'prod-eu1', server: 'https://1.2.3.4' }]);
    expect(JSON.stringify(clusters)).not.toContain('secret');
  });

  it('gets, lists and updates an AppProject with PUT {project} (the resourceVersion travels in the object)', async () => {
    const project: AppProject = {
      metadata: { name: 'pay ments', namespace: 'argocd', resourceVersion: '41' },
      spec: { syncWindows: [{ kind: 'deny', schedule: '* * * * *', duration: '1h', applications: ['*'] }] },
    };
    server.on('GET', `${API}/projects/pay%20ments`, { body: project });
    server.on('GET', `${API}/projects`, { body: { metadata: {}, items: [project] } });
    server.on('PUT', `${API}/projects/pay%20ments`, {
      body: { ...project, metadata: { ...project.metadata, resourceVersion: '42' } },
    });
    const c = client();
    expect(await c.getProject('pay ments')).toEqual(project);
    expect((await c.listProjects()).items).toEqual([project]);
    const updated = await c.updateProject(project);
    expect(updated.metadata.resourceVersion).toBe('42');
    expect(server.requestsTo(`${API}/projects/pay%20ments`, 'PUT')[0].json).toEqual({ project });
  });

  it('creates one client per configured instance', () => {
    const config = configSchema.parse({
      instances: [
        { name: 'eu', url: 'https://eu.example', token: 't1' },
        { name: 'us', url: 'https://us.example/argocd', token: 't2' },
      ],
    });
    const clients = createClients(config);
    expect([...clients.keys()]).toEqual(['eu', 'us']);
    expect(clients.get('us')?.instance).toBe('us');
  });
});

describe('retries', () => {
  it('retries a 502 and succeeds with two requests', async () => {
    server.on('GET', `${API}/applications/web`, { status: 502, body: 'Bad Gateway' }, { body: app('web') });
    const got = await client().getApplication({ name: 'web' });
    expect(got.metadata.name).toBe('web');
    expect(server.requestsTo(`${API}/applications/web`)).toHaveLength(2);
  });

  it('honours Retry-After seconds on 429', async () => {
    server.on(
      'GET',
      `${API}/clusters`,
      { status: 429, headers: { 'retry-after': '1' }, body: {} },
      { body: { items: [] } },
    );
    const started = Date.now();
    await client().listClusters();
    const times = server.requestsTo(`${API}/clusters`);
    expect(times).toHaveLength(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
  });

  it('caps a huge Retry-After at retryAfterCapMs', async () => {
    server.on(
      'GET',
      `${API}/clusters`,
      { status: 503, headers: { 'retry-after': '3600' }, body: {} },
      { body: { items: [] } },
    );
    const started = Date.now();
    await client({ retryAfterCapMs: 200 }).listClusters();
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(190);
    expect(elapsed).toBeLessThan(1000);
  });

  it('does not retry a 403 and names the permission, project and app', async () => {
    server.on('POST', `${API}/applications/web/sync`, {
      status: 403,
      body: { error: 'permission denied', code: 7, message: 'permission denied' },
    });
    const error = await failure(client().sync({ name: 'web', project: 'shop' }));
    expect(server.requestsTo(`${API}/applications/web/sync`)).toHaveLength(1);
    expect(error.kind).toBe('forbidden');
    expect(error.status).toBe(403);
    expect(error.message).toContain('lacks `sync` on applications in project shop (app web on instance eu)');
    expect(error.message).toContain('p, role:rollcall, applications, sync, shop/*, allow');
  });

  it('gives up after the configured retries with an unavailable error', async () => {
    server.on('GET', `${API}/applications`, { status: 503, body: { message: 'repo server down', code: 14 } });
    const error = await failure(client({ retries: 2 }).listApplications());
    expect(server.requestsTo(`${API}/applications`)).toHaveLength(3);
    expect(error.kind).toBe('unavailable');
    expect(error.message).toContain('repo server down');
  });

  it('retries a reset connection on reads', async () => {
    server.on('GET', `${API}/applications/web`, { reset: true }, { body: app('web') });
    await client().getApplication({ name: 'web' });
    expect(server.requestsTo(`${API}/applications/web`)).toHaveLength(2);
  });

  it('retries a read whose answer was cut off by a dropped connection after its 200, and says the connection dropped once retries run out', async () => {
    const cutOff = {
      stream: (res: import('node:http').ServerResponse) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"metadata":{"name":');
        setTimeout(() => res.socket?.destroy(), 20);
      },
    };
    server.on('GET', `${API}/applications/web`, cutOff, { body: app('web') });
    await expect(client().getApplication({ name: 'web' })).resolves.toMatchObject({ metadata: { name: 'web' } });
    expect(server.requestsTo(`${API}/applications/web`)).toHaveLength(2);

    server.on('GET', `${API}/applications/cut`, cutOff);
    const error = await failure(client({ retries: 1 }).getApplication({ name: 'cut' }));
    expect(server.requestsTo(`${API}/applications/cut`)).toHaveLength(2);
    expect(error.kind).toBe('network');
    expect(error.message).toContain('ECONNRESET');
  });

  it('times out with the configured value and says so', async () => {
    server.on('GET', `${API}/applications/slow`, { delayMs: 400, body: app('slow') });
    const error = await failure(client({ timeout: 100, retries: 1 }).getApplication({ name: 'slow' }));
    expect(error.kind).toBe('timeout');
    expect(error.message).toContain('within 100ms');
    expect(server.requestsTo(`${API}/applications/slow`)).toHaveLength(2);
  });

  it('does not retry a sync that may have been applied (502): it fails maybe-applied for the caller to verify', async () => {
    server.on(
      'POST',
      `${API}/applications/auth-config/sync`,
      { status: 502, body: 'upstream reset' },
      { body: app('auth-config') },
    );
    const error = await failure(client().sync({ name: 'auth-config' }));
    expect(server.requestsTo(`${API}/applications/auth-config/sync`)).toHaveLength(1);
    expect(error.maybeApplied).toBe(true);
  });

  it('reports a first-try "another operation" as operation_in_progress, not applied', async () => {
    server.on('POST', `${API}/applications/web/sync`, {
      status: 400,
      body: {
        error: 'another operation is already in progress',
        code: 9,
        message: 'another operation is already in progress',
      },
    });
    const error = await failure(client().sync({ name: 'web' }));
    expect(error.kind).toBe('operation_in_progress');
    expect(error.maybeApplied).toBe(false);
    expect(error.message).toContain('wait for it to finish, or terminate it');
  });

  it('does not retry a JSON patch that may have been applied (502)', async () => {
    server.on('PATCH', `${API}/applications/web`, { status: 502, body: '' }, { body: app('web') });
    const error = await failure(
      client().patchApplication({ name: 'web' }, [{ op: 'add', path: '/metadata/labels/x', value: 'y' }], 'json'),
    );
    expect(server.requestsTo(`${API}/applications/web`, 'PATCH')).toHaveLength(1);
    expect(error.maybeApplied).toBe(true);
  });

  it('treats a retried terminate that finds nothing running as done', async () => {
    server.on(
      'DELETE',
      `${API}/applications/web/operation`,
      { status: 504, body: '' },
      { status: 400, body: { code: 9, message: 'Unable to terminate operation. No operation is in progress' } },
    );
    await expect(client().terminateOperation({ name: 'web' })).resolves.toBeUndefined();
  });
});

describe('error mapping', () => {
  it('401: says the token is invalid or expired and how to mint one', async () => {
    server.on('GET', `${API}/applications`, {
      status: 401,
      body: { code: 16, message: 'invalid session: token is expired' },
    });
    const error = await failure(client().listApplications());
    expect(error.kind).toBe('unauthenticated');
    expect(error.message).toContain('instance eu rejected the token');
    expect(error.message).toContain('argocd account generate-token');
    expect(error.message).not.toContain(TOKEN);
  });

  it('403 without project: warns that a missing app also answers 403 (B1)', async () => {
    server.on('GET', `${API}/applications/ghost`, { status: 403, body: { code: 7, message: 'permission denied' } });
    const error = await failure(client().getApplication({ name: 'ghost' }));
    expect(error.message).toContain('lacks `get` on applications in project <project>');
    expect(error.message).toContain('If app ghost does not exist, Argo CD answers 403 too');
  });

  it('403 on patch asks for update', async () => {
    server.on('PATCH', `${API}/applications/web`, { status: 403, body: { code: 7, message: 'permission denied' } });
    const error = await failure(client().patchApplication({ name: 'web', project: 'shop' }, {}, 'merge'));
    expect(error.message).toContain('p, role:rollcall, applications, update, shop/*, allow');
  });

  it('403 from a sync window passes Argo CD’s reason through', async () => {
    server.on('POST', `${API}/applications/web/sync`, {
      status: 403,
      body: { code: 7, message: 'cannot sync: blocked by sync window' },
    });
    const error = await failure(client().sync({ name: 'web' }));
    expect(error.kind).toBe('forbidden');
    expect(error.message).toContain('blocked by a sync window');
    expect(error.argoMessage).toBe('cannot sync: blocked by sync window');
  });

  it('404: no such app on instance', async () => {
    server.on('GET', `${API}/applications/nope`, {
      status: 404,
      body: { code: 5, message: 'applications.argoproj.io "nope" not found' },
    });
    const error = await failure(client().getApplication({ name: 'nope', project: 'shop' }));
    expect(error.kind).toBe('not_found');
    expect(error.message).toMatch(/^No such app nope on instance eu \(project shop\)\./);
  });

  it('400 FailedPrecondition passes the message through as conflict', async () => {
    server.on('POST', `${API}/applications/web/sync`, {
      status: 400,
      body: { code: 9, message: 'application is deleting' },
    });
    const error = await failure(client().sync({ name: 'web' }));
    expect(error.kind).toBe('conflict');
    expect(error.message).toContain('application is deleting');
    expect(error.grpcCode).toBe(9);
  });

  it('409 Aborted on a project update is `modified`: read it again; 403 names the projects RBAC line', async () => {
    const message =
      'Operation cannot be fulfilled on appprojects.argoproj.io "default": the object has been modified; please apply your changes to the latest version and try again';
    server.on('PUT', `${API}/projects/default`, { status: 409, body: { code: 10, message } });
    const project: AppProject = { metadata: { name: 'default', resourceVersion: '7' }, spec: {} };
    const stale = await failure(client().updateProject(project));
    expect(stale.kind).toBe('modified');
    expect(stale.code).toBe('argocd_modified');
    expect(stale.message).toMatch(/^AppProject default on instance eu changed since rollcall read it/);
    expect(server.requestsTo(`${API}/projects/default`, 'PUT')).toHaveLength(1);

    server.on('PUT', `${API}/projects/payments`, {
      status: 403,
      body: {
        code: 7,
        message: 'permission denied: projects, update, payments, sub: rollcall, iat: 2026-01-01T00:00:00Z',
      },
    });
    const denied = await failure(client().updateProject({ metadata: { name: 'payments' }, spec: {} }));
    expect(denied.message).toContain('p, role:rollcall, projects, update, payments, allow');
    server.on('GET', `${API}/projects/gone`, {
      status: 404,
      body: { code: 5, message: 'appprojects.argoproj.io "gone" not found' },
    });
    expect((await failure(client().getProject('gone'))).message).toMatch(/^No such AppProject gone on instance eu\./);
  });

  it('connection refused: network error naming the URL, retried', async () => {
    const cfg = instanceSchema.parse({ name: 'gone', url: 'http://127.0.0.1:1/argocd', token: 't', timeout: 500 });
    const error = await failure(new ArgoClient(cfg, { retry: { retries: 1, baseMs: 1, maxMs: 2 } }).listClusters());
    expect(error.kind).toBe('network');
    expect(error.message).toContain('Cannot reach Argo CD instance gone at http://127.0.0.1:1/argocd: ECONNREFUSED');
  });
});

describe("2xx answers that are not Argo CD's JSON", () => {
  const LIST = `${API}/applications`;

  it.each([
    ['cut short', '{"items":[{"metadata":', 'not JSON', '`{"items":[{"metadata":`'],
    ["a proxy's HTML page", '<html><body>Sign in</body></html>', 'not JSON', '`<html><body>Sign in</body></html>`'],
    ['null', 'null', 'expected an object with an items list', '`null`'],
    ['a JSON string', '"ok"', 'expected an object with an items list', '`"ok"`'],
    ['an object without items', '{"metadata":{}}', 'items', '`{"metadata":{}}`'],
    ['empty', '', 'not JSON', 'it is empty'],
  ])(
    "a list answered %s fails as bad_response naming the instance, GET /applications and the body's start",
    async (_what, body, problem, start) => {
      server.on('GET', LIST, { body });
      const error = await failure(client().listApplications());
      expect(error.code).toBe('argocd_bad_response');
      expect(error.kind).toBe('bad_response');
      expect(error.message).toContain(
        'Argo CD instance eu answered GET /applications with a body that is not what Argo CD sends',
      );
      expect(error.message).toContain(problem);
      expect(error.message).toContain(start);
      // Garbage is not retried: the same server would answer the same.
      expect(server.requestsTo(LIST)).toHaveLength(1);
    },
  );

  it('quotes at most about 100 printable characters of the body, and never a token it echoes', async () => {
    const echoed = `<pre>\u0007Authorization: Bearer ${TOKEN} ${'x'.repeat(300)}</pre>`;
    server.on('GET', LIST, { body: echoed });
    const error = await failure(client().listApplications());
    const quoted = /it starts `([^`]*)`/.exec(error.message)![1];
    expect(quoted.length).toBeLessThanOrEqual(101);
    expect(quoted).toMatch(/^<pre>\?Authorization: Bearer \[redacted\] x+…$/);
    expect(error.message).not.toContain(TOKEN);
  });

  it('skips a null item with a warning in plain words, and reads the rest', async () => {
    server.on('GET', LIST, { body: { metadata: { resourceVersion: '7' }, items: [null, app('a')] } });
    const list = await client().listApplications();
    expect(list.items.map((a) => a.metadata.name)).toEqual(['a']);
    expect(list.warnings).toEqual(['Argo CD instance eu listed an application with no data (null); skipped it']);
    server.on('GET', `${API}/clusters`, { body: { items: [null, null] } });
    expect((await client().listClusters()).warnings).toEqual([
      'Argo CD instance eu listed 2 clusters with no data (null); skipped them',
    ]);
  });

  it('fails a list whose item is not an object with metadata.name', async () => {
    server.on('GET', LIST, { body: { metadata: {}, items: [app('a'), 'b'] } });
    const error = await failure(client().listApplications());
    expect(error.code).toBe('argocd_bad_response');
    expect(error.message).toContain('expected items.1 to be an object with metadata.name');
  });

  it('fails a get that answers a non-object, and a sync answered with garbage says it may have been applied', async () => {
    server.on('GET', `${API}/applications/web`, { body: '"web"' });
    const got = await failure(client().getApplication({ name: 'web' }));
    expect(got).toMatchObject({ code: 'argocd_bad_response', maybeApplied: false });
    expect(got.message).toContain('answered GET /applications/web');
    server.on('POST', `${API}/applications/web/sync`, { body: '<html>OK</html>' });
    const synced = await failure(client().sync({ name: 'web' }));
    expect(synced).toMatchObject({ code: 'argocd_bad_response', maybeApplied: true });
    expect(server.requestsTo(`${API}/applications/web/sync`)).toHaveLength(1);
  });

  it('fails pod logs with a line that is not JSON instead of showing the lines around it as all there is', async () => {
    server.on('GET', `${API}/applications/web/logs`, {
      body: '{"result":{"content":"a","podName":"web-1","last":false}}\n<html>gateway',
    });
    const error = await failure(client().podLogs({ name: 'web' }, {}));
    expect(error.code).toBe('argocd_bad_response');
    expect(error.message).toContain('GET /applications/web/logs');
    expect(error.message).toContain('`<html>gateway`');
  });
});

describe('podLogs', () => {
  it('reads the newline-delimited {result} stream, drops the closing entry, and turns an {error} line into an Argo CD error', async () => {
    server.on('GET', `${API}/applications/web/logs`, {
      body: '{"result":{"content":"a","podName":"web-1","last":false}}\n\n{"result":{"content":"","podName":"","last":true}}\n',
    });
    expect(await client().podLogs({ name: 'web' }, { tailLines: 5 })).toEqual([
      { content: 'a', podName: 'web-1', last: false },
    ]);
    server.on('GET', `${API}/applications/busy/logs`, {
      body: '{"error":{"grpc_code":3,"http_code":400,"message":"max pods to view logs are reached. Please provide more granular query","http_status":"Bad Request"}}\n',
    });
    const e = await failure(client().podLogs({ name: 'busy' }, {}));
    expect(e).toMatchObject({ kind: 'invalid', argoMessage: expect.stringContaining('max pods to view logs') });
    // An app without matching pods answers an empty body.
    server.on('GET', `${API}/applications/idle/logs`, { body: '' });
    expect(await client().podLogs({ name: 'idle' }, {})).toEqual([]);
  });

  it('needs `logs, get`: a 403 names that permission', async () => {
    server.on('GET', `${API}/applications/web/logs`, {
      status: 403,
      body: { error: 'permission denied', code: 7, message: 'permission denied' },
    });
    const e = await failure(client().podLogs({ name: 'web', project: 'shop' }, {}));
    expect(e.message).toContain('p, role:rollcall, logs, get, shop/*, allow');
  });
});

describe('a list read as it arrives', () => {
  /** A server that sends the first part of a list, then the rest only when `release` is called. */
  async function halfSentList(first: string, rest: string) {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const raw = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(first);
      void released.then(() => res.end(rest));
    });
    await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve));
    const { port } = raw.address() as AddressInfo;
    const cfg = instanceSchema.parse({ name: 'eu', url: `http://127.0.0.1:${port}`, token: TOKEN, timeout: 2000 });
    const stop = () => new Promise<void>((resolve) => raw.close(() => resolve()));
    return { api: new ArgoClient(cfg, { retry: { retries: 0, baseMs: 5, maxMs: 20 } }), release, stop };
  }

  it('hands each app to `each` as soon as it has arrived, and the list keeps what `each` returned', async () => {
    const body = JSON.stringify({ metadata: { resourceVersion: '9' }, items: [app('a'), app('b'), app('c')] });
    const cut = body.indexOf('{"metadata":{"name":"c"');
    const server = await halfSentList(body.slice(0, cut + 5), body.slice(cut + 5));
    try {
      const seen: string[] = [];
      const listing = server.api.listApplications(
        {},
        {
          each: (a) => {
            seen.push(a.metadata.name);
            return { ...a, metadata: { name: a.metadata.name.toUpperCase() } };
          },
        },
      );
      await expect.poll(() => seen).toEqual(['a', 'b']);
      server.release();
      const list = await listing;
      expect(seen).toEqual(['a', 'b', 'c']);
      expect(list.items.map((a) => a.metadata)).toEqual([{ name: 'A' }, { name: 'B' }, { name: 'C' }]);
      expect(list.metadata).toEqual({ resourceVersion: '9' });
    } finally {
      await server.stop();
    }
  });

  it.each([
    ['{"metadata":{"resourceVersion":"9"},"items":[', ['9']],
    ['{"metadata":{},"items":[', []],
    ['{"metadata":{"resourceVersion":9},"items":[', []],
    ['{"metadata":null,"items":[', []],
  ])('tells the version of %s as soon as it has arrived, and only one that reads as a version', async (head, want) => {
    const server = await halfSentList(`${head}{"metadata":{"name":"a"}}`, ']}');
    try {
      const told: string[] = [];
      const listing = server.api.listApplications({}, { onResourceVersion: (v) => told.push(v) }).catch((e) => e);
      // The list is still open: its version is known before its items are all in.
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(told).toEqual(want);
      server.release();
      await listing;
      expect(told).toEqual(want);
    } finally {
      await server.stop();
    }
  });

  it('fails at the first item that is not an app, quoting the start of the body, and reads no further', async () => {
    const server = await halfSentList('{"metadata":{},"items":[{"metadata":{"name":"a"}},"b",', '{"metadata":{}}]}');
    try {
      const seen: string[] = [];
      const error = await failure(server.api.listApplications({}, { each: (a) => (seen.push(a.metadata.name), a) }));
      expect(error.code).toBe('argocd_bad_response');
      expect(error.message).toContain('expected items.1 to be an object with metadata.name');
      expect(error.message).toContain('it starts `{"metadata":{},"items":[{"metadata":{"name":"a"}},"b",`');
      expect(seen).toEqual(['a']);
    } finally {
      server.release();
      await server.stop();
    }
  });

  it("passes on an error of `each` itself as it is: a caller's bug is not Argo CD's bad answer", async () => {
    const server = await halfSentList('{"items":[{"metadata":{"name":"a"}}', ']}');
    server.release();
    try {
      const bug = new TypeError('each broke');
      await expect(
        server.api.listApplications(
          {},
          {
            each: () => {
              throw bug;
            },
          },
        ),
      ).rejects.toBe(bug);
    } finally {
      await server.stop();
    }
  });
});
