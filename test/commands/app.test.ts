import { describe, expect, it } from 'vitest';
import { runApp, type AppDetail } from '../../src/commands/app.js';
import { CommandError, parseCommand } from '../../src/commands/parse.js';
import { ctx, services, twoInstanceFleet } from './fixtures.js';

const run = (text: string) => runApp(parseCommand(text), ctx(services(twoInstanceFleet())));

async function rejection(p: Promise<unknown>): Promise<CommandError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof CommandError) return e;
    throw e;
  }
  throw new Error('expected a CommandError');
}

describe('app', () => {
  it('describes sync, health, source, the last failed operation and its failed resources', async () => {
    const reply = await run('app auth-prod-us2');
    expect(reply.ok).toBe(true);
    const d = reply.data.app as AppDetail;
    expect(d).toMatchObject({
      name: 'auth-prod-us2',
      instance: 'east',
      cluster: 'prod-us2',
      project: 'default',
      appSet: 'auth',
      sync: 'OutOfSync',
      health: 'Healthy',
      revision: 'c'.repeat(40),
      revisions: ['c'.repeat(40)],
      source: {
        repoURL: 'https://git.example.com/platform.git',
        path: 'apps/auth-prod-us2',
        chart: null,
        targetRevision: 'main',
      },
      url: 'https://cd-east.example.com/applications/argocd/auth-prod-us2',
    });
    expect(d.operation).toEqual({
      phase: 'Failed',
      initiatedBy: 'bob',
      automated: false,
      startedAt: '2026-12-02T10:58:00Z',
      finishedAt: '2026-12-02T11:00:00Z',
      durationMs: 120_000,
      message: 'one or more objects failed to apply,\nreason: admission webhook denied',
      retryCount: 0,
    });
    expect(d.failedResources).toEqual([
      {
        group: '',
        kind: 'ConfigMap',
        namespace: 'auth',
        name: 'auth-config',
        message: 'admission webhook "validate.example.com" denied the request',
        syncPhase: 'Sync',
      },
    ]);
    expect(d.conditions.map((c) => c.type)).toEqual(['OrphanedResourceWarning', 'SyncError']);
    const text = JSON.stringify(reply.blocks);
    expect(text).toContain('Failed resources in the last sync');
    expect(text).toContain('by bob');
  });

  it('lists the last five deployments newest first, images, and who started them', async () => {
    const d = (await run('app auth-prod-us1 instance=east')).data.app as AppDetail;
    expect(d.history.map((h) => h.id)).toEqual([6, 5, 4, 3, 2]);
    expect(d.history[0].initiatedBy).toBe('alice');
    expect(d.history[1].initiatedBy).toBe('automated');
    expect(d.images).toEqual(['registry.example.com/auth-service:v2.15.0']);
    expect(d.operation?.initiatedBy).toBe('applicationset-controller');
    expect(d.unhealthyResources).toEqual([
      {
        group: 'apps',
        kind: 'Deployment',
        namespace: '',
        name: 'auth',
        health: 'Degraded',
        message: 'Deployment "auth" exceeded its progress deadline',
      },
    ]);
  });

  it('says when a name exists on several instances and lists them', async () => {
    const error = await rejection(run('app auth-prod-us1'));
    expect(error.code).toBe('ambiguous_target');
    expect(error.message).toMatch(/exists on 2 instances: `east`, `west`. Add instance=NAME/);
    expect(error.suggestions).toEqual(['app auth-prod-us1 instance=east', 'app auth-prod-us1 instance=west']);
    expect(error.data?.matches).toEqual([
      {
        name: 'auth-prod-us1',
        instance: 'east',
        cluster: 'prod-us1',
        sync: 'Synced',
        health: 'Degraded',
        url: 'https://cd-east.example.com/applications/argocd/auth-prod-us1',
      },
      {
        name: 'auth-prod-us1',
        instance: 'west',
        cluster: 'prod-eu1',
        sync: 'Synced',
        health: 'Progressing',
        url: 'https://cd-west.example.com/applications/argocd/auth-prod-us1',
      },
    ]);
  });

  it('reports an app with no status without inventing one', async () => {
    const d = (await run('app new-app')).data.app as AppDetail;
    expect(d).toMatchObject({
      sync: 'Unknown',
      health: 'Unknown',
      revision: null,
      revisions: [],
      operation: null,
      history: [],
      images: [],
    });
  });

  it('suggests close names for an unknown app, and points an appset name at rollout', async () => {
    const unknown = await rejection(run('app auth-prod-us3'));
    expect(unknown.code).toBe('unknown_target');
    expect(unknown.suggestions?.slice(0, 2)).toEqual(['auth-prod-us1', 'auth-prod-us2']);
    const appSet = await rejection(run('app auth'));
    expect(appSet.code).toBe('unknown_target');
    expect(appSet.message).toMatch(/is an ApplicationSet.*rollout auth/);
    const wrongInstance = await rejection(run('app web-prod-eu1 instance=east'));
    expect(wrongInstance.message).toMatch(/it exists on `west`/);
  });

  it('asks for the name when none is given', async () => {
    expect((await rejection(run('app'))).code).toBe('usage');
  });
});
