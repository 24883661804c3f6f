import { afterEach, describe, expect, it } from 'vitest';
import { dispatch } from '../../src/commands/index.js';
import { kubeFor } from '../../src/infra/kube/clients.js';
import { keyBackupStatus, listKeys, sealedSecretStatus } from '../../src/infra/kube/sealed-secrets.js';
import { KEY_AGES_MS, sealedSecretsMigration } from '../../src/sim/kube/scenario.js';
import { SIM_KEYS } from '../../src/sim/kube/keys.js';
import { keyCertificate } from '../../src/sim/kube/tls.js';
import type { SimOperation } from '../../src/sim/store.js';
import { simOperations } from '../support/sim.js';
import { eventually, startControlSim, type ControlSim } from './control-sim.js';

let env: ControlSim | undefined;
afterEach(async () => {
  await env?.close();
  env = undefined;
});

const settings = {
  namespace: 'kube-system',
  name: 'sealed-secrets-controller',
  podSelector: 'name=sealed-secrets-controller',
};
const OLD_KEYS = ['sealed-secrets-keyq8x2m', 'sealed-secrets-keyz4k7p', 'sealed-secrets-keyb9w3d'];

/** The scenario's present: its keys are dated relative to it, as the simulator's clock, which starts now. */
let scenarioNow = new Date();
const ago = (ms: number) => new Date(scenarioNow.getTime() - ms).toISOString();

/** The scenario with a quick controller start, so a restart takes 100 ms of real time. */
function migration() {
  scenarioNow = new Date();
  const fixture = sealedSecretsMigration(scenarioNow);
  for (const k of fixture.kube!) if (k.sealedSecretsController) k.sealedSecretsController.startupMs = 100;
  return fixture;
}

const kubeMutations = async (e: ControlSim): Promise<SimOperation[]> =>
  (await simOperations(e.sim)).filter((o) => o.instance === 'kube');

async function startRun(e: ControlSim, text: string, user: string) {
  const reply = await dispatch(text, e.ctx(user));
  expect(reply.ok, JSON.stringify(reply.error)).toBe(true);
  return (reply.data as { runId: string }).runId;
}

