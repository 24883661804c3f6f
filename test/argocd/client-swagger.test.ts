/**
 * Every request the Argo CD client sends matches an operation of Argo CD v3.5.1's swagger
 * (reference/argocd-swagger.json): its method and path, and each query parameter by name. The one
 * known exception is List's `fields` projection, which the server reads but swagger leaves out (B7).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ArgoClient } from '../../src/argocd/client.js';
import type { Application, ApplicationSet } from '../../src/argocd/types.js';
import { instanceSchema } from '../../src/config/schema.js';
import { sseOpen, startRecordingServer, type RecordingServer } from '../support/recording-server.js';

// Derived from reference argocd-swagger.json (v3.5.1): each path's methods, operationId and query parameter names.
const SWAGGER_FILE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/argocd-swagger-operations.json');

interface Operation {
  method: string;
  template: string;
  pattern: RegExp;
  operationId: string;
  query: Set<string>;
}

function operations(): Operation[] {
  const swagger = JSON.parse(readFileSync(SWAGGER_FILE, 'utf8')) as { paths: Record<string, Record<string, { operationId: string; query: string[] }>> };
  const out: Operation[] = [];
  for (const [template, ops] of Object.entries(swagger.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      const pattern = new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`);
      out.push({ method, template, pattern, operationId: op.operationId, query: new Set(op.query) });
    }
  }
  // Fewer placeholders first: `/applications/{name}/sync` must not be taken for a template of variables only.
  return out.sort((a, b) => (a.template.match(/\{/g)?.length ?? 0) - (b.template.match(/\{/g)?.length ?? 0));
}

/** Query parameters Argo CD reads that swagger does not list (argocd-facts B7). */
const UNDOCUMENTED: Record<string, string[]> = { ApplicationService_List: ['fields'] };

let server: RecordingServer;
const ROOT = '/argocd';

beforeAll(async () => {
  server = await startRecordingServer();
  const app: Application = { metadata: { name: 'web', namespace: 'argocd' }, spec: { project: 'p', destination: { name: 'c' } } };
  server.on('GET', /\/stream\//, { stream: (res) => sseOpen(res) });
  server.on('GET', /\/logs$/, { body: '{"result":{"content":"x","podName":"web-1","last":false}}\n{"result":{"last":true}}\n' });
  for (const method of ['GET', 'POST', 'PATCH', 'PUT', 'DELETE']) server.on(method, /\/api\/v1\/(?!stream\/|applications\/[^/]+\/logs$)/, { body: { items: [], ...app } });
});
afterAll(async () => {
  await server.stop();
});

describe('request shapes against the swagger', () => {
  it('sends only query parameters the swagger operation declares, on paths it declares', async () => {
    const cfg = instanceSchema.parse({ name: 'eu', url: `${server.url}${ROOT}`, token: 't', timeout: 2000 });
    const client = new ArgoClient(cfg, { retry: { retries: 0, baseMs: 1, maxMs: 1 } });
    const ref = { name: 'web', appNamespace: 'argocd', project: 'p' };
    await client.listApplications({ selector: 'a=b', projects: ['p', 'q'], appNamespace: 'argocd', repo: 'r', name: 'web', resourceVersion: '1', fields: ['items.metadata.name'] });
    await client.getApplication(ref, { refresh: 'hard' });
    await client.resourceTree(ref);
    await client.managedResources(ref);
    await client.resourceEvents(ref, { uid: 'u', name: 'web-1', namespace: 'ns' });
    await client.revisionMetadata(ref, 'abc123', { versionId: 3, sourceIndex: 1 });
    const logs = await client.podLogs(ref, { podName: 'web-1', container: 'c', namespace: 'ns', kind: 'Deployment', group: 'apps', resourceName: 'web', tailLines: 50, sinceSeconds: 60, previous: true, follow: false });
    expect(logs).toEqual([{ content: 'x', podName: 'web-1', last: false }]);
    await client.sync({ name: 'web', appNamespace: 'argocd', project: 'p', prune: true });
    await client.terminateOperation(ref);
    await client.patchApplication(ref, { spec: {} }, 'merge');
    await client.listApplicationSets({ selector: 'a=b', projects: ['p'], appsetNamespace: 'argocd' });
    await client.getApplicationSet('set', 'argocd');
    await client.upsertApplicationSet({ metadata: { name: 'set' }, spec: {} } as ApplicationSet, { dryRun: true });
    await client.listClusters();
    for (const watch of [
      client.watchApplications({ selector: 'a=b', projects: ['p'], name: 'web', appNamespace: 'argocd', resourceVersion: '5' }, { onEvent: () => {} }),
      client.watchApplicationSets({ selector: 'a=b', projects: ['p'], resourceVersion: '5' }, { onEvent: () => {} }),
    ]) {
      await watch.ready;
      watch.close();
    }

    const ops = operations();
    const seen = new Set<string>();
    for (const req of server.requests) {
      const apiPath = req.path.slice(ROOT.length);
      const op = ops.find((o) => o.method === req.method && o.pattern.test(apiPath));
      expect(op, `${req.method} ${apiPath} is not in the swagger`).toBeDefined();
      seen.add(op!.operationId);
      for (const name of new Set(req.query.keys())) {
        const known = op!.query.has(name) || (UNDOCUMENTED[op!.operationId] ?? []).includes(name);
        expect(known, `${op!.operationId} (${op!.template}) has no query parameter \`${name}\``).toBe(true);
      }
    }
    expect(seen.size).toBe(16);
    // The read verbs' operations were among those checked, with their parameters.
    expect(seen).toContain('ApplicationService_PodLogs2');
    expect(seen).toContain('ApplicationService_RevisionMetadata');
    const logsQuery = server.requestsTo(`${ROOT}/api/v1/applications/web/logs`)[0].query;
    expect(Object.fromEntries(logsQuery)).toEqual({
      appNamespace: 'argocd',
      project: 'p',
      podName: 'web-1',
      container: 'c',
      namespace: 'ns',
      kind: 'Deployment',
      group: 'apps',
      resourceName: 'web',
      tailLines: '50',
      sinceSeconds: '60',
      previous: 'true',
      follow: 'false',
    });
  });

  it('turns a stream error line of the logs answer into an Argo CD error', async () => {
    server.on('GET', /\/applications\/broken\/logs$/, { body: '{"error":{"grpc_code":3,"http_code":400,"message":"max pods to view logs are reached. Please provide more granular query","http_status":"Bad Request"}}\n' });
    const cfg = instanceSchema.parse({ name: 'eu', url: `${server.url}${ROOT}`, token: 't', timeout: 2000 });
    const client = new ArgoClient(cfg, { retry: { retries: 0, baseMs: 1, maxMs: 1 } });
    await expect(client.podLogs({ name: 'broken' }, {})).rejects.toMatchObject({ kind: 'invalid', argoMessage: expect.stringContaining('max pods to view logs') });
  });
});
