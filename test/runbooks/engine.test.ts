import { afterEach, describe, expect, it } from 'vitest';
import { dispatch } from '../../src/commands/index.js';
import '../../src/commands/runbooks.js';
import type { CommandContext } from '../../src/commands/registry.js';
import { findAction } from '../../src/commands/registry.js';
import { closeRedis, createRedis, keyBase } from '../../src/infra/redis.js';
import type { RunService } from '../../src/domain/runbooks/engine.js';
import { RunStore } from '../../src/domain/runbooks/run-store.js';
import { progressReply } from '../../src/domain/runbooks/replies.js';
import { renderText } from '../../src/views/text.js';
import { makeApp, testConfig } from './fake-argo.js';
import { APPROVAL_RUNBOOK, harness, type Harness } from './harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const clusters = ['prod-eu1', 'prod-eu2', 'prod-us1'];
const authConfigs = () => clusters.map((c) => makeApp(`auth-config-${c}`, c, { prunable: [`old-${c}`] }));
const authServices = () => clusters.map((c) => makeApp(`auth-service-${c}`, c, { health: 'Degraded' }));
const ctx = (user: string, extra: Partial<CommandContext> = {}): CommandContext => ({
  services: h!.services,
  user,
  surface: 'slack',
  channel: 'C_OPS',
  threadTs: '1.0001',
  ...extra,
});
const runs = () => h!.engine.runs as RunService;

