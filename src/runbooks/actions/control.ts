import type { ErrorCode } from '../../core/error-codes.js';
import { RollcallError } from '../../core/errors.js';
import { mention, when } from '../../core/format.js';
import { z } from 'zod';
import type { ReplyBlock } from '../../core/reply.js';
import type { FleetAppSet } from '../../fleet/model.js';
import { selectApps } from '../../fleet/select.js';
import { kubeFor } from '../../kube/clients.js';
import {
  backupKeys,
  deleteKeys,
  listBackups,
  listKeys,
  planRestore,
  restartController,
  sealedSecretStatus,
  waitControllerReady,
  writeRestoredKeys,
  type ControllerSettings,
  type KeySource,
} from '../../kube/sealed-secrets.js';
import {
  applyPauseChange,
  PauseError,
  planPause,
  resumeChange,
  terminateOperations,
  verifyPause,
  type PausePlan,
  type PauseRecord,
} from '../rollout-pause.js';
import { parseSelectorParam } from './bulk-sync.js';
import type { ActionContext, ActionPreview, PreviewContext, RunbookAction, StepOutcome } from './types.js';

const fail = (code: ErrorCode, message: string) => new RollcallError(code, message);

function resolveAppSet(ctx: PreviewContext | ActionContext, name: string, instance?: string): FleetAppSet | undefined {
  const found = ctx.services.fleet.appSetsNamed(name).filter((s) => !instance || s.instance === instance);
  if (found.length > 1) throw fail('ambiguous_target', `ApplicationSet ${name} exists on ${found.map((s) => s.instance).join(', ')}: add instance=`);
  return found[0];
}

function changeLine(c: PausePlan['changes'][number]): string {
  const show = (v: unknown) => (v === null ? 'unset' : JSON.stringify(v));
  return `${c.kind} *${c.name}*: ${c.field} ${show(c.before)} → ${show(c.after)}`;
}

// ---------- pause-rollout ----------

const pauseInput = z.object({
  target: z.string().min(1),
  instance: z.string().optional(),
  terminate: z.boolean().default(false),
  /** How long to wait before re-reading the objects to check the pause held. */
  verifyAfterMs: z.number().int().min(0).default(5000),
});

async function pausePreview(ctx: PreviewContext): Promise<ActionPreview> {
  const input = pauseInput.parse(ctx.input);
  if (!ctx.services.pauses) throw fail('unavailable', 'pausing needs Redis to record what it changes, and this process has none');
  const appSet = resolveAppSet(ctx, input.target, input.instance);
  let plan: PausePlan;
  if (appSet) plan = planPause(ctx.services.fleet, { appSet });
  else {
    const apps = selectApps(ctx.services.fleet, { ...parseSelectorParam(input.target), ...(input.instance ? { instance: input.instance } : {}) });
    if (!apps.length) throw fail('unknown_target', `no ApplicationSet or app matches "${input.target}"`);
    plan = planPause(ctx.services.fleet, { apps, label: input.target });
  }
  const blocks: ReplyBlock[] = [
    { kind: 'list', title: `Changes (${plan.changes.length}), each recorded for resume`, items: plan.changes.slice(0, 30).map((c) => ({ text: changeLine(c), detail: c.reason })), total: plan.changes.length },
  ];
  if (plan.warnings.length) blocks.push({ kind: 'list', title: 'Heads-up', items: plan.warnings.map((w) => ({ text: w, tone: 'warn' as const })) });
  if (plan.runningOperations.length) {
    blocks.push({
      kind: 'context',
      text: input.terminate
        ? `terminate=true: the running operations of ${plan.runningOperations.join(', ')} will be terminated.`
        : `${plan.runningOperations.length} app(s) still have a sync running (${plan.runningOperations.slice(0, 5).join(', ')}); they finish unless you add terminate=true.`,
    });
  }
  return {
    targets: plan.changes.map((c) => ({ instance: c.instance, app: c.kind === 'ApplicationSet' ? `appset:${c.name}` : c.name })),
    summary: `Pause ${appSet ? `the ApplicationSet ${plan.target}` : plan.target} on ${plan.instance}: ${plan.changes.length} change(s)`,
    data: { plan },
    blocks,
  };
}

