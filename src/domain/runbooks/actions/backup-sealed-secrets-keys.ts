import { RollcallError } from '../../../core/errors.js';
import { z } from 'zod';
import { backupKeys, listBackups, listKeys } from '../../../infra/kube/sealed-secrets.js';
import { controllerSettings, keyLine, kube } from './sealed-secrets-common.js';
import type { ActionContext, ActionPreview, PreviewContext, RunbookAction, StepOutcome } from './types.js';

function backupLocation(ctx: PreviewContext | ActionContext): { cluster: string; namespace: string } {
  const backup = ctx.services.config.sealedSecrets.backup;
  if (!backup)
    throw new RollcallError(
      'not_configured',
      'no backup location: set sealedSecrets.backup.cluster (and namespace) in rollcall.yaml',
    );
  return backup;
}

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
    summary: toCopy.length
      ? `Back up ${toCopy.length} of ${keys.length} sealed-secrets key(s) of ${input.cluster} to ${location.cluster}/${location.namespace}`
      : `Nothing to back up: ${keys.length ? `all ${keys.length} sealed-secrets key(s) of ${input.cluster} are already in` : `${input.cluster} has no sealed-secrets keys to copy to`} ${location.cluster}/${location.namespace}.`,
    data: { cluster: input.cluster, keys, alreadyBackedUp: keys.length - toCopy.length },
    blocks: [
      {
        kind: 'list',
        title: `Keys on ${input.cluster} (names and fingerprints only)`,
        items: keys.map((k) => ({
          ...keyLine(k),
          tone: have.has(k.fingerprint) ? ('ok' as const) : ('info' as const),
        })),
      },
    ],
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
  await ctx.audit({
    kind: 'kube.mutation',
    who: ctx.run.requester,
    message: `backup sealed-secrets keys of ${input.cluster}`,
    params: { location: result.location },
    result: `${result.created.length} copied`,
  });
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

export const backupSealedSecretsKeysAction: RunbookAction = {
  name: 'backup-sealed-secrets-keys',
  description: "Copy a cluster's sealed-secrets keys to the backup location",
  destructive: false,
  input: backupInput,
  defaultTimeoutMs: 5 * 60_000,
  preview: backupPreview,
  execute: backupExecute,
};