describe('runbook engine with bulk-sync', () => {
  it('previews identical prunes as one line with their count, and its parameters once', async () => {
    h = await harness(
      clusters.map((c) => makeApp(`auth-config-${c}`, c, { prunable: ['auth-config-v2-session-flags'] })),
    );
    const preview = await dispatch('sync auth-config-* prune=true', ctx('U_OP'));
    expect(preview.ok, JSON.stringify(preview.error)).toBe(true);
    const prune = preview.blocks.find((b) => b.kind === 'list' && b.title === 'What prune deletes') as {
      items: { text: string; detail?: string }[];
    };
    expect(prune.items).toEqual([
      {
        text: '3 × ConfigMap/default/auth-config-v2-session-flags',
        detail: expect.stringMatching(/^one in each of 3 apps: auth-config-prod-eu1, auth-config-prod-eu2, /),
        tone: 'warn',
      },
    ]);
    const text = renderText(preview);
    // One page, the parameters said once (on the "Requested by" line), every app of the wave named.
    expect(text).not.toMatch(/Page \d of/);
    expect(text.match(/concurrency=10/g)).toHaveLength(1);
    expect(text.match(/onFailure=pause/g)).toHaveLength(2); // the parameters, and "If a wave fails: … (onFailure=pause)"
    expect(text).toMatch(
      /Wave 1\/1: all · 3 apps · all at a time\nauth-config-prod-eu1, auth-config-prod-eu2, auth-config-prod-us1/,
    );
  });

  it('previews exactly, then syncs each selected app once with prune, skipping synced ones, and audits it', async () => {
    h = await harness([
      ...authConfigs(),
      ...authServices(),
      makeApp('auth-config-prod-ap1', 'prod-ap1', { sync: 'Synced' }),
    ]);
    const preview = await dispatch('sync auth-config-* prune=true', ctx('U_OP'));
    expect(preview.ok).toBe(true);
    const data = preview.data as any;
    expect(data.run.status).toBe('awaiting-confirmation');
    expect(data.preview.waves[0].apps.map((a: any) => a.app)).toEqual([
      'auth-config-prod-eu1',
      'auth-config-prod-eu2',
      'auth-config-prod-us1',
    ]);
    expect(data.preview.skipped).toEqual([
      expect.objectContaining({ app: 'auth-config-prod-ap1', reason: 'already Synced and Healthy' }),
    ]);
    expect(data.preview.prune).toMatchObject({ resources: 3, apps: 3 });
    expect(data.preview.clusters).toEqual(clusters);
    // What prune deletes is said on the first page, whatever the length of the waves: in the facts, then listed first.
    const facts = preview.blocks.find((b) => b.kind === 'fields');
    expect(facts && 'fields' in facts ? facts.fields : []).toContainEqual({
      label: 'Prune deletes',
      value: '3 resources in 3 apps',
    });
    const lists = preview.blocks.flatMap((b) => (b.kind === 'list' ? [b.title ?? ''] : []));
    expect(lists).toEqual(['What prune deletes']);
    expect(renderText(preview, { itemsPerPage: 2 })).toMatch(
      /Prune deletes:\s+3 resources in 3 apps[\s\S]*What prune deletes[\s\S]*old-prod-eu1[\s\S]*Wave 1\/1[\s\S]*Page 1 of/,
    );
    // The params line says what this run will do: what was typed and the defaults in effect, not a refused word.
    const paramsLine = preview.blocks.find((b) => b.kind === 'context' && b.text.includes('params:'));
    expect(paramsLine && 'text' in paramsLine ? paramsLine.text : '').toContain(
      'selector=auth-config-* prune=true dryRun=false includeSynced=false concurrency=10',
    );
    expect(paramsLine && 'text' in paramsLine ? paramsLine.text : '').not.toContain('force');
    const buttons = preview.blocks.flatMap((b) => (b.kind === 'actions' ? b.buttons : []));
    expect(buttons.map((b) => [b.action, b.value])).toEqual([
      ['run.confirm', data.runId],
      ['run.cancel', data.runId],
    ]);
    expect(h.argo.syncs).toHaveLength(0);

    const confirmed = await findAction('run.confirm')!.run(data.runId, ctx('U_OP'));
    // In Slack the preview becomes a pointer to the one live message, without stale buttons.
    // Its data is the run's, as every `runs` answer's is.
    expect(confirmed!.data).toMatchObject({ runId: data.runId, status: 'running', run: { id: data.runId } });
    expect(confirmed!.blocks.some((b) => b.kind === 'actions')).toBe(false);
    const end = await runs().waitForEnd(data.runId, 10_000);
    expect(end.status).toBe('succeeded');
    expect(h.argo.syncs.map((s) => s.app).sort()).toEqual([
      'auth-config-prod-eu1',
      'auth-config-prod-eu2',
      'auth-config-prod-us1',
    ]);
    for (const s of h.argo.syncs)
      expect(s.request).toMatchObject({
        prune: true,
        dryRun: false,
        infos: [
          { name: 'rollcall-run', value: data.runId },
          { name: 'Requested by', value: `U_OP (slack, via rollcall run ${data.runId})` },
        ],
      });
    // One POST per app and nothing else: the mirror told us the rest.
    expect(h.argo.calls.filter((c) => c.method !== 'sync')).toEqual([]);
    expect(end.steps[0]).toMatchObject({
      status: 'succeeded',
      output: {
        synced: 3,
        skipped: 1,
        failed: [],
        summary: ['3 app(s) synced on 3 cluster(s), 1 skipped (already Synced and Healthy)'],
      },
    });
    // The summary message says what the step did, not only that it succeeded.
    expect(renderText(progressReply(end))).toContain(
      '✔ sync: succeeded\n      3 app(s) synced on 3 cluster(s), 1 skipped (already Synced and Healthy)',
    );

    const audit = await runs().audit.latest(50);
    const kinds = audit.map((e) => e.kind).reverse();
    expect(kinds.slice(0, 3)).toEqual(['run.start', 'run.confirm', 'step.start']);
    expect(kinds.filter((k) => k === 'argocd.sync')).toHaveLength(3);
    expect(kinds.at(-1)).toBe('run.end');
    expect(audit.find((e) => e.kind === 'argocd.sync')).toMatchObject({
      who: 'U_OP',
      runId: data.runId,
      result: 'accepted',
      params: { prune: true },
    });

    // The one progress message: posted in the thread, updated, last update is the summary without buttons.
    expect(h.notifier.posts).toHaveLength(1);
    expect(h.notifier.posts[0].target).toEqual({ channel: 'C_OPS', threadTs: '1.0001' });
    const last = h.notifier.updates.at(-1)!;
    expect(last.reply.title).toContain('succeeded');
    expect(last.reply.blocks.some((b) => b.kind === 'actions')).toBe(false);
  });

  it('refuses a user who may not run it, says who may, and syncs nothing', async () => {
    h = await harness(authConfigs());
    const reply = await dispatch('sync auth-config-*', ctx('U_RANDOM'));
    expect(reply.ok).toBe(false);
    expect(reply.error).toMatchObject({ code: 'forbidden' });
    expect(reply.error!.message).toContain('U_RANDOM is not an operator. Allowed: U_OP, U_ADMIN');
    expect(await runs().list()).toEqual([]);
    expect(h.argo.syncs).toHaveLength(0);
  });

  it('needs n approvals; the requester may not approve, nor may a non-approver; an approver may', async () => {
    h = await harness(authConfigs(), {
      runbooks: [APPROVAL_RUNBOOK],
      config: testConfig({ groups: { oncall: ['U_ONCALL'], leads: ['U_LEAD'] }, operators: ['U_OP', 'group:oncall'] }),
    });
    // An operator who is not among the runbook's runners is refused, and told who may run it.
    const notRunner = await dispatch('run guarded-sync selector=auth-config-*', ctx('U_OP'));
    expect(notRunner.error).toMatchObject({ code: 'forbidden' });
    expect(notRunner.error!.message).toContain(
      'U_OP may not run guarded-sync. Allowed: U_REQ, group:oncall (U_ONCALL), U_ADMIN',
    );
    const preview = await dispatch('run guarded-sync selector=auth-config-*', ctx('U_ONCALL'));
    const runId = (preview.data as any).runId;
    const confirmed = await findAction('run.confirm')!.run(runId, ctx('U_ONCALL'));
    expect(confirmed!.data).toMatchObject({ runId, status: 'awaiting-approval' });
    // The Approve button is on the one message in the channel, not on the requester's ephemeral preview.
    await expect.poll(() => h!.notifier.posts.length).toBe(1);
    expect(
      h.notifier.posts[0].reply.blocks.flatMap((b) => (b.kind === 'actions' ? b.buttons.map((x) => x.action) : [])),
    ).toContain('run.approve');

    const self = await findAction('run.approve')!.run(runId, ctx('U_ONCALL'));
    expect(self!.error).toMatchObject({ code: 'forbidden', message: expect.stringContaining('started run') });
    const stranger = await findAction('run.approve')!.run(runId, ctx('U_OP'));
    expect(stranger!.error!.message).toContain(
      'U_OP may not approve guarded-sync. Approvers: U_AP1, U_AP2, U_REQ, group:leads (U_LEAD), U_ADMIN',
    );
    expect((await runs().get(runId))!.status).toBe('awaiting-approval');

    const first = await findAction('run.approve')!.run(runId, ctx('U_LEAD'));
    expect((first!.data as any).run).toMatchObject({
      status: 'awaiting-approval',
      approvals: [expect.objectContaining({ user: 'U_LEAD' })],
    });
    const twice = await findAction('run.approve')!.run(runId, ctx('U_LEAD'));
    expect(twice!.error!.message).toContain('already approved');
    expect(h.argo.syncs).toHaveLength(0);
    await findAction('run.approve')!.run(runId, ctx('U_AP1'));
    expect((await runs().waitForEnd(runId, 10_000)).status).toBe('succeeded');
    expect(h.argo.syncs).toHaveLength(3);
    const refusals = (await runs().audit.latest(50)).filter((e) => e.kind === 'run.refused');
    // The refused start (U_OP is no runner) and the three refused approvals.
    expect(refusals.map((e) => `${e.who} ${e.result}`).sort()).toEqual([
      'U_LEAD approval refused',
      'U_ONCALL approval refused',
      'U_OP approval refused',
      'U_OP forbidden',
    ]);
  });

  it('leaves no run behind for bad input, only one audit entry of the refused attempt', async () => {
    h = await harness(authConfigs());
    const before = (await runs().list(50)).length;
    const bad = await dispatch('run bulk-sync selector=no-such-app-*', ctx('U_OP'));
    expect(bad.ok).toBe(false);
    expect((await runs().list(50)).length).toBe(before);
    const refused = (await runs().audit.latest(10)).filter((e) => e.kind === 'run.refused');
    expect(refused).toEqual([expect.objectContaining({ who: 'U_OP', target: 'bulk-sync', result: 'preview failed' })]);
    expect(h.argo.syncs).toHaveLength(0);
    // `sync` with a typo'd glob is answered before any run exists, with the closest names.
    const typo = await dispatch('sync auth-confg-*', ctx('U_OP'));
    expect(typo.error).toMatchObject({
      code: 'unknown_target',
      message: 'No application matches `auth-confg-*`: nothing to sync.',
    });
    expect((await runs().list(50)).length).toBe(before);
  });

  it('checks the parameters form of `run` before the modal closes: each bad field gets its own message', async () => {
    h = await harness(authConfigs());
    const validate = findAction('run.form')!.validate!;
    const form = (values: Record<string, string>) => JSON.stringify({ metadata: 'bulk-sync', values });
    expect(
      validate(
        form({ selector: 'auth-*', concurrency: 'ten', waveTimeout: '10 minutes', gate: 'healthyy' }),
        ctx('U_OP'),
      ),
    ).toEqual({
      concurrency: 'expected a whole number (got "ten")',
      waveTimeout: 'expected a duration such as 30s, 10m or 1h (got "10 minutes")',
      gate: expect.stringMatching(/^expected one of healthy, synced, none \(got "healthyy"\); did you mean healthy\?/),
    });
    expect(validate(form({ selector: 'auth-*', concurrency: '5' }), ctx('U_OP'))).toBeUndefined();
    // What the action accepts is checked too, at the field that feeds it; a cross-field rule lands on the field left empty.
    expect(validate(form({ selector: 'auth-*', concurrency: '0' }), ctx('U_OP'))).toEqual({
      concurrency: 'concurrency must be at least 1 (how many apps sync at once)',
    });
    const restore = validate(
      JSON.stringify({ metadata: 'restore-sealed-secrets-keys', values: { to: 'prod-new' } }),
      ctx('U_OP'),
    );
    expect(restore).toEqual({ from: expect.stringContaining('say where the keys come from: from=CLUSTER') });
  });

  it('refuses to confirm a preview older than half an hour: the fleet may have moved on', async () => {
    h = await harness(authConfigs());
    const preview = await dispatch('sync auth-config-*', ctx('U_OP'));
    const runId = (preview.data as any).runId;
    // Age the stored preview.
    const redis = createRedis(h.redisUrl);
    try {
      const key = `${keyBase(h.prefix)}run:${runId}`;
      const stored = JSON.parse((await redis.get(key))!);
      await redis.set(key, JSON.stringify({ ...stored, createdAt: new Date(Date.now() - 31 * 60_000).toISOString() }));
    } finally {
      await closeRedis(redis);
    }
    const late = await findAction('run.confirm')!.run(runId, ctx('U_OP'));
    expect(late!.error!.message).toMatch(/older than 30m .* run the command again/);
    expect((await runs().get(runId))!.status).toBe('cancelled');
    expect(h.argo.syncs).toHaveLength(0);
  });

  it('locks target apps: a second run is told which run holds which apps', async () => {
    h = await harness([...authConfigs(), ...authServices()]);
    h.argo.syncMs = 400;
    const first = await runs().start({
      runbook: 'bulk-sync',
      params: { selector: 'auth-config-prod-eu*' },
      user: 'U_OP',
      surface: 'slack',
    });
    await runs().confirm(first.id, 'U_OP');
    const second = await dispatch('sync auth-config-prod-eu1 auth-service-*', ctx('U_OP'));
    expect(second.error).toMatchObject({ code: 'locked' });
    expect(second.error!.message).toContain(`${first.id} holds auth-config-prod-eu1`);
    expect((second.data as any).conflicts).toEqual([
      { runId: first.id, apps: [{ instance: 'argo-test', app: 'auth-config-prod-eu1' }] },
    ]);
    // Apps nobody holds are free.
    const other = await runs().start({
      runbook: 'bulk-sync',
      params: { selector: 'auth-config-prod-us1' },
      user: 'U_OP',
      surface: 'slack',
    });
    expect(other.status).toBe('awaiting-confirmation');
    await runs().waitForEnd(first.id, 10_000);
    const again = await runs().start({
      runbook: 'bulk-sync',
      params: { selector: 'auth-config-prod-eu1', includeSynced: 'true' },
      user: 'U_OP',
      surface: 'slack',
    });
    expect(again.status).toBe('awaiting-confirmation');
  });

  it('pauses (no new syncs start), resumes where it stopped, and aborts releasing locks', async () => {
    const many = Array.from({ length: 8 }, (_, i) => makeApp(`web-${i}`, `c${i}`));
    h = await harness(many);
    h.argo.syncMs = 150;
    const run = await runs().start({
      runbook: 'bulk-sync',
      params: { selector: 'web-*', concurrency: '2' },
      user: 'U_OP',
      surface: 'slack',
    });
    await runs().confirm(run.id, 'U_OP');
    await expect.poll(() => h!.argo.syncs.length, { timeout: 5000 }).toBeGreaterThanOrEqual(2);
    const paused = await dispatch(`runs pause ${run.id}`, ctx('U_OP'));
    expect((paused.data as any).run.status).toBe('paused');
    expect(paused.blocks.flatMap((b) => (b.kind === 'actions' ? b.buttons.map((x) => x.action) : []))).toEqual([
      'run.resume',
      'run.abort',
    ]);
    await new Promise((r) => setTimeout(r, 500));
    const atPause = h.argo.syncs.length;
    await new Promise((r) => setTimeout(r, 500));
    expect(h.argo.syncs.length).toBe(atPause);
    expect(atPause).toBeLessThan(8);

    await findAction('run.resume')!.run(run.id, ctx('U_OP'));
    await expect.poll(() => h!.argo.syncs.length, { timeout: 5000 }).toBeGreaterThan(atPause);
    await findAction('run.abort')!.run(run.id, ctx('U_OP'));
    const ended = await runs().waitForEnd(run.id, 5000);
    expect(ended.status).toBe('aborted');
    expect(ended.endedBy).toBe('U_OP');
    await new Promise((r) => setTimeout(r, 400));
    const atAbort = h.argo.syncs.length;
    await new Promise((r) => setTimeout(r, 400));
    expect(h.argo.syncs.length).toBe(atAbort);
    expect(new Set(h.argo.syncs.map((s) => s.app)).size).toBe(h.argo.syncs.length);
    // Locks were released: a new run can take the same apps.
    const next = await runs().start({
      runbook: 'bulk-sync',
      params: { selector: 'web-*', includeSynced: 'true' },
      user: 'U_OP',
      surface: 'slack',
    });
    expect(next.status).toBe('awaiting-confirmation');
    const kinds = (await runs().audit.latest(100)).map((e) => e.kind);
    expect(kinds).toEqual(expect.arrayContaining(['run.pause', 'run.resume', 'run.abort']));
  });

  it('cancels a run awaiting confirmation; nothing syncs; it cannot be confirmed afterwards', async () => {
    h = await harness(authConfigs());
    const run = await runs().start({
      runbook: 'bulk-sync',
      params: { selector: 'auth-config-*' },
      user: 'U_OP',
      surface: 'slack',
    });
    const cancelled = await dispatch(`runs cancel ${run.id}`, ctx('U_OP'));
    expect((cancelled.data as any).run.status).toBe('cancelled');
    const late = await findAction('run.confirm')!.run(run.id, ctx('U_OP'));
    expect(late!.error).toMatchObject({ code: 'invalid_state' });
    expect(h.argo.syncs).toHaveLength(0);
  });

  it('gates waves: no app of wave 2 is synced before every app of wave 1 is Healthy', async () => {
    h = await harness([...authConfigs(), ...clusters.map((c) => makeApp(`auth-service-${c}`, c))]);
    const healthyAt = new Map<string, number>();
    h.fleet.subscribe((e) => {
      if (
        'app' in e &&
        e.app.app.status?.health?.status === 'Healthy' &&
        e.app.app.status?.operationState?.phase === 'Succeeded'
      )
        healthyAt.set(e.app.app.metadata.name, Date.now());
    });
    const run = await runs().start({
      runbook: 'bulk-sync',
      params: { selector: 'auth-*', waves: 'auth-config-*;auth-service-*', includeSynced: 'true' },
      user: 'U_OP',
      surface: 'slack',
    });
    expect((run.preview!.data as any).waves.map((w: any) => [w.name, w.apps.length])).toEqual([
      ['auth-config-*', 3],
      ['auth-service-*', 3],
    ]);
    await runs().confirm(run.id, 'U_OP');
    expect((await runs().waitForEnd(run.id, 10_000)).status).toBe('succeeded');
    const lastConfigHealthy = Math.max(...clusters.map((c) => healthyAt.get(`auth-config-${c}`)!));
    const firstServiceSync = Math.min(...h.argo.syncs.filter((s) => s.app.startsWith('auth-service')).map((s) => s.at));
    expect(firstServiceSync).toBeGreaterThanOrEqual(lastConfigHealthy);
  });

  it('canary=1 syncs one app alone first', async () => {
    h = await harness(authConfigs());
    const run = await runs().start({
      runbook: 'bulk-sync',
      params: { selector: 'auth-config-*', canary: '1' },
      user: 'U_OP',
      surface: 'slack',
    });
    expect((run.preview!.data as any).waves.map((w: any) => w.apps.length)).toEqual([1, 2]);
    await runs().confirm(run.id, 'U_OP');
    await runs().waitForEnd(run.id, 10_000);
    const [canary, ...rest] = [...h.argo.syncs].sort((a, b) => a.at - b.at);
    expect(canary.app).toBe('auth-config-prod-eu1');
    expect(rest.every((s) => s.at - canary.at >= h!.argo.syncMs)).toBe(true);
  });

  it('times out a wave whose app stays Degraded, pauses with the reason, and continues on resume', async () => {
    h = await harness([...authConfigs(), ...authServices()]);
    h.argo.degraded.add('auth-config-prod-eu2');
    const run = await runs().start({
      runbook: 'bulk-sync',
      params: { selector: 'auth-*', waves: 'auth-config-*;auth-service-*', waveTimeout: '1s', includeSynced: 'true' },
      user: 'U_OP',
      surface: 'slack',
    });
    await runs().confirm(run.id, 'U_OP');
    const paused = await runs().waitForEnd(run.id, 10_000);
    expect(paused.status).toBe('paused');
    expect(paused.pausedReason).toContain(
      'auth-config-prod-eu2 (timed out: did not reach the healthy gate (sync Synced, health Degraded, operation Succeeded',
    );
    expect(paused.progress!.failing).toEqual([expect.objectContaining({ app: 'auth-config-prod-eu2' })]);
    expect(h.argo.syncs.filter((s) => s.app.startsWith('auth-service'))).toHaveLength(0);
    await runs().resume(run.id, 'U_OP');
    const end = await runs().waitForEnd(run.id, 10_000);
    // The next wave ran after the resume, each app once; the run ends failed because one app never got healthy.
    expect(h.argo.syncs.filter((s) => s.app.startsWith('auth-service'))).toHaveLength(3);
    expect(h.argo.syncs).toHaveLength(6);
    expect(end.status).toBe('failed');
    expect(end.error).toContain('1 app(s) did not sync: auth-config-prod-eu2 (timed out');
    expect(end.steps[0].output).toMatchObject({ synced: 5 });
  });

  it('with onFailure=abort, fails the run with the operation message and failed resources', async () => {
    h = await harness(authConfigs());
    h.argo.failing.set('auth-config-prod-eu1', 'one or more objects failed to apply: ConfigMap "x" is invalid');
    const run = await runs().start({
      runbook: 'bulk-sync',
      params: { selector: 'auth-config-*', onFailure: 'abort', concurrency: '1' },
      user: 'U_OP',
      surface: 'slack',
    });
    await runs().confirm(run.id, 'U_OP');
    const end = await runs().waitForEnd(run.id, 10_000);
    expect(end.status).toBe('failed');
    expect(end.error).toContain(
      'auth-config-prod-eu1 (sync Failed: one or more objects failed to apply: ConfigMap "x" is invalid; Deployment/auth-config-prod-eu1',
    );
    // concurrency 1 and abort: the other apps never started.
    expect(h.argo.syncs.map((s) => s.app)).toEqual(['auth-config-prod-eu1']);
  });

  it('never tramples an operation already running: it waits for it, then syncs', async () => {
    const busy = makeApp('auth-config-prod-eu1', 'prod-eu1');
    busy.status!.operationState = {
      operation: { sync: {}, initiatedBy: { username: 'alice' } },
      phase: 'Running',
      startedAt: new Date().toISOString(),
    };
    h = await harness([busy]);
    const run = await runs().start({
      runbook: 'bulk-sync',
      params: { selector: 'auth-config-*' },
      user: 'U_OP',
      surface: 'slack',
    });
    await runs().confirm(run.id, 'U_OP');
    await new Promise((r) => setTimeout(r, 400));
    expect(h.argo.syncs).toHaveLength(0);
    expect((await runs().get(run.id))!.status).toBe('running');
    const done = structuredClone(busy);
    done.status!.operationState!.phase = 'Succeeded';
    h.fleet.put('argo-test', done);
    expect((await runs().waitForEnd(run.id, 10_000)).status).toBe('succeeded');
    expect(h.argo.syncs).toHaveLength(1);
  });

  it('rides out Argo CD 5xx: a POST that may have been applied is verified with one GET, never re-sent', async () => {
    h = await harness(authConfigs());
    h.argo.fail5xx = 2;
    h.argo.appliedThen5xx = true;
    const run = await runs().start({
      runbook: 'bulk-sync',
      params: { selector: 'auth-config-*' },
      user: 'U_OP',
      surface: 'slack',
    });
    await runs().confirm(run.id, 'U_OP');
    expect((await runs().waitForEnd(run.id, 10_000)).status).toBe('succeeded');
    expect(h.argo.syncs.map((s) => s.app).sort()).toEqual(authConfigs().map((a) => a.metadata.name));
    const perApp = new Map<string, number>();
    for (const c of h.argo.calls) perApp.set(c.app, (perApp.get(c.app) ?? 0) + 1);
    expect(Math.max(...perApp.values())).toBeLessThanOrEqual(2);
  });

  it(
    'rides out Argo CD 503s that were not applied: re-sends only after a GET past the posting window shows no operation',
    { timeout: 30_000 },
    async () => {
      h = await harness(authConfigs());
      h.argo.fail5xx = 2;
      const run = await runs().start({
        runbook: 'bulk-sync',
        params: { selector: 'auth-config-*', concurrency: '1' },
        user: 'U_OP',
        surface: 'slack',
      });
      await runs().confirm(run.id, 'U_OP');
      expect((await runs().waitForEnd(run.id, 25_000)).status).toBe('succeeded');
      expect(h.argo.syncs.map((s) => s.app).sort()).toEqual(authConfigs().map((a) => a.metadata.name));
      // Each failed POST: a GET at once, a GET after the window (instance timeout 1 s + 5 s), only then the POST again.
      const calls = h.argo.calls.filter((c) => c.app === h!.argo.syncs[0].app).map((c) => c.method);
      expect(calls).toEqual(['sync', 'get', 'get', 'sync', 'get', 'get', 'sync']);
    },
  );

  it('finishes a run after its worker dies mid-step: a second worker resumes from the checkpoint, syncing each app once', async () => {
    const many = Array.from({ length: 12 }, (_, i) => makeApp(`auth-config-${i}`, `c${i}`));
    h = await harness(many);
    h.argo.syncMs = 200;
    const run = await runs().start({
      runbook: 'bulk-sync',
      params: { selector: 'auth-config-*', concurrency: '3', confirm: '12' },
      user: 'U_OP',
      surface: 'slack',
    });
    await runs().confirm(run.id, 'U_OP');
    await expect.poll(() => h!.argo.syncs.length, { timeout: 5000 }).toBeGreaterThanOrEqual(3);
    await h.engine.crash();
    const second = await h.startAnother();
    const end = await (second.runs as RunService).waitForEnd(run.id, 20_000);
    expect(end.status).toBe('succeeded');
    expect(h.argo.syncs.map((s) => s.app).sort()).toEqual(many.map((a) => a.metadata.name).sort());
  });

  it('updates the one live message at most once per progressIntervalMs, apart from state changes', async () => {
    const many = Array.from({ length: 30 }, (_, i) => makeApp(`web-${i}`, `c${i}`));
    h = await harness(many, { engine: { progressIntervalMs: 400 } });
    h.argo.syncMs = 60;
    const run = await runs().start({
      runbook: 'bulk-sync',
      params: { selector: 'web-*', concurrency: '3', confirm: '30' },
      user: 'U_OP',
      surface: 'slack',
      channel: 'C_OPS',
      threadTs: '9.9',
    });
    await runs().confirm(run.id, 'U_OP');
    const end = await runs().waitForEnd(run.id, 20_000);
    expect(end.status).toBe('succeeded');
    await new Promise((r) => setTimeout(r, 100));
    const updates = h.notifier.updates;
    expect(h.notifier.posts).toHaveLength(1);
    expect(updates.length).toBeGreaterThan(2);
    const duration = updates.at(-1)!.at - h.notifier.posts[0].at;
    // Throttled progress plus the final summary (and at most one more forced state change).
    expect(updates.length).toBeLessThanOrEqual(Math.ceil(duration / 400) + 2);
    expect(updates.every((u) => u.ref.ts === updates[0].ref.ts)).toBe(true);
    expect(updates.at(-1)!.reply.title).toContain('succeeded');
  });

  it('sends a pause to the live message at once, not after the progress throttle (an older "running" must not win)', async () => {
    const many = Array.from({ length: 20 }, (_, i) => makeApp(`web-${i}`, `c${i}`));
    h = await harness(many, { engine: { progressIntervalMs: 5000 } });
    h.argo.syncMs = 400;
    const run = await runs().start({
      runbook: 'bulk-sync',
      params: { selector: 'web-*', concurrency: '2', confirm: '20' },
      user: 'U_OP',
      surface: 'slack',
      channel: 'C_OPS',
      threadTs: '9.9',
    });
    await runs().confirm(run.id, 'U_OP');
    await expect.poll(() => h!.notifier.updates.length, { timeout: 5000 }).toBeGreaterThan(0);
    const pausedAt = Date.now();
    await runs().pause(run.id, 'U_OP');
    await expect.poll(() => h!.notifier.updates.at(-1)?.reply.title ?? '', { timeout: 2000 }).toContain('paused');
    expect(h.notifier.updates.at(-1)!.at - pausedAt).toBeLessThan(2000);
    await runs().abort(run.id, 'U_OP');
  });

  it('opens a parameters form for `run <runbook>` without params; its submission previews the run', async () => {
    h = await harness(authConfigs());
    const forms: any[] = [];
    const reply = await dispatch('run bulk-sync', ctx('U_OP', { openForm: async (f) => (forms.push(f), true) }));
    expect(reply.ok).toBe(true);
    expect(forms[0]).toMatchObject({ action: 'run.form', metadata: 'bulk-sync' });
    expect(forms[0].fields.find((f: any) => f.name === 'gate')).toMatchObject({
      type: 'enum',
      options: ['healthy', 'synced', 'none'],
      default: 'healthy',
    });
    expect(forms[0].fields.find((f: any) => f.name === 'selector')).toMatchObject({ required: true });
    const submitted = await findAction('run.form')!.run(
      JSON.stringify({ metadata: 'bulk-sync', values: { selector: 'auth-config-*', prune: 'true', revision: '' } }),
      ctx('U_OP'),
    );
    expect((submitted!.data as any).run).toMatchObject({
      status: 'awaiting-confirmation',
      params: { selector: 'auth-config-*', prune: true },
    });
    const bad = await findAction('run.form')!.run(
      JSON.stringify({ metadata: 'bulk-sync', values: { selector: 'x-*', concurrency: 'many' } }),
      ctx('U_OP'),
    );
    expect(bad!.error).toMatchObject({
      code: 'invalid_params',
      message: 'concurrency: expected a whole number (got "many")',
    });
  });

  /** A bulk sync crashes mid-run and Redis loses its step jobs; a worker started next finishes it. */
  async function requeuesVanishedStep(newerRuns: number) {
    const many = Array.from({ length: 6 }, (_, i) => makeApp(`auth-config-${i}`, `c${i}`));
    h = await harness(many);
    h.argo.syncMs = 200;
    const run = await runs().start({
      runbook: 'bulk-sync',
      params: { selector: 'auth-config-*', concurrency: '2' },
      user: 'U_OP',
      surface: 'slack',
    });
    await runs().confirm(run.id, 'U_OP');
    await expect.poll(() => h!.argo.syncs.length, { timeout: 5000 }).toBeGreaterThanOrEqual(2);
    await h.engine.crash();
    const { Redis } = await import('ioredis');
    const redis = new Redis(h.redisUrl);
    const jobKeys = await redis.keys(`${h.prefix}:runbook-steps:*`);
    expect(jobKeys.length).toBeGreaterThan(0);
    await redis.del(...jobKeys);
    await redis.quit();
    if (newerRuns) {
      // Many short runs of another runbook started since the bulk sync did.
      const store = new RunStore(createRedis(h.redisUrl), h.prefix);
      for (let i = 0; i < newerRuns; i++)
        await store.create({
          runbook: 'terminate-op',
          title: 'terminate',
          params: {},
          requester: 'U_OP',
          surface: 'slack',
          status: 'succeeded',
          approvalsRequired: 0,
          approvals: [],
          steps: [],
          generation: 0,
          targets: [],
        });
      await closeRedis(store.redis);
    }
    const second = await h.startAnother();
    const end = await (second.runs as RunService).waitForEnd(run.id, 20_000);
    expect(end.status).toBe('succeeded');
    expect(end.generation).toBe(1);
    expect(h.argo.syncs.map((s) => s.app).sort()).toEqual(many.map((a) => a.metadata.name).sort());
  }

  it('re-queues a running run whose step job vanished from the queue when a worker starts', async () => {
    await requeuesVanishedStep(0);
  });

  it('re-queues such a run behind 250 newer runs of another runbook', async () => {
    await requeuesVanishedStep(250);
  });

  it('ask --yes: confirms at once and reports the run id; the terminal sees progress', async () => {
    h = await harness(authConfigs());
    const reply = await dispatch(
      'sync auth-config-* prune=true',
      ctx('U_OP', { surface: 'terminal', assumeYes: true, channel: 'terminal', threadTs: undefined }),
    );
    expect(reply.ok).toBe(true);
    const runId = (reply.data as any).runId as string;
    expect((reply.data as any).run.status).toBe('running');
    const waited = await dispatch(`runs wait ${runId}`, ctx('U_OP', { surface: 'terminal' }));
    expect((waited.data as any).run.status).toBe('succeeded');
    expect(h.argo.syncs).toHaveLength(3);
    const shown = await dispatch(`runs show ${runId}`, ctx('U_OP'));
    expect(shown.title).toContain('succeeded');
    const list = await dispatch('runs', ctx('U_OP'));
    expect((list.data as any).runs[0]).toMatchObject({ id: runId, status: 'succeeded' });
    const audit = await dispatch('audit 5', ctx('U_OP'));
    expect((audit.data as any).entries).toHaveLength(5);
  });
});