async function pauseExecute(ctx: ActionContext): Promise<StepOutcome> {
  const input = pauseInput.parse(ctx.input);
  const plan = ((ctx.run.preview?.byStep?.[ctx.stepId] ?? ctx.run.preview?.data) as { plan?: PausePlan } | undefined)?.plan;
  if (!plan) return { status: 'failed', error: 'the run has no pause plan (preview missing)' };
  const store = ctx.services.pauses!;
  const record: PauseRecord = { target: plan.target, instance: plan.instance, by: ctx.run.requester, at: new Date(ctx.now()).toISOString(), runId: ctx.run.id, changes: plan.changes };
  // Saved before any change, so a crash mid-way still leaves resume everything it needs.
  if (!(await store.get(plan.instance, plan.target))) await store.save(record);
  const pctx = { argocd: ctx.services.argocd, by: ctx.run.requester, runId: ctx.run.id, now: new Date(record.at) };
  for (const [i, change] of plan.changes.entries()) {
    const key = `change:${i}`;
    if ((await ctx.checkpoint().get(key))?.state === 'applied') continue;
    await ctx.limiter.acquire(change.instance, ctx.signal);
    await ctx.assertLease();
    await applyPauseChange(change, pctx);
    await ctx.checkpoint().set(key, { state: 'applied' });
    await ctx.audit({ kind: 'argocd.mutation', who: ctx.run.requester, message: `pause ${change.kind} ${change.name}: ${change.field}`, params: { before: change.before, after: change.after }, result: 'ok' });
  }
  let terminated: string[] = [];
  if (input.terminate && plan.runningOperations.length) await ctx.assertLease();
  if (input.terminate && plan.runningOperations.length) terminated = await terminateOperations(plan.instance, plan.runningOperations, pctx);
  if (input.verifyAfterMs) await new Promise((r) => setTimeout(r, input.verifyAfterMs));
  const reverted = await verifyPause(plan.changes, ctx.services.argocd);
  if (reverted.length) {
    return {
      status: 'failed',
      error: `the pause did not hold: ${reverted.map((c) => `${c.kind} ${c.name} ${c.field}`).join(', ')} changed back (reverted by a controller or from git). Check what manages it.`,
    };
  }
  const summary = [
    ...plan.changes.map((c) => `${c.kind} ${c.name}: ${c.field} set to ${JSON.stringify(c.after)} (${c.reason})`),
    ...(terminated.length ? [`terminated the running operation of ${terminated.join(', ')}`] : []),
    `held: re-read after the change, nothing reverted it. \`resume ${plan.target}\` restores the recorded values.`,
  ];
  return { status: 'succeeded', output: { paused: plan.target, changes: plan.changes.length, terminated, summary } };
}

// ---------- resume-rollout ----------

const resumeInput = z.object({ target: z.string().min(1), instance: z.string().optional() });

async function findRecord(ctx: PreviewContext | ActionContext, target: string, instance?: string): Promise<PauseRecord> {
  if (!ctx.services.pauses) throw fail('unavailable', 'resuming needs Redis, where pauses are recorded');
  const records = (await ctx.services.pauses.find(target)).filter((r) => !instance || r.instance === instance);
  if (!records.length) {
    const all = await ctx.services.pauses.list();
    throw fail('not_paused', `${target} is not paused by rollcall${all.length ? ` (paused: ${all.map((r) => r.target).join(', ')})` : ''}`);
  }
  if (records.length > 1) throw fail('ambiguous_target', `${target} is paused on ${records.map((r) => r.instance).join(', ')}: add instance=`);
  return records[0];
}

