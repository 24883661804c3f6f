/**
 * An Argo CD client nobody here wrote — argoproj-labs' argocd-mcp (npm `argocd-mcp`, pinned in
 * devDependencies) — pointed at the simulator's root path, as it would be at an Argo CD server run
 * without --rootpath. Every tool it offers for reading and syncing must get a real answer.
 */
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { SimServer } from '../../src/sim/server.js';
import { startTestSim } from '../support/sim.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const MCP_BIN = path.join(ROOT, 'node_modules/argocd-mcp/dist/index.js');

let sim: SimServer;
let client: Client;

async function tool<T = any>(name: string, args: Record<string, unknown> = {}): Promise<T> {
  const result = (await client.callTool({ name, arguments: args })) as {
    isError?: boolean;
    content: { type: string; text: string }[];
    structuredContent?: unknown;
  };
  const text = result.content.map((c) => c.text).join('');
  if (result.isError) throw new Error(`${name} failed: ${text}`);
  return (result.structuredContent ?? JSON.parse(text)) as T;
}

beforeAll(async () => {
  sim = await startTestSim({ scenario: 'seed-outage', manual: true });
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [MCP_BIN, 'stdio'],
    env: {
      ...(process.env as Record<string, string>),
      ARGOCD_BASE_URL: sim.url,
      ARGOCD_API_TOKEN: sim.instances[0].token,
      LOG_LEVEL: 'silent',
    },
    stderr: 'ignore',
  });
  client = new Client({ name: 'rollcall-interop-test', version: '0.0.0' });
  await client.connect(transport);
}, 30_000);

afterAll(async () => {
  await client?.close();
  await sim?.stop();
});

describe('argocd-mcp against the simulator served at the root path', () => {
  it('serves the first instance at /api/v1 as Argo CD without --rootpath', () => {
    expect(sim.rootInstance).toBe(sim.instances[0].name);
  });

  it('lists clusters and applications', async () => {
    const clusters = await tool('list_clusters');
    expect(clusters.items.length).toBe(12);
    expect(clusters.items[0]).toMatchObject({
      server: expect.stringMatching(/^https:\/\//),
      connectionState: { status: 'Successful' },
    });
    const apps = await tool('list_applications', { limit: 1000 });
    expect(apps.metadata.totalItems).toBe(sim.state.instance(sim.rootInstance)!.apps.size);
    expect(apps.items[0].status.sync.status).toMatch(/Synced|OutOfSync/);
  });

  it('gets one application, its resource tree, managed resources and events', async () => {
    const store = sim.state.instance(sim.rootInstance)!;
    const degraded = [...store.apps.values()].find((a) => a.status?.health?.status === 'Degraded')!;
    const name = degraded.metadata.name;
    const app = await tool('get_application', { applicationName: name });
    expect(app.metadata.name).toBe(name);
    expect(app.status.health.status).toBe('Degraded');

    const tree = await tool('get_application_resource_tree', { applicationName: name });
    const pod = tree.nodes.find((n: any) => n.kind === 'Pod');
    expect(pod.health.status).toBe('Degraded');

    const managed = await tool('get_application_managed_resources', { applicationName: name });
    expect(managed.items.length).toBe(degraded.status!.resources!.length);

    // ListResourceEvents (server/application/application.go): the app's own events, then one resource's.
    const appEvents = await tool('get_application_events', { applicationName: name });
    expect(appEvents).toHaveProperty('items');
    const podEvents = await tool('get_resource_events', {
      applicationName: name,
      applicationNamespace: 'argocd',
      resourceUID: pod.uid,
      resourceNamespace: pod.namespace,
      resourceName: pod.name,
    });
    // PodLogs: one {"result": LogEntry} per line, the crash in the pod's own words.
    const logs = await tool('get_application_workload_logs', {
      applicationName: name,
      applicationNamespace: 'argocd',
      resourceRef: { uid: pod.uid, kind: 'Pod', namespace: pod.namespace, name: pod.name, version: 'v1', group: '' },
      container: '',
    });
    expect(logs).toContainEqual(
      expect.objectContaining({ podName: pod.name, content: expect.stringContaining('fatal') }),
    );
    expect(podEvents.items).toContainEqual(
      expect.objectContaining({
        type: 'Warning',
        reason: 'BackOff',
        involvedObject: expect.objectContaining({ kind: 'Pod', name: pod.name, uid: pod.uid }),
      }),
    );
  });

  it('gets the default project (Argo CD always has one)', async () => {
    const project = await tool('get_appproject', { projectName: 'default' });
    expect(project).toMatchObject({
      metadata: { name: 'default', namespace: 'argocd' },
      spec: { sourceRepos: ['*'], destinations: [{ server: '*', namespace: '*' }] },
    });
  });

  it('syncs an application, and the sync shows in its events', async () => {
    const store = sim.state.instance(sim.rootInstance)!;
    const target = [...store.apps.values()].find((a) => a.status?.sync?.status === 'OutOfSync' && !a.operation)!;
    const name = target.metadata.name;
    const synced = await tool('sync_application', { applicationName: name, applicationNamespace: 'argocd' });
    expect(synced.operation.initiatedBy.username).toBe('admin');
    sim.controller.advance(20_000);
    const events = await tool('get_application_events', { applicationName: name });
    const reasons = events.items.map((e: any) => `${e.reason}: ${e.message}`);
    expect(reasons[0]).toMatch(/^OperationStarted: admin initiated sync to [0-9a-f]{40}$/);
    expect(reasons).toContainEqual(
      expect.stringMatching(/^OperationCompleted: Sync operation to [0-9a-f]{40} succeeded$/),
    );
  });
});
