import { describe, expect, it } from 'vitest';
import { parseCommand } from '../../src/commands/parse.js';
import type { ReplyBlock } from '../../src/core/reply.js';
import { runStatus } from '../../src/commands/status.js';
import { problemReason, summarizeApps } from '../../src/fleet/status.js';
import { StaticFleet } from '../../src/fleet/model.js';
import { renderText } from '../../src/views/text.js';
import { app, ctx, eastApps, services, twoInstanceFleet } from './fixtures.js';

const status = (text: string, fleet = twoInstanceFleet()) => runStatus(parseCommand(text), ctx(services(fleet)));

describe('status', () => {
  it('reports totals and per-(instance, cluster) counts exactly, across two instances', async () => {
    const reply = await status('status');
    expect(reply.ok).toBe(true);
    expect(reply.data.total).toEqual({
      apps: 7,
      sync: { Synced: 5, OutOfSync: 1, Unknown: 1 },
      health: { Healthy: 3, Degraded: 1, Unknown: 1, Missing: 1, Progressing: 1 },
    });
    expect(reply.data.clusters).toEqual([
      // An unresolvable destination server stays the URL; a trailing slash still resolves to prod-us1.
      {
        instance: 'east',
        cluster: 'https://unknown.example:6443',
        apps: 1,
        sync: { Synced: 1 },
        health: { Missing: 1 },
      },
      { instance: 'east', cluster: 'prod-us1', apps: 2, sync: { Synced: 2 }, health: { Healthy: 1, Degraded: 1 } },
      {
        instance: 'east',
        cluster: 'prod-us2',
        apps: 2,
        sync: { OutOfSync: 1, Unknown: 1 },
        health: { Healthy: 1, Unknown: 1 },
      },
      { instance: 'west', cluster: 'prod-eu1', apps: 2, sync: { Synced: 2 }, health: { Healthy: 1, Progressing: 1 } },
    ]);
  });

  it('lists OutOfSync/Degraded/Missing/Unknown apps oldest problem first, with reasons', async () => {
    const reply = await status('status');
    const problems = reply.data.problems as {
      app: string;
      instance: string;
      cluster: string;
      sync: string;
      health: string;
      reason: string;
    }[];
    expect(problems.map((p) => p.app)).toEqual(['auth-prod-us2', 'auth-prod-us1', 'orphan-app', 'new-app']);
    expect(Object.keys(problems[0]).sort()).toEqual(['app', 'cluster', 'health', 'instance', 'reason', 'sync']);
    expect(problems[0]).toMatchObject({ instance: 'east', cluster: 'prod-us2', sync: 'OutOfSync', health: 'Healthy' });
    // Operation message (newlines collapsed), then the failed resource, then conditions errors before warnings.
    expect(problems[0].reason).toBe(
      'one or more objects failed to apply, reason: admission webhook denied; ConfigMap/auth-config: admission webhook "validate.example.com" denied the request; SyncError: Failed sync attempt to cccc: one or more objects failed to apply; OrphanedResourceWarning: Application has 1 orphaned resources',
    );
    expect(problems[1].reason).toBe('Deployment/auth Degraded: Deployment "auth" exceeded its progress deadline');
    expect(problems[3]).toMatchObject({
      sync: 'Unknown',
      health: 'Unknown',
      reason: expect.stringMatching(/not reported a status/),
    });
    // Progressing (west auth-prod-us1) is not a problem.
    expect(problems.some((p) => p.instance === 'west')).toBe(false);
  });

  it('narrows by glob, label selector, bare cluster name and instance', async () => {
    expect(((await status('status auth-*')).data.total as { apps: number }).apps).toBe(3);
    expect(((await status('status -l env=prod')).data.total as { apps: number }).apps).toBe(2);
    const byCluster = await status('status prod-us2');
    expect(byCluster.data.clusters).toEqual([
      {
        instance: 'east',
        cluster: 'prod-us2',
        apps: 2,
        sync: { OutOfSync: 1, Unknown: 1 },
        health: { Healthy: 1, Unknown: 1 },
      },
    ]);
    expect(byCluster.title).toBe('Status of cluster prod-us2');
    const west = await status('status instance=west');
    expect(west.data.total).toEqual({ apps: 2, sync: { Synced: 2 }, health: { Healthy: 1, Progressing: 1 } });
  });

  it('answers a label selector that matches nothing with zero counts, not an error', async () => {
    const reply = await status('status -l env=nowhere');
    expect(reply.ok).toBe(true);
    expect(reply.data).toEqual({
      total: { apps: 0, sync: {}, health: {} },
      clusters: [],
      problems: [],
      groups: [],
      frozen: [],
    });
  });

  it('throws unknown_target with app, appset and cluster suggestions for a mistyped name', async () => {
    await expect(status('status auth-prod-us3')).rejects.toMatchObject({
      code: 'unknown_target',
      suggestions: expect.arrayContaining(['auth-prod-us1', 'auth-prod-us2']),
    });
    await expect(status('status cluster=prod-us3')).rejects.toMatchObject({
      code: 'unknown_target',
      suggestions: expect.arrayContaining(['prod-us1']),
    });
    await expect(status('status instance=eats')).rejects.toMatchObject({
      code: 'unknown_target',
      suggestions: ['east'],
    });
    await expect(status('status nomatch-*')).rejects.toMatchObject({ code: 'unknown_target' });
  });

  it('rejects an option it does not know', async () => {
    await expect(status('status env=prod')).rejects.toMatchObject({
      code: 'usage',
      message: expect.stringMatching(/-l env=prod/),
    });
  });

  it('groups problems by ApplicationSet and reason, a failed sync first, with buttons to refresh and to follow the rollout in flight', async () => {
    const reply = await status('status --public');
    const lists = reply.blocks.filter(
      (b): b is Extract<ReplyBlock, { kind: 'list' }> => b.kind === 'list' && b.title !== 'Clusters',
    );
    expect(lists).toHaveLength(1);
    expect(lists[0].title).toBe('Problems by ApplicationSet and reason, worst first');
    expect(lists[0].total).toBe(4);
    expect(lists[0].items.map((i) => [i.text, i.tone])).toEqual([
      [
        '*auth* · sync failed on east/prod-us2 · one or more objects failed to apply, reason: admission webhook denied · for 1h',
        'error',
      ],
      [
        '*auth* · Degraded on east/prod-us1 · Deployment "auth" exceeded its progress deadline (Deployment/auth) · for 30m',
        'error',
      ],
      [
        '*orphan-app* · Missing on east/https://unknown.example:6443 · its resources do not exist in the cluster (never synced, or deleted) · for 10m',
        'error',
      ],
      [
        '*new-app* · Unknown on east/prod-us2 · Argo CD has not reported a status for this app yet (not reconciled).',
        'unknown',
      ],
    ]);
    // Summary lines carry no URLs: the app is one `app X` away.
    for (const item of lists[0].items) expect(item.text).not.toMatch(/https?:\/\/(?!unknown\.example)/);
    expect(reply.data.groups).toEqual([
      expect.objectContaining({
        name: 'auth',
        by: 'appset',
        kind: 'failed',
        apps: ['auth-prod-us2'],
        clusters: 1,
        clustersOfGroup: 2,
      }),
      expect.objectContaining({ name: 'auth', by: 'appset', kind: 'degraded', apps: ['auth-prod-us1'] }),
      expect.objectContaining({ name: 'orphan-app', by: 'app', kind: 'missing' }),
      expect.objectContaining({ name: 'new-app', by: 'app', kind: 'unknown' }),
    ]);
    const actions = reply.blocks.find((b) => b.kind === 'actions') as Extract<ReplyBlock, { kind: 'actions' }>;
    expect(actions.buttons).toEqual([
      { label: 'Refresh', command: 'status' },
      { label: 'Show rollout auth', command: 'rollout auth' },
    ]);
    const text = renderText({ ...reply, pageCommand: 'status' }, { links: 'label' });
    expect(text).toContain('4 apps need attention in 4 groups');
    expect(text).toContain('→ try: rollout auth');
    // The command just run is no suggestion.
    expect(text).not.toContain('→ try: status');
  });

  it('collapses many clusters to the worst ones and a count of the healthy rest', async () => {
    const apps = Array.from({ length: 200 }, (_, i) =>
      app({
        name: `svc-c${i}`,
        clusterName: `c${String(i).padStart(3, '0')}`,
        status: {
          sync: { status: 'Synced' },
          health: { status: i < 3 ? 'Degraded' : 'Healthy', lastTransitionTime: '2026-12-02T11:00:00Z' },
        },
      }),
    );
    const reply = await status('status', StaticFleet.fromObjects([{ name: 'main', applications: apps }]));
    const clusters = reply.blocks.find((b) => b.kind === 'list' && b.title === 'Clusters') as Extract<
      ReplyBlock,
      { kind: 'list' }
    >;
    expect(clusters.items.map((i) => i.text.split(' ')[0])).toEqual(['*c000*', '*c001*', '*c002*']);
    expect(reply.blocks).toContainEqual({ kind: 'context', text: 'and 197 more healthy clusters' });
    expect((reply.data.clusters as unknown[]).length).toBe(200);
  });

  it('says the clusters are all healthy when none has a problem, not "and N more"', async () => {
    const apps = Array.from({ length: 30 }, (_, i) =>
      app({
        name: `svc-c${i}`,
        clusterName: `c${String(i).padStart(3, '0')}`,
        status: { sync: { status: 'Synced' }, health: { status: 'Healthy' } },
      }),
    );
    const reply = await status('status', StaticFleet.fromObjects([{ name: 'main', applications: apps }]));
    expect(reply.blocks.find((b) => b.kind === 'list' && b.title === 'Clusters')).toBeUndefined();
    expect(reply.blocks).toContainEqual({ kind: 'context', text: 'On 30 clusters, none with a problem.' });
  });
});