async function resumePreview(ctx: PreviewContext): Promise<ActionPreview> {
  const input = resumeInput.parse(ctx.input);
  const record = await findRecord(ctx, input.target, input.instance);
  return {
    targets: record.changes.map((c) => ({ instance: c.instance, app: c.kind === 'ApplicationSet' ? `appset:${c.name}` : c.name })),
    summary: `Resume ${record.target} on ${record.instance} (paused by ${mention(record.by)} ${when(record.at)}): restore ${record.changes.length} value(s)`,
    data: { record },
    blocks: [
      {
        kind: 'list',
        title: 'Restores exactly what the pause replaced',
        items: record.changes.map((c) => ({ text: `${c.kind} *${c.name}*: ${c.field} → ${c.before === null ? 'unset' : JSON.stringify(c.before)}` })),
      },
    ],
  };
}

async function resumeExecute(ctx: ActionContext): Promise<StepOutcome> {
  const input = resumeInput.parse(ctx.input);
  const record = await findRecord(ctx, input.target, input.instance);
  const restored: string[] = [];
  // Parents first: restoring the child while its parent still has auto-sync off is harmless, the reverse is not.
  const ordered = [...record.changes].reverse();
  for (const change of ordered) {
    await ctx.assertLease();
    try {
      const outcome = await resumeChange(change, ctx.services.argocd);
      if (outcome === 'restored') {
        restored.push(`${change.kind} ${change.name}`);
        await ctx.audit({ kind: 'argocd.mutation', who: ctx.run.requester, message: `resume ${change.kind} ${change.name}: ${change.field}`, params: { restored: change.before }, result: 'ok' });
      }
    } catch (error) {
      if (error instanceof PauseError) return { status: 'failed', error: error.message, output: { restored } };
      throw error;
    }
  }
  await ctx.services.pauses!.remove(record.instance, record.target);
  const summary = restored.length
    ? [`restored ${restored.join(', ')} to the values recorded at the pause; rollcall annotations removed`]
    : ['nothing to restore: every recorded value was already back'];
  return { status: 'succeeded', output: { resumed: record.target, restored, summary } };
}

// ---------- sealed-secrets keys ----------

function controllerSettings(ctx: PreviewContext | ActionContext): ControllerSettings {
  return ctx.services.config.sealedSecrets.controller;
}

function backupLocation(ctx: PreviewContext | ActionContext): { cluster: string; namespace: string } {
  const backup = ctx.services.config.sealedSecrets.backup;
  if (!backup) throw fail('not_configured', 'no backup location: set sealedSecrets.backup.cluster (and namespace) in rollcall.yaml');
  return backup;
}

function kube(ctx: PreviewContext | ActionContext, cluster: string) {
  if (!ctx.services.kube) throw fail('not_configured', 'no Kubernetes clusters configured (kube.clusters in rollcall.yaml)');
  try {
    return kubeFor(ctx.services.kube, cluster);
  } catch (error) {
    throw fail('unknown_target', (error as Error).message);
  }
}

const keyLine = (k: { name: string; fingerprint: string; notBefore: string }) => ({ text: `${k.name}`, detail: `sha256 ${k.fingerprint.slice(0, 23)}… · NotBefore ${k.notBefore.slice(0, 10)}` });

const backupInput = z.object({ cluster: z.string().min(1) });

