/**
 * The client's requests (reads, mutations, refresh), checked against Argo CD v3.5.1's own REST schema:
 * test/fixtures/argocd-swagger-subset.json is the part of assets/swagger.json these calls use. Every
 * path, query parameter and body field the client sends must be one the schema declares, with its type;
 * the only departures are the ones Argo CD's JSON decoding makes (argocd-facts B4/B7), listed below.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ArgoClient } from '../../src/infra/argocd/client.js';
import { instanceSchema } from '../../src/infra/config/schema.js';
import {
  sseOpen,
  startRecordingServer,
  type RecordedRequest,
  type RecordingServer,
} from '../support/recording-server.js';

interface Schema {
  type?: string;
  format?: string;
  $ref?: string;
  items?: Schema;
  properties?: Record<string, Schema>;
}
interface Parameter {
  name: string;
  in: 'path' | 'query' | 'body';
  type?: string;
  schema?: Schema;
}
const SWAGGER = JSON.parse(
  readFileSync(new URL('../fixtures/argocd-swagger-subset.json', import.meta.url), 'utf8'),
) as {
  paths: Record<string, Record<string, { operationId: string; parameters: Parameter[] }>>;
  definitions: Record<string, Schema>;
};

/**
 * Where the real JSON differs from swagger on purpose (B7): the hook strategy's `force` sits directly
 * under `hook` (Go embeds SyncStrategyApply), and int64 lists are JSON numbers (encoding/json decodes them).
 */
const KNOWN_DEPARTURES = new Set(['strategy.hook.force']);

const ROOT = '/argocd';
let server: RecordingServer;

function client() {
  return new ArgoClient(instanceSchema.parse({ name: 'eu', url: `${server.url}${ROOT}/`, token: 't', timeout: 2000 }), {
    retry: { retries: 0, baseMs: 5, maxMs: 5 },
  });
}