describe('status: how far problems reach', () => {
  /** `perCluster[i]` Degraded apps on cluster c<i>, each cluster with one healthy app besides. */
  const reach = async (perCluster: number[]) => {
    const apps = perCluster.flatMap((down, c) =>
      Array.from({ length: down + 1 }, (_, i) =>
        app({
          name: `svc${i}-c${c}`,
          clusterName: `c${c}`,
          status: {
            sync: { status: 'Synced' },
            health: { status: i < down ? 'Degraded' : 'Healthy', lastTransitionTime: '2026-12-02T11:00:00Z' },
          },
        }),
      ),
    );
    const reply = await status('status', StaticFleet.fromObjects([{ name: 'main', applications: apps }]));
    return reply.blocks.find((b) => b.kind === 'context' && b.text.startsWith('Problems on'))!;
  };

  it('says how many apps each cluster has when every cluster has as many, with no "most on"', async () => {
    expect(await reach([1, 1, 1, 1, 1])).toEqual({
      kind: 'context',
      text: 'Problems on 5 of 5 clusters, 1 app on each. Narrow with cluster=X.',
    });
  });

  it('names the clusters with the most, "each" only when there are several', async () => {
    expect(await reach([3, 1, 1, 1, 0])).toMatchObject({
      text: 'Problems on 4 of 5 clusters; most on c0 (3 apps). Narrow with cluster=X.',
    });
    expect(await reach([2, 2, 1, 1, 1])).toMatchObject({
      text: 'Problems on 5 of 5 clusters; most on c0, c1 (2 apps each). Narrow with cluster=X.',
    });
  });
});

describe('summarizeApps', () => {
  it('counts an app with status but no sync or health block under Unknown', () => {
    const odd = { ...eastApps[0], status: { reconciledAt: '2026-12-02T11:00:00Z' } };
    const s = summarizeApps([{ instance: 'x', cluster: 'c', app: odd }]);
    expect(s.total).toEqual({ apps: 1, sync: { Unknown: 1 }, health: { Unknown: 1 } });
    expect(problemReason(odd)).toMatch(/not reported a status/);
  });
});