async function backupPreview(ctx: PreviewContext): Promise<ActionPreview> {
  const input = backupInput.parse(ctx.input);
  const location = backupLocation(ctx);
  const keys = await listKeys(kube(ctx, input.cluster), controllerSettings(ctx));
  const existing = await listBackups(kube(ctx, location.cluster), location.namespace, input.cluster);
  const have = new Set(existing.map((b) => b.fingerprint));
  const toCopy = keys.filter((k) => !have.has(k.fingerprint));
  return {
    targets: [{ instance: 'kube', app: `sealed-secrets:${input.cluster}` }],
    summary: `Back up ${toCopy.length} of ${keys.length} sealed-secrets key(s) of ${input.cluster} to ${location.cluster}/${location.namespace}`,
    data: { cluster: input.cluster, keys, alreadyBackedUp: keys.length - toCopy.length },
    blocks: [{ kind: 'list', title: `Keys on ${input.cluster} (names and fingerprints only)`, items: keys.map((k) => ({ ...keyLine(k), tone: have.has(k.fingerprint) ? ('ok' as const) : ('info' as const) })) }],
    empty: toCopy.length === 0,
  };
}

async function backupExecute(ctx: ActionContext): Promise<StepOutcome> {
  const input = backupInput.parse(ctx.input);
  const location = backupLocation(ctx);
  const result = await backupKeys({
    source: kube(ctx, input.cluster),
    sourceCluster: input.cluster,
    target: kube(ctx, location.cluster),
    backupNamespace: location.namespace,
    settings: controllerSettings(ctx),
    now: new Date(ctx.now()),
  });
  await ctx.audit({ kind: 'kube.mutation', who: ctx.run.requester, message: `backup sealed-secrets keys of ${input.cluster}`, params: { location: result.location }, result: `${result.created.length} copied` });
  return {
    status: 'succeeded',
    output: {
      cluster: input.cluster,
      location: result.location,
      copied: result.created.map((k) => ({ name: k.name, fingerprint: k.fingerprint, notBefore: k.notBefore })),
      alreadyBackedUp: result.alreadyBackedUp.length,
      summary: [
        result.created.length
          ? `copied ${result.created.length} key(s) to ${result.location}: ${result.created.map((k) => `${k.name} (NotBefore ${k.notBefore.slice(0, 10)})`).join(', ')}`
          : `nothing to copy: all ${result.alreadyBackedUp.length} key(s) were already backed up in ${result.location}`,
      ],
      newestKey: result.newestKey && { name: result.newestKey.name, notBefore: result.newestKey.notBefore },
      newestBackup: result.newestBackup && { name: result.newestBackup.name, notBefore: result.newestBackup.notBefore },
    },
  };
}

const restoreInput = z
  .object({
    to: z.string().min(1),
    from: z.string().optional(),
    backup: z.string().optional(),
    removeGeneratedKeys: z.boolean().default(true),
    readyTimeoutMs: z.number().int().positive().default(120_000),
    verifyTimeoutMs: z.number().int().positive().default(120_000),
    pollMs: z.number().int().positive().default(1000),
  })
  .refine((i) => !!i.from || !!i.backup, { message: 'say where the keys come from: from=CLUSTER (that cluster\'s keys) or backup=NAME (one backed-up key)' });

function keySource(ctx: PreviewContext | ActionContext, input: z.infer<typeof restoreInput>): KeySource {
  const location = ctx.services.config.sealedSecrets.backup;
  if (input.backup) {
    if (!location) throw fail('not_configured', 'backup= needs sealedSecrets.backup in rollcall.yaml');
    // Backups are named <source cluster>-<key name> (backupKeys).
    const sourceCluster = input.from ?? input.backup.split('-sealed-secrets-key')[0];
    return { kind: 'backup', kube: kube(ctx, location.cluster), namespace: location.namespace, sourceCluster, name: input.backup };
  }
  const from = input.from!;
  // A reachable source cluster is copied live: its backups may lack the newest key (argocd-facts C).
  // Without access to it (decommissioned, down), its backups are what is left.
  if (ctx.services.kube?.has(from)) return { kind: 'cluster', kube: kube(ctx, from), cluster: from };
  if (!location) throw fail('not_configured', `no Kubernetes access to ${from} (kube.clusters) and no sealedSecrets.backup to restore its backups from`);
  return { kind: 'backup', kube: kube(ctx, location.cluster), namespace: location.namespace, sourceCluster: from };
}

