import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ArgoClient } from '../../src/infra/argocd/client.js';
import { ArgoError } from '../../src/infra/argocd/errors.js';
import type { ResourceRef, Rollout } from '../../src/infra/argocd/types.js';
import { instanceSchema } from '../../src/infra/config/schema.js';
import { loadScenario } from '../../src/sim/scenarios/index.js';
import type { SimServer } from '../../src/sim/server.js';
import { startRecordingServer, type RecordingServer } from '../support/recording-server.js';
import { simOperations, startTestSim } from '../support/sim.js';

// The Argo CD client's resource endpoints: GET …/resource, GET …/resource/actions and POST …/resource/actions/v2
// (server/application/application.proto), against the simulator and, for what only a broken server does, a
// recording server.

const ROLLOUT: ResourceRef = {
  group: 'argoproj.io',
  version: 'v1alpha1',
  kind: 'Rollout',
  namespace: 'storefront',
  name: 'storefront',
};
const APP = { name: 'storefront-prod-us-east-1', project: 'commerce' };

async function failure(p: Promise<unknown>): Promise<ArgoError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(ArgoError);
    return e as ArgoError;
  }
  throw new Error('expected the call to fail');
}

describe('against the simulator (canary-rollouts)', () => {
  let sim: SimServer;
  const clientFor = (token?: string) => {
    const instance = sim.instances[0];
    return new ArgoClient(
      instanceSchema.parse({ name: 'prod', url: instance.url, token: token ?? instance.token, timeout: 2000 }),
      { retry: { retries: 0, baseMs: 5, maxMs: 5 } },
    );
  };

  beforeAll(async () => {
    const { fixture } = loadScenario('canary-rollouts');
    fixture.instances[0].accounts = [{ name: 'reader', token: 'reader-token', allow: ['applications, get, */*'] }];
    sim = await startTestSim({ fixture });
  });
  afterAll(async () => {
    await sim?.stop();
  });

  it('reads the live Rollout with its status', async () => {
    const ro = await clientFor().liveResource<Rollout>(APP, ROLLOUT);
    expect(ro.kind).toBe('Rollout');
    expect(ro.status).toMatchObject({ currentStepIndex: 1, phase: 'Paused', message: 'CanaryPauseStep' });
  });

  it('lists the actions Argo CD offers, disabled ones marked', async () => {
    const actions = await clientFor().listResourceActions(APP, ROLLOUT);
    expect(actions.map((a) => a.name).sort()).toEqual([
      'abort',
      'pause',
      'promote-full',
      'restart',
      'resume',
      'retry',
      'skip-current-step',
    ]);
    expect(actions.filter((a) => a.disabled).map((a) => a.name)).toEqual(['retry']);
    expect(actions.find((a) => a.name === 'restart')?.displayName).toBe('Restart Pods');
  });

  it('answers an empty list for a kind without actions', async () => {
    const configMap = { version: 'v1', kind: 'ConfigMap', namespace: 'storefront', name: 'storefront-config' };
    expect(await clientFor().listResourceActions(APP, configMap)).toEqual([]);
  });

  it('runs an action with the v2 body and its parameters', async () => {
    const app = { name: 'storefront-prod-us-west-2', project: 'commerce' };
    await clientFor().runResourceAction(app, ROLLOUT, 'resume', { note: 'incident 42' });
    const op = (await simOperations(sim)).at(-1)!;
    expect(op).toMatchObject({
      method: 'POST',
      path: `/api/v1/applications/${app.name}/resource/actions/v2`,
      status: 200,
    });
    expect(op.body).toEqual({
      namespace: 'storefront',
      resourceName: 'storefront',
      version: 'v1alpha1',
      group: 'argoproj.io',
      kind: 'Rollout',
      project: 'commerce',
      name: app.name,
      action: 'resume',
      resourceActionParameters: [{ name: 'note', value: 'incident 42' }],
    });
    expect((await clientFor().liveResource<Rollout>(app, ROLLOUT)).status?.pauseConditions).toBeUndefined();
  });

  it('403 names the RBAC line the token lacks: the action on that app', async () => {
    const error = await failure(clientFor('reader-token').runResourceAction(APP, ROLLOUT, 'abort'));
    expect(error.kind).toBe('forbidden');
    expect(error.message).toContain(
      '`p, role:rollcall, applications, action/argoproj.io/Rollout/abort, commerce/storefront-prod-us-east-1, allow`',
    );
  });

  it('an action the kind has no script for is an invalid request, not an outage to retry', async () => {
    const error = await failure(clientFor().runResourceAction(APP, ROLLOUT, 'promote'));
    expect(error.kind).toBe('invalid');
    expect(error.status).toBe(500);
    expect(error.message).toMatch(
      /^Argo CD has no action `promote` for argoproj.io\/Rollout \(app storefront-prod-us-east-1/,
    );
  });

  it('a resource outside the app tree is not_found', async () => {
    const error = await failure(clientFor().listResourceActions(APP, { ...ROLLOUT, name: 'checkout' }));
    expect(error.kind).toBe('not_found');
    expect(error.argoMessage).toBe(
      'Rollout argoproj.io checkout not found as part of application storefront-prod-us-east-1',
    );
  });
});

describe('answers only a broken server gives', () => {
  let server: RecordingServer;
  const API = '/api/v1/applications/web';
  const client = () =>
    new ArgoClient(instanceSchema.parse({ name: 'eu', url: server.url, token: 't', timeout: 2000 }), {
      retry: { retries: 2, baseMs: 5, maxMs: 10 },
    });
  beforeAll(async () => {
    server = await startRecordingServer();
  });
  afterAll(async () => {
    await server.stop();
  });
  beforeEach(() => {
    server.requests.length = 0;
  });

  it('sends the resource as ApplicationResourceRequest query fields, with no group for the core group', async () => {
    server.on('GET', `${API}/resource/actions`, { body: {} });
    expect(
      await client().listResourceActions(
        { name: 'web', appNamespace: 'apps' },
        { version: 'v1', kind: 'Deployment', namespace: 'web', name: 'web', group: 'apps' },
      ),
    ).toEqual([]);
    const [req] = server.requestsTo(`${API}/resource/actions`);
    expect(Object.fromEntries(req.query)).toEqual({
      namespace: 'web',
      resourceName: 'web',
      version: 'v1',
      group: 'apps',
      kind: 'Deployment',
      appNamespace: 'apps',
    });
  });

  it('fails an actions answer that is not a list of named actions, rather than offering none', async () => {
    server.on('GET', `${API}/resource/actions`, { body: { actions: [{ disabled: true }] } });
    const error = await failure(client().listResourceActions({ name: 'web' }, ROLLOUT));
    expect(error.kind).toBe('bad_response');
  });

  it('fails a manifest that is not a Kubernetes object', async () => {
    server.on('GET', `${API}/resource`, { body: { manifest: '<html>' } });
    expect((await failure(client().liveResource({ name: 'web' }, ROLLOUT))).kind).toBe('bad_response');
    server.on('GET', `${API}/resource`, { body: { manifest: '{"kind":"Rollout"}' } });
    expect((await failure(client().liveResource({ name: 'web' }, ROLLOUT))).kind).toBe('bad_response');
  });

  it('does not send an action again after a 502 (restart and skip-current-step are not idempotent)', async () => {
    server.on('POST', `${API}/resource/actions/v2`, { status: 502, body: 'bad gateway' });
    const error = await failure(client().runResourceAction({ name: 'web' }, ROLLOUT, 'skip-current-step'));
    expect(server.requestsTo(`${API}/resource/actions/v2`)).toHaveLength(1);
    expect(error.maybeApplied).toBe(true);
  });
});