describe('sealed-secrets key runbooks through the engine (sealed-secrets-migration)', () => {
  it('backs up names, fingerprints and NotBefore only; a second backup copies nothing; keyBackupStatus follows', async () => {
    env = await startControlSim({ fixture: migration() });
    const e = env;
    const status = () =>
      keyBackupStatus({
        clusters: e.services.kube!,
        backup: { cluster: 'ops', namespace: 'sealed-secrets-backup' },
        settings,
      });
    const before = await status();
    expect(before.map((s) => [s.cluster, s.newestKey?.name, s.newestBackup?.name, s.upToDate])).toEqual([
      ['prod-old', 'sealed-secrets-keyb9w3d', undefined, false],
      ['prod-new', 'sealed-secrets-keyn5t6v', undefined, false],
    ]);

    const runId = await startRun(e, 'run backup-sealed-secrets-keys cluster=prod-old', 'U_OP');
    const end = await e.runs.waitForEnd(runId, 15_000);
    expect(end.status, end.error).toBe('succeeded');
    const output = end.steps[0].output as any;
    expect(output.copied.map((k: any) => Object.keys(k).sort())).toEqual(
      OLD_KEYS.map(() => ['fingerprint', 'name', 'notBefore']),
    );
    expect(output.copied.map((k: any) => [k.name, k.notBefore.slice(0, 10)])).toEqual([
      ['prod-old-sealed-secrets-keyq8x2m', ago(KEY_AGES_MS.old1).slice(0, 10)],
      ['prod-old-sealed-secrets-keyz4k7p', ago(KEY_AGES_MS.old2).slice(0, 10)],
      ['prod-old-sealed-secrets-keyb9w3d', ago(KEY_AGES_MS.old3).slice(0, 10)],
    ]);
    expect(output.location).toBe('ops/sealed-secrets-backup');
    const creates = (await kubeMutations(e)).filter((o) => o.method === 'POST' && o.cluster === 'ops');
    expect(creates).toHaveLength(3);
    expect(JSON.stringify(end)).not.toMatch(/BEGIN (CERTIFICATE|PRIVATE KEY)|tls\.key"\s*:/);

    const after = await status();
    expect(after[0]).toMatchObject({
      cluster: 'prod-old',
      upToDate: true,
      newestBackup: {
        name: 'prod-old-sealed-secrets-keyb9w3d',
        notBefore: ago(KEY_AGES_MS.old3).replace(/\.\d{3}Z$/, '.000Z'),
      },
    });
    expect(after[0].newestBackup!.fingerprint).toBe(after[0].newestKey!.fingerprint);

    const writes = (await kubeMutations(e)).length;
    // A second backup has nothing to copy: it says so, and no run is created.
    const runsBefore = (await e.runs.list(50)).length;
    const again = await dispatch('run backup-sealed-secrets-keys cluster=prod-old', e.ctx('U_OP'));
    expect(again).toMatchObject({
      ok: true,
      data: {
        nothingToDo: true,
        summary:
          'Nothing to back up: all 3 sealed-secrets key(s) of prod-old are already in ops/sealed-secrets-backup.',
      },
    });
    expect('runId' in again.data).toBe(false);
    expect((await e.runs.list(50)).length).toBe(runsBefore);
    expect((await kubeMutations(e)).length).toBe(writes);
  });

  it('restore needs a second person, refuses self-approval, then every SealedSecret is Synced, the controller restarted and a fresh backup taken; twice changes nothing', async () => {
    env = await startControlSim({ fixture: migration() });
    const e = env;
    const target = kubeFor(e.services.kube!, 'prod-new');
    expect((await sealedSecretStatus(target)).failing).toHaveLength(5);

    const runId = await startRun(e, 'run restore-sealed-secrets-keys to=prod-new from=prod-old', 'U_OP');
    const waiting = (await e.runs.get(runId))!;
    expect(waiting.status).toBe('awaiting-approval');
    expect(waiting.preview!.summary).toContain(
      'Restore 3 sealed-secrets key(s) from the live keys of prod-old onto prod-new (5 SealedSecret(s) failing)',
    );
    // Deleting the target's own key is said as a warning, with where it is backed up first.
    expect(waiting.preview!.blocks).toContainEqual(
      expect.objectContaining({
        kind: 'text',
        tone: 'warn',
        text: expect.stringMatching(
          /prod-new's own 1 key\(s\) will be deleted.*backs them up to ops\/sealed-secrets-backup first/,
        ),
      }),
    );
    // `runs approve ID` is the terminal's Approve button: same checks, same refusal.
    const selfApproval = await dispatch(`runs approve ${runId}`, e.ctx('U_OP'));
    expect(selfApproval.ok).toBe(false);
    expect(selfApproval.error!.message).toMatch(/approve/i);
    // Who else may approve: not the requester.
    expect(selfApproval.error!.message).toContain('needs approval from someone else (U_OP2, U_ADMIN)');
    // The runbook names no approvers: another person who may run it approves; anyone else is told who may.
    await expect(e.runs.approve(runId, 'U_VISITOR')).rejects.toThrow(
      /U_VISITOR may not approve restore-sealed-secrets-keys\. Approvers: .*U_OP2/,
    );
    expect((await e.runs.get(runId))!.status).toBe('awaiting-approval');
    expect(await kubeMutations(e)).toEqual([]);

    const approved = await dispatch(`runs approve ${runId}`, e.ctx('U_OP2'));
    expect(approved.ok, JSON.stringify(approved.error)).toBe(true);
    const end = await e.runs.waitForEnd(runId, 20_000);
    expect(end.status, end.error).toBe('succeeded');
    const output = end.steps[0].output as any;
    expect(output.before).toEqual({ total: 5, synced: 0, failing: 5 });
    expect(output.after).toEqual({ total: 5, synced: 5, failing: [] });
    expect(output.keys.created).toEqual(OLD_KEYS);
    expect(output.keys.removedGenerated).toEqual(['sealed-secrets-keyn5t6v']);
    expect(output.refreshed.sort()).toEqual([
      'auth-secrets-prod-new',
      'orders-secrets-prod-new',
      'payments-secrets-prod-new',
    ]);
    // Argo CD, refreshed, sees the SealedSecrets decrypt: the apps are Healthy again in the mirror.
    await eventually(
      () =>
        output.refreshed.every(
          (name: string) => e.services.fleet.appsNamed(name)[0]?.app.status?.health?.status === 'Healthy',
        ),
      5000,
      'refreshed apps Healthy',
    );

    const status = await sealedSecretStatus(target);
    expect(status).toEqual({ total: 5, synced: 5, failing: [] });
    expect((await listKeys(target, settings)).map((k) => k.name)).toEqual(OLD_KEYS);

    const ops = await kubeMutations(e);
    const onNew = ops.filter((o) => o.cluster === 'prod-new');
    expect(onNew.filter((o) => o.method === 'POST').map((o) => o.path)).toEqual(
      OLD_KEYS.map(() => '/k/prod-new/api/v1/namespaces/kube-system/secrets'),
    );
    expect(
      onNew.some(
        (o) =>
          o.method === 'DELETE' &&
          o.path === '/k/prod-new/api/v1/namespaces/kube-system/secrets/sealed-secrets-keyn5t6v',
      ),
    ).toBe(true);
    const podDeletes = onNew.filter(
      (o) =>
        o.method === 'DELETE' &&
        o.path.startsWith('/k/prod-new/api/v1/namespaces/kube-system/pods/sealed-secrets-controller-'),
    );
    expect(podDeletes).toHaveLength(1);
    // Restart after the keys: the controller reads them only at start.
    expect(onNew.indexOf(podDeletes[0])).toBeGreaterThan(onNew.findIndex((o) => o.method === 'POST'));
    const backups = ops.filter(
      (o) =>
        o.cluster === 'ops' &&
        o.method === 'POST' &&
        o.path === '/k/ops/api/v1/namespaces/sealed-secrets-backup/secrets',
    );
    // The target's own key is copied to the backup location before it is deleted; then the fresh backup of the restored keys.
    expect(backups.map((o) => (o.body as any).metadata.name)).toEqual([
      'prod-new-sealed-secrets-keyn5t6v',
      ...OLD_KEYS.map((k) => `prod-new-${k}`),
    ]);
    const ownKeyDelete = ops.findIndex(
      (o) => o.method === 'DELETE' && o.path.endsWith('/secrets/sealed-secrets-keyn5t6v'),
    );
    expect(ops.indexOf(backups[0])).toBeLessThan(ownKeyDelete);
    expect(JSON.stringify(ops)).not.toContain('BEGIN');

    const second = await startRun(e, 'run restore-sealed-secrets-keys to=prod-new from=prod-old', 'U_OP');
    expect((await e.runs.get(second))!.preview!.summary).toContain('Restore 0 sealed-secrets key(s)');
    await e.runs.approve(second, 'U_ADMIN');
    const again = await e.runs.waitForEnd(second, 20_000);
    expect(again.status, again.error).toBe('succeeded');
    expect((again.steps[0].output as any).keys).toEqual({ created: [], removedGenerated: [] });
    expect(await kubeMutations(e)).toEqual(ops);
  });

  it('restores from the backups of a cluster rollcall cannot reach, and refuses a key name that exists with another certificate', async () => {
    env = await startControlSim({ fixture: migration() });
    const e = env;
    expect(
      (await e.runs.waitForEnd(await startRun(e, 'run backup-sealed-secrets-keys cluster=prod-old', 'U_OP'), 15_000))
        .status,
    ).toBe('succeeded');
    // prod-old is gone: only its backups in ops are left.
    (e.services.kube as Map<string, unknown>).delete('prod-old');
    const runId = await startRun(e, 'run restore-sealed-secrets-keys to=prod-new from=prod-old', 'U_OP');
    expect((await e.runs.get(runId))!.preview!.summary).toContain(
      'from backups of prod-old in ops/sealed-secrets-backup onto prod-new',
    );
    await e.runs.approve(runId, 'U_ADMIN');
    const end = await e.runs.waitForEnd(runId, 20_000);
    expect(end.status, end.error).toBe('succeeded');
    expect(await sealedSecretStatus(kubeFor(e.services.kube!, 'prod-new'))).toEqual({
      total: 5,
      synced: 5,
      failing: [],
    });

    // A key of the same name but another certificate on the target is never overwritten.
    const api = kubeFor(e.services.kube!, 'ops').core;
    const b64 = (s: string) => Buffer.from(s).toString('base64');
    await api.createNamespacedSecret({
      namespace: 'sealed-secrets-backup',
      body: {
        metadata: {
          name: 'prod-old-sealed-secrets-keyq8x2m-b',
          labels: { 'rollcall.io/sealed-secrets-backup': 'true', 'rollcall.io/source-cluster': 'prod-x' },
          annotations: { 'rollcall.io/source-name': 'sealed-secrets-keyq8x2m' },
        },
        type: 'kubernetes.io/tls',
        data: { 'tls.crt': b64(keyCertificate(SIM_KEYS.spare3.key, scenarioNow)), 'tls.key': b64(SIM_KEYS.spare3.key) },
      },
    });
    const refused = await dispatch(
      'run restore-sealed-secrets-keys to=prod-new backup=prod-old-sealed-secrets-keyq8x2m-b from=prod-x',
      e.ctx('U_OP'),
    );
    expect(refused.ok).toBe(false);
    expect(refused.error).toMatchObject({ code: 'conflict' });
    expect(refused.error!.message).toContain(
      'key sealed-secrets-keyq8x2m exists on prod-new with a different certificate: refusing',
    );
  });
});