const sourceLabel = (source: KeySource) => (source.kind === 'cluster' ? `the live keys of ${source.cluster}` : `backups of ${source.sourceCluster} in ${source.kube.cluster}/${source.namespace}${source.name ? ` (${source.name})` : ''}`);

async function restorePreview(ctx: PreviewContext): Promise<ActionPreview> {
  const input = restoreInput.parse(ctx.input);
  if (input.from === input.to) throw fail('invalid_params', `from and to are both ${input.to}`);
  const target = kube(ctx, input.to);
  const source = keySource(ctx, input);
  const plan = await planRestore(source, target, controllerSettings(ctx));
  if (plan.conflicts.length) throw fail('conflict', `key ${plan.conflicts[0].name} exists on ${input.to} with a different certificate: refusing`);
  // Anything sealed against the target's own keys is unrecoverable once they are deleted without a copy.
  const location = ctx.services.config.sealedSecrets.backup;
  const removesOwnKeys = input.removeGeneratedKeys && plan.generated.length > 0;
  if (removesOwnKeys && !location) {
    throw fail('not_configured', `removing ${input.to}'s own ${plan.generated.length} key(s) needs a backup of them first, and no sealedSecrets.backup is configured: configure one, or run with removeGeneratedKeys=false`);
  }
  const status = await sealedSecretStatus(target);
  const blocks: ReplyBlock[] = [
    { kind: 'fields', fields: [
      { label: 'SealedSecrets on target', value: `${status.total} (${status.synced} Synced, ${status.failing.length} failing)` },
      { label: 'Keys to create', value: String(plan.toCreate.length) },
      { label: 'Already present', value: String(plan.alreadyPresent.length) },
      { label: 'Generated by the target', value: `${plan.generated.length}${plan.generated.length && input.removeGeneratedKeys ? ' (will be removed)' : ''}` },
    ] },
    ...(plan.toCreate.length ? [{ kind: 'list' as const, title: 'Keys restored (names and fingerprints only)', items: plan.toCreate.map(keyLine) }] : []),
  ];
  if (removesOwnKeys) {
    blocks.unshift({
      kind: 'text',
      tone: 'warn',
      text: `:warning: *${input.to}'s own ${plan.generated.length} key(s) will be deleted* (${plan.generated.map((k) => k.name).join(', ')}): anything sealed against them only decrypts with a copy. The run backs them up to ${location!.cluster}/${location!.namespace} first and stops if that fails.`,
    });
  }
  if (status.failing.length) blocks.push({ kind: 'list', title: 'Failing now', items: status.failing.slice(0, 10).map((f) => ({ text: `${f.namespace}/${f.name}`, detail: f.message, tone: 'error' as const })), total: status.failing.length });
  const writes = plan.toCreate.length > 0 || (input.removeGeneratedKeys && plan.generated.length > 0);
  blocks.push({
    kind: 'context',
    text: writes
      ? 'Then: restart the controller (keys are read only at start), wait until Ready, verify every SealedSecret is Synced, refresh the affected Argo CD apps, take a fresh backup of the target.'
      : 'The keys are already in place: nothing is written and the controller is not restarted. The run verifies every SealedSecret is Synced, refreshes the affected Argo CD apps and takes a fresh backup of the target.',
  });
  return {
    targets: [{ instance: 'kube', app: `sealed-secrets:${input.to}` }],
    summary: `Restore ${plan.toCreate.length} sealed-secrets key(s) from ${sourceLabel(source)} onto ${input.to} (${status.failing.length} SealedSecret(s) failing)`,
    data: { plan, before: { total: status.total, synced: status.synced, failing: status.failing.length } },
    blocks,
  };
}

