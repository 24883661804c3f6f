import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Application } from '../../src/infra/argocd/types.js';
import type { SimServer } from '../../src/sim/server.js';
import { startTestSim } from '../support/sim.js';

let sim: SimServer;
const open: (() => void)[] = [];

interface Stream {
  /** Undefined until the server answers: Argo CD answers a watch with its first message. */
  status: number | undefined;
  contentType: string | null | undefined;
  raw(): string;
  /** Parsed messages: SSE `data:` payloads, or NDJSON lines. */
  messages(): any[];
  done(): boolean;
}

/**
 * Opens a watch and returns once it is answered, or after 100 ms without an answer (the request is at the server by
 * then: a watch that skips its snapshot is answered only with the first change).
 */
async function stream(server: SimServer, instance: string, path: string, sse = true): Promise<Stream> {
  const inst = server.instances.find((i) => i.name === instance)!;
  const ctrl = new AbortController();
  const headers: Record<string, string> = { authorization: `Bearer ${inst.token}` };
  if (sse) headers.accept = 'text/event-stream';
  let res: Response | undefined;
  let raw = '';
  let ended = false;
  const answered = fetch(`${inst.url}${path}`, { headers, signal: ctrl.signal }).then(async (r) => {
    res = r;
    const reader = r.body!.getReader();
    const decoder = new TextDecoder();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        raw += decoder.decode(value, { stream: true });
      }
    } catch {
      // aborted by the test
    }
    ended = true;
  });
  answered.catch(() => undefined);
  open.push(() => ctrl.abort());
  await Promise.race([answered, new Promise((r) => setTimeout(r, 100)), waitFor(() => res !== undefined)]);
  return {
    get status() {
      return res?.status;
    },
    get contentType() {
      return res?.headers.get('content-type');
    },
    raw: () => raw,
    done: () => ended,
    messages: () =>
      sse
        ? raw
            .split('\n\n')
            .flatMap((frame) => frame.split('\n'))
            .filter((l) => l.startsWith('data: '))
            .map((l) => JSON.parse(l.slice(6)))
        : raw
            .split('\n')
            .filter((l) => l.trim())
            .map((l) => JSON.parse(l)),
  };
}

async function waitFor(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((r) => setTimeout(r, 5));
}