function operationFor(req: RecordedRequest): { operationId: string; parameters: Parameter[] } {
  const path = req.path.slice(ROOT.length);
  for (const [template, methods] of Object.entries(SWAGGER.paths)) {
    const pattern = new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`);
    const op = methods[req.method.toLowerCase()];
    if (pattern.test(path) && op) return op;
  }
  throw new Error(`${req.method} ${path} is not an operation of the schema`);
}

const resolve = (s: Schema): Schema => (s.$ref ? resolve(SWAGGER.definitions[s.$ref.split('/').pop()!]) : s);

/** Paths in `value` the schema does not declare or types differently. */
function problems(value: unknown, schema: Schema, at: string): string[] {
  if (KNOWN_DEPARTURES.has(at)) return [];
  const s = resolve(schema);
  const type = s.type ?? (s.properties ? 'object' : undefined);
  if (type === 'object') {
    if (!value || typeof value !== 'object' || Array.isArray(value)) return [`${at}: expected an object`];
    return Object.entries(value).flatMap(([k, v]) => {
      const path = at ? `${at}.${k}` : k;
      if (KNOWN_DEPARTURES.has(path)) return [];
      const prop = s.properties?.[k];
      return prop ? problems(v, prop, path) : [`${path}: not in the schema`];
    });
  }
  if (type === 'array')
    return Array.isArray(value)
      ? value.flatMap((v, i) => problems(v, s.items ?? {}, `${at}[${i}]`))
      : [`${at}: expected an array`];
  if (type === 'boolean') return typeof value === 'boolean' ? [] : [`${at}: expected a boolean`];
  if (type === 'integer' || s.format === 'int64')
    return Number.isInteger(value) ? [] : [`${at}: expected an integer (a JSON number)`];
  if (type === 'string') return typeof value === 'string' ? [] : [`${at}: expected a string`];
  return [];
}

function checkRequest(req: RecordedRequest, operationId: string): string[] {
  const op = operationFor(req);
  expect(op.operationId).toBe(operationId);
  const declared = new Set(op.parameters.filter((p) => p.in === 'query').map((p) => p.name));
  const out = [...req.query.keys()]
    .filter((k) => !declared.has(k))
    .map((k) => `query ${k}: not a parameter of ${operationId}`);
  const body = op.parameters.find((p) => p.in === 'body');
  if (body?.schema) out.push(...problems(req.json, body.schema, ''));
  else if (req.body) out.push(`${operationId} takes no body`);
  return out;
}

beforeAll(async () => {
  server = await startRecordingServer();
  server.on('POST', /\/sync$/, { body: { metadata: { name: 'a' }, spec: {} } });
  server.on('POST', /\/rollback$/, { body: { metadata: { name: 'a' }, spec: {} } });
  server.on('DELETE', /\/operation$/, { body: {} });
  server.on('GET', /\/applications\/[^/]+$/, { body: { metadata: { name: 'a' }, spec: {} } });
  server.on('GET', /\/(applications|applicationsets|clusters)$|\/(resource-tree|managed-resources|events|metadata)$/, {
    body: { metadata: {}, items: [] },
  });
  server.on('GET', /\/applicationsets\/[^/]+$/, { body: { metadata: { name: 'set' }, spec: {} } });
  server.on('GET', /\/logs$/, {
    body: '{"result":{"content":"ready","podName":"web-1","last":false}}\n{"result":{"content":"","podName":"","last":true}}\n',
  });
  server.on('GET', /\/stream\//, { stream: (res) => sseOpen(res) });
  server.on('GET', /\/resource$/, { body: { manifest: '{"kind":"Rollout","metadata":{"name":"web"}}' } });
  server.on('GET', /\/resource\/actions$/, { body: { actions: [{ name: 'resume' }] } });
  server.on('POST', /\/resource\/actions\/v2$/, { body: {} });
});
afterAll(async () => {
  await server.stop();
});
beforeEach(() => {
  server.requests.length = 0;
});

describe("the client's requests against Argo CD's swagger (v3.5.1)", () => {
  it("sync: every body field is ApplicationSyncRequest's, with its type", async () => {
    await client().sync({
      name: 'auth-config',
      project: 'payments',
      appNamespace: 'argocd',
      revision: 'v2',
      revisions: ['a', 'b'],
      sourcePositions: [1, 2],
      prune: true,
      dryRun: false,
      strategy: { hook: { force: true } },
      resources: [{ group: 'apps', kind: 'Deployment', name: 'auth', namespace: 'auth' }],
      syncOptions: { items: ['Prune=false'] },
      retryStrategy: { limit: 3, backoff: { duration: '5s', factor: 2, maxDuration: '3m' } },
      infos: [{ name: 'rollcall-run', value: 'r-abcde' }],
    });
    expect(checkRequest(server.requests[0], 'ApplicationService_Sync')).toEqual([]);
  });

  it('rollback: {name, id, prune, dryRun, appNamespace, project}, the id a JSON number', async () => {
    await client().rollback(
      { name: 'checkout-prod-eu', project: 'shop', appNamespace: 'argocd' },
      { id: 41, prune: true, dryRun: false },
    );
    const [req] = server.requests;
    expect(req.json).toEqual({
      name: 'checkout-prod-eu',
      id: 41,
      prune: true,
      dryRun: false,
      appNamespace: 'argocd',
      project: 'shop',
    });
    expect(checkRequest(req, 'ApplicationService_Rollback')).toEqual([]);
  });

  it('terminate-op: DELETE .../operation with only declared query parameters', async () => {
    await client().terminateOperation({ name: 'checkout-prod-eu', project: 'shop', appNamespace: 'argocd' });
    expect(checkRequest(server.requests[0], 'ApplicationService_TerminateOperation')).toEqual([]);
  });

  it('resource reads and actions: ApplicationResourceRequest query parameters, the v2 run body field by field', async () => {
    const ref = { name: 'web', project: 'shop', appNamespace: 'argocd' };
    const rollout = { group: 'argoproj.io', version: 'v1alpha1', kind: 'Rollout', namespace: 'web', name: 'web' };
    await client().liveResource(ref, rollout);
    await client().listResourceActions(ref, rollout);
    await client().runResourceAction(ref, rollout, 'promote-full', { replicas: '3' });
    const [get, list, run] = server.requests;
    expect(checkRequest(get, 'ApplicationService_GetResource')).toEqual([]);
    expect(checkRequest(list, 'ApplicationService_ListResourceActions')).toEqual([]);
    expect(checkRequest(run, 'ApplicationService_RunResourceActionV2')).toEqual([]);
    expect(run.json).toMatchObject({
      action: 'promote-full',
      resourceActionParameters: [{ name: 'replicas', value: '3' }],
    });
  });

  it('refresh: Get with refresh=normal|hard', async () => {
    await client().getApplication({ name: 'checkout-prod-eu', project: 'shop' }, { refresh: 'hard' });
    await client().getApplication({ name: 'checkout-prod-eu' }, { refresh: 'normal' });
    expect(server.requests.map((r) => r.query.get('refresh'))).toEqual(['hard', 'normal']);
    for (const req of server.requests) expect(checkRequest(req, 'ApplicationService_Get')).toEqual([]);
  });

  it('pod logs: every PodLogsQuery field the client sends is a query parameter of PodLogs', async () => {
    const ref = { name: 'web', appNamespace: 'argocd', project: 'shop' };
    const entries = await client().podLogs(ref, {
      podName: 'web-1',
      container: 'web',
      namespace: 'shop',
      kind: 'Deployment',
      group: 'apps',
      resourceName: 'web',
      tailLines: 50,
      sinceSeconds: 60,
      previous: true,
      follow: false,
    });
    expect(entries).toEqual([{ content: 'ready', podName: 'web-1', last: false }]);
    const [req] = server.requests;
    expect(Object.fromEntries(req.query)).toEqual({
      appNamespace: 'argocd',
      project: 'shop',
      podName: 'web-1',
      container: 'web',
      namespace: 'shop',
      kind: 'Deployment',
      group: 'apps',
      resourceName: 'web',
      tailLines: '50',
      sinceSeconds: '60',
      previous: 'true',
      follow: 'false',
    });
    expect(checkRequest(req, 'ApplicationService_PodLogs2')).toEqual([]);
  });

  it('revision metadata: versionId and sourceIndex as declared', async () => {
    await client().revisionMetadata({ name: 'web', project: 'shop' }, 'abc123', { versionId: 3, sourceIndex: 1 });
    expect(server.requests[0].path).toBe(`${ROOT}/api/v1/applications/web/revisions/abc123/metadata`);
    expect(checkRequest(server.requests[0], 'ApplicationService_RevisionMetadata')).toEqual([]);
  });

  it("every other read sends only declared query parameters (List's `fields` is read but not in swagger, B7)", async () => {
    const c = client();
    const ref = { name: 'web', appNamespace: 'argocd', project: 'shop' };
    await c.listApplications({
      selector: 'a=b',
      projects: ['p', 'q'],
      appNamespace: 'argocd',
      repo: 'r',
      name: 'web',
      resourceVersion: '1',
    });
    await c.resourceTree(ref);
    await c.managedResources(ref);
    await c.resourceEvents(ref, { uid: 'u', name: 'web-1', namespace: 'shop' });
    await c.listApplicationSets({ selector: 'a=b', projects: ['p'], appsetNamespace: 'argocd' });
    await c.getApplicationSet('set', 'argocd');
    await c.listClusters();
    for (const watch of [
      c.watchApplications(
        { selector: 'a=b', projects: ['p'], name: 'web', appNamespace: 'argocd', resourceVersion: '5' },
        { onEvent: () => {} },
      ),
      c.watchApplicationSets({ selector: 'a=b', projects: ['p'], resourceVersion: '5' }, { onEvent: () => {} }),
    ]) {
      await watch.ready;
      watch.close();
    }
    const ids = [
      'ApplicationService_List',
      'ApplicationService_ResourceTree',
      'ApplicationService_ManagedResources',
      'ApplicationService_ListResourceEvents',
      'ApplicationSetService_List',
      'ApplicationSetService_Get',
      'ClusterService_List',
      'ApplicationService_Watch',
      'ApplicationSetService_Watch',
    ];
    expect(server.requests).toHaveLength(ids.length);
    server.requests.forEach((req, i) => expect(checkRequest(req, ids[i])).toEqual([]));
    const projected = await c.listApplications({ fields: ['items.metadata.name'] }).then(() => server.requests.at(-1)!);
    expect(checkRequest(projected, 'ApplicationService_List')).toEqual([
      'query fields: not a parameter of ApplicationService_List',
    ]);
  });

  it('the checker itself catches a field the schema lacks and a number sent as a string', () => {
    const schema = { $ref: '#/definitions/applicationApplicationRollbackRequest' };
    expect(problems({ name: 'a', id: '41', revision: 'x' }, schema, '')).toEqual([
      'id: expected an integer (a JSON number)',
      'revision: not in the schema',
    ]);
  });
});