async function restoreExecute(ctx: ActionContext): Promise<StepOutcome> {
  const input = restoreInput.parse(ctx.input);
  const settings = controllerSettings(ctx);
  const target = kube(ctx, input.to);
  const source = keySource(ctx, input);
  const phase = async (name: string, work: (interrupted: boolean) => Promise<Record<string, unknown>>, headline: (o: Record<string, unknown>) => string) => {
    const saved = await ctx.checkpoint().get(name);
    if (saved?.state === 'done') {
      const { state: _state, at: _at, ...done } = saved;
      return done;
    }
    // 'started' left by a worker that died mid-phase: the phase's writes may have happened.
    // The write is fenced: an attempt that lost its lease stops here, before the phase's calls.
    await ctx.checkpoint().set(name, { state: 'started' });
    const output = await work(saved?.state === 'started');
    await ctx.checkpoint().set(name, { state: 'done', ...output });
    ctx.progress({ headline: `restore onto ${input.to}: ${headline(output)}`, counts: {}, failing: [], updatedAt: new Date(ctx.now()).toISOString() });
    return output;
  };
  const before = await phase(
    'preflight',
    async () => {
      const s = await sealedSecretStatus(target);
      return { total: s.total, synced: s.synced, failing: s.failing.length };
    },
    (o) => `${o.failing} of ${o.total} SealedSecret(s) failing before the restore`,
  );
  if (input.removeGeneratedKeys) {
    await phase(
      'backup-own-keys',
      async () => {
        const plan = await planRestore(source, target, settings);
        const location = ctx.services.config.sealedSecrets.backup;
        if (!plan.generated.length) return { copied: [] };
        if (!location) throw fail('not_configured', `no sealedSecrets.backup to keep ${input.to}'s own keys in before deleting them: refusing`);
        const r = await backupKeys({ source: target, sourceCluster: input.to, target: kube(ctx, location.cluster), backupNamespace: location.namespace, settings, now: new Date(ctx.now()) });
        await ctx.audit({ kind: 'kube.mutation', who: ctx.run.requester, message: `back up ${input.to}'s own sealed-secrets keys before the restore`, params: { location: r.location, copied: r.created.map((k) => k.name) }, result: 'ok' });
        return { location: r.location, copied: r.created.map((k) => k.name), alreadyBackedUp: r.alreadyBackedUp.map((k) => k.name) };
      },
      (o) => `${input.to}'s own keys backed up${o.location ? ` to ${o.location}` : ''} before anything is deleted`,
    );
  }
  const written = await phase(
    'keys',
    async (interrupted) => {
      const plan = await planRestore(source, target, settings);
      const r = await writeRestoredKeys(source, target, settings);
      const removed = input.removeGeneratedKeys ? await deleteKeys(target, settings, plan.generated.map((k) => k.name)) : [];
      await ctx.audit({ kind: 'kube.mutation', who: ctx.run.requester, message: `restore sealed-secrets keys onto ${input.to}`, params: { created: r.created.map((k) => k.name), removed }, result: 'ok' });
      return { created: r.created.map((k) => k.name), removedGenerated: removed, interrupted };
    },
    (o) => `${(o.created as string[]).length} key(s) created (${(o.created as string[]).join(', ') || 'none'}), ${(o.removedGenerated as string[]).length} generated key(s) removed`,
  );
  const { interrupted, ...keys } = written;
  // Keys are read only at start: restart whenever this run changed them (or may have, before a crash).
  const changed = !!interrupted || (keys.created as string[]).length + (keys.removedGenerated as string[]).length > 0;
  if (changed) {
    await phase(
      'restart',
      async () => {
        const oldPods = await restartController(target, settings);
        const ready = await waitControllerReady(target, settings, oldPods, input.readyTimeoutMs, input.pollMs);
        await ctx.audit({ kind: 'kube.mutation', who: ctx.run.requester, message: `restart sealed-secrets controller on ${input.to}`, params: { deleted: oldPods }, result: `ready: ${ready}` });
        return { deletedPods: oldPods, readyPod: ready };
      },
      (o) => `controller restarted (${o.readyPod} Ready)`,
    );
  }
  const after = await phase(
    'verify',
    async () => {
      const deadline = Date.now() + input.verifyTimeoutMs;
      let s = await sealedSecretStatus(target);
      while (s.failing.length && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, input.pollMs));
        s = await sealedSecretStatus(target);
      }
      return { total: s.total, synced: s.synced, failing: s.failing.map((f) => `${f.namespace}/${f.name}: ${f.message}`) };
    },
    (o) => `${o.synced} of ${o.total} SealedSecret(s) Synced`,
  );
  const refreshed = await phase(
    'refresh',
    async () => {
      const apps = ctx.services.fleet
        .apps()
        .filter((a) => a.cluster === input.to && (a.app.status?.resources ?? []).some((r) => r.kind === 'SealedSecret'));
      for (const a of apps) await ctx.services.argocd.get(a.instance)?.getApplication({ name: a.app.metadata.name }, { refresh: 'normal' });
      return { apps: apps.map((a) => a.app.metadata.name) };
    },
    (o) => `${(o.apps as string[]).length} Argo CD app(s) refreshed`,
  );
  const backup = await phase(
    'backup',
    async () => {
      const location = ctx.services.config.sealedSecrets.backup;
      if (!location) return { skipped: 'no sealedSecrets.backup configured' };
      const r = await backupKeys({ source: target, sourceCluster: input.to, target: kube(ctx, location.cluster), backupNamespace: location.namespace, settings, now: new Date(ctx.now()) });
      return { location: r.location, copied: r.created.map((k) => k.name) };
    },
    (o) => (o.skipped ? `fresh backup skipped: ${o.skipped}` : `fresh backup in ${o.location}: ${(o.copied as string[]).length} key(s) copied`),
  );
  const failing = after.failing as string[];
  const created = keys.created as string[];
  const removed = keys.removedGenerated as string[];
  const summary = [
    `SealedSecrets on ${input.to}: ${before.synced} of ${before.total} Synced before, ${after.synced} of ${after.total} after`,
    created.length || removed.length
      ? `keys: created ${created.join(', ') || 'none'}; removed the target's own ${removed.join(', ') || 'none'}; controller restarted`
      : 'keys: already in place, nothing written, no restart',
    `Argo CD apps refreshed: ${(refreshed.apps as string[]).join(', ') || 'none'}`,
    backup.skipped ? `fresh backup skipped: ${backup.skipped}` : `fresh backup in ${backup.location}: ${(backup.copied as string[]).length} key(s) copied`,
  ];
  const output = { before, after: { total: after.total, synced: after.synced, failing }, keys, refreshed: refreshed.apps, backup, summary };
  if (failing.length) return { status: 'failed', error: `${failing.length} SealedSecret(s) still fail on ${input.to}: ${failing.slice(0, 3).join('; ')}`, output };
  return { status: 'succeeded', output };
}

export const controlActions: RunbookAction[] = [
  { name: 'pause-rollout', description: 'Hold a rollout or auto-sync, recording every change for resume', destructive: true, input: pauseInput, defaultTimeoutMs: 5 * 60_000, preview: pausePreview, execute: pauseExecute },
  { name: 'resume-rollout', description: 'Restore exactly what pause-rollout changed', destructive: true, input: resumeInput, defaultTimeoutMs: 5 * 60_000, preview: resumePreview, execute: resumeExecute },
  { name: 'backup-sealed-secrets-keys', description: "Copy a cluster's sealed-secrets keys to the backup location", destructive: false, input: backupInput, defaultTimeoutMs: 5 * 60_000, preview: backupPreview, execute: backupExecute },
  { name: 'restore-sealed-secrets-keys', description: 'Restore sealed-secrets keys onto a cluster, restart, verify, back up', destructive: true, input: restoreInput, defaultTimeoutMs: 15 * 60_000, preview: restorePreview, execute: restoreExecute },
];