async function patchLabels(server: SimServer, instance: string, app: string, labels: Record<string, string | null>) {
  const inst = server.instances.find((i) => i.name === instance)!;
  const res = await fetch(`${inst.url}/api/v1/applications/${app}`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${inst.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ patchType: 'merge', patch: JSON.stringify({ metadata: { labels } }) }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as Application;
}

beforeAll(async () => {
  sim = await startTestSim({ fixture: 'sim-multi-instance.json', frozen: true, keepAliveMs: 40 });
});
afterEach(() => {
  while (open.length) open.pop()!();
});
afterAll(async () => {
  await sim.stop();
});

const names = (s: Stream) =>
  s.messages().map((m) => `${m.result.type} ${(m.result.application ?? m.result.applicationSet).metadata.name}`);

describe('GET /api/v1/stream/applications', () => {
  it('sends an ADDED snapshot of matching apps as SSE frames, then MODIFIED on change', async () => {
    const s = await stream(sim, 'prod', '/api/v1/stream/applications?selector=team%3Dpayments');
    expect(s.status).toBe(200);
    expect(s.contentType).toBe('text/event-stream');
    await expect.poll(() => names(s)).toEqual(['ADDED payments-prod-eu1', 'ADDED payments-prod-us1']);
    expect(s.raw()).toMatch(/^data: \{"result":\{"type":"ADDED","application":\{/);
    await patchLabels(sim, 'prod', 'payments-prod-eu1', { owner: 'alice' });
    await expect.poll(() => names(s)).toContain('MODIFIED payments-prod-eu1');
    const modified = s.messages().at(-1).result.application as Application;
    expect(modified.metadata.labels!.owner).toBe('alice');
    // Watch, like Get, fills in resource health.
    expect(modified.status!.resources![1].health).toEqual({ status: 'Healthy' });
    // A change to an app outside the selector is not sent.
    await patchLabels(sim, 'prod', 'web-prod-us1', { owner: 'bob' });
    await patchLabels(sim, 'prod', 'payments-prod-us1', { owner: 'carol' });
    await expect.poll(() => names(s).at(-1)).toBe('MODIFIED payments-prod-us1');
    expect(names(s).filter((n) => n.includes('web-prod-us1'))).toEqual([]);
  });

  it('sends a ":" keep-alive comment line every keepAliveMs', async () => {
    const s = await stream(sim, 'staging', '/api/v1/stream/applications?name=payments-staging');
    await expect
      .poll(
        () =>
          s
            .raw()
            .split('\n')
            .filter((l) => l === ':').length,
        { timeout: 2000 },
      )
      .toBeGreaterThanOrEqual(2);
  });

  it('drops an event whose body after the fields filter is identical to the last one for that app', async () => {
    const fields = 'result.type,result.application.metadata.name,result.application.status.sync.status';
    const s = await stream(sim, 'prod', `/api/v1/stream/applications?name=payments-prod-us1&fields=${fields}`);
    await expect.poll(() => s.messages().length).toBe(1);
    expect(s.messages()[0]).toEqual({
      result: {
        type: 'ADDED',
        application: { metadata: { name: 'payments-prod-us1' }, status: { sync: { status: 'OutOfSync' } } },
      },
    });
    await patchLabels(sim, 'prod', 'payments-prod-us1', { owner: 'dave' }); // filtered body: MODIFIED (type changed) -> sent
    await patchLabels(sim, 'prod', 'payments-prod-us1', { owner: 'erin' }); // identical filtered body -> dropped
    await patchLabels(sim, 'prod', 'payments-prod-us1', { owner: 'frank' }); // dropped
    const inst = sim.instances[0];
    // A real difference in a selected field gets through.
    await fetch(`${inst.url}/api/v1/applications/payments-prod-us1`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${inst.token}` },
      body: JSON.stringify({ patchType: 'merge', patch: JSON.stringify({ status: { sync: { status: 'Synced' } } }) }),
    });
    await expect.poll(() => s.messages().length).toBe(3);
    expect(s.messages().map((m) => [m.result.type, m.result.application.status.sync.status])).toEqual([
      ['ADDED', 'OutOfSync'],
      ['MODIFIED', 'OutOfSync'],
      ['MODIFIED', 'Synced'],
    ]);
  });

  it('streams newline-delimited JSON without keep-alives when the client does not ask for SSE', async () => {
    const s = await stream(sim, 'staging', '/api/v1/stream/applications', false);
    expect(s.contentType).toBe('application/json');
    await expect
      .poll(() => s.messages().map((m) => m.result.application.metadata.name))
      .toEqual(['auth-service-staging', 'payments-staging']);
    await new Promise((r) => setTimeout(r, 120));
    expect(s.raw()).not.toContain(':\n');
    expect(s.raw().endsWith('}\n')).toBe(true);
  });

  it('with resourceVersion skips the snapshot and, like Argo CD, does not replay changes made before it connected', async () => {
    const rv = sim.state.instance('staging')!.resourceVersion;
    await patchLabels(sim, 'staging', 'payments-staging', { missed: 'yes' });
    const s = await stream(sim, 'staging', `/api/v1/stream/applications?resourceVersion=${rv}`);
    await new Promise((r) => setTimeout(r, 80));
    // Nothing to send, so not even an answer yet: the status line comes with the first event.
    expect(s.status).toBeUndefined();
    expect(s.messages()).toEqual([]);
    await patchLabels(sim, 'staging', 'auth-service-staging', { seen: 'yes' });
    await expect.poll(() => names(s)).toEqual(['MODIFIED auth-service-staging']);
    expect(s.status).toBe(200);
  });

  it('sends the name= snapshot even with a resourceVersion, unless the app is older than that version', async () => {
    const appRv = Number(sim.state.instance('staging')!.apps.get('payments-staging')!.metadata.resourceVersion);
    const s = await stream(
      sim,
      'staging',
      `/api/v1/stream/applications?name=payments-staging&resourceVersion=${appRv}`,
    );
    await expect.poll(() => names(s)).toEqual(['ADDED payments-staging']);
    const newer = await stream(
      sim,
      'staging',
      `/api/v1/stream/applications?name=payments-staging&resourceVersion=${appRv + 1}`,
    );
    await new Promise((r) => setTimeout(r, 80));
    expect(newer.messages()).toEqual([]);
  });

  it('sends DELETED when an app goes away', async () => {
    const s = await stream(sim, 'prod', '/api/v1/stream/applications?name=ingress-prod-us1');
    await expect.poll(() => names(s)).toEqual(['ADDED ingress-prod-us1']);
    sim.state.instance('prod')!.deleteApp('ingress-prod-us1');
    await expect.poll(() => names(s)).toEqual(['ADDED ingress-prod-us1', 'DELETED ingress-prod-us1']);
  });
});

describe('dropStreams fault', () => {
  it('ends the open streams of one instance so clients have to reconnect', async () => {
    const prod = await stream(sim, 'prod', '/api/v1/stream/applications?name=web-prod-us1');
    const staging = await stream(sim, 'staging', '/api/v1/stream/applications?name=payments-staging');
    await expect.poll(() => prod.messages().length + staging.messages().length).toBe(2);
    const res = await fetch(`${sim.url}/_sim/faults`, {
      method: 'POST',
      body: JSON.stringify({ kind: 'dropStreams', instance: 'prod' }),
    });
    expect(await res.json()).toEqual({ applied: 'dropped 1 stream(s)' });
    await expect.poll(() => prod.done()).toBe(true);
    expect(staging.done()).toBe(false);
  });
});

describe('GET /api/v1/stream/applicationsets', () => {
  it('sends the appset snapshot under result.applicationSet and MODIFIED on upsert', async () => {
    const s = await stream(sim, 'prod', '/api/v1/stream/applicationsets?projects=platform');
    await expect.poll(() => names(s)).toEqual(['ADDED ingress']);
    const appSet = structuredClone(sim.state.instance('prod')!.appSets.get('ingress')!);
    appSet.spec.strategy!.rollingSync!.steps![0].maxUpdate = '50%';
    const inst = sim.instances[0];
    const res = await fetch(`${inst.url}/api/v1/applicationsets?upsert=true`, {
      method: 'POST',
      headers: { authorization: `Bearer ${inst.token}` },
      body: JSON.stringify(appSet),
    });
    expect(res.status).toBe(200);
    await expect.poll(() => names(s)).toEqual(['ADDED ingress', 'MODIFIED ingress']);
    expect(s.messages()[1].result.applicationSet.spec.strategy.rollingSync.steps[0].maxUpdate).toBe('50%');
  });
});

describe('watchResume: replay', () => {
  it('replays logged changes after resourceVersion, and ends with a 410 error event when it is older than the log', async () => {
    const replay = await startTestSim({ fixture: 'sim-single-no-clusters.json', frozen: true, watchResume: 'replay' });
    try {
      const store = replay.state.instance('edge')!;
      const rv = store.resourceVersion;
      await patchLabels(replay, 'edge', 'cdn-edge-a', { replayed: 'yes' });
      const s = await stream(replay, 'edge', `/api/v1/stream/applications?resourceVersion=${rv}`);
      await expect.poll(() => names(s)).toEqual(['MODIFIED cdn-edge-a']);

      const baseline = store.events.listenerCount('app') - 1;
      while (open.length) open.pop()!();
      // A closed stream unsubscribes from the store.
      await expect.poll(() => store.events.listenerCount('app')).toBe(baseline);
      // Push the first logged version out of the change log (it keeps the last 50,000).
      const app = store.apps.get('cdn-edge-b')!;
      for (let i = 0; i < 50_001; i++) store.putApp(app);
      const old = await stream(replay, 'edge', '/api/v1/stream/applications?resourceVersion=1');
      await expect.poll(() => old.done()).toBe(true);
      expect(old.messages()).toEqual([
        {
          error: {
            grpc_code: 11,
            http_code: 410,
            message: 'too old resource version: 1',
            http_status: 'Gone',
            details: [],
          },
        },
      ]);
    } finally {
      while (open.length) open.pop()!();
      await replay.stop();
    }
  });
});
