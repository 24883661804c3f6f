import { RollcallError } from '../../../core/errors.js';
import { kubeFor } from '../../../infra/kube/clients.js';
import type { ControllerSettings } from '../../../infra/kube/sealed-secrets.js';
import type { ActionContext, PreviewContext } from './types.js';

// Shared by backup-sealed-secrets-keys and restore-sealed-secrets-keys: the controller settings, a cluster's Kubernetes client, how a key is listed.

export function controllerSettings(ctx: PreviewContext | ActionContext): ControllerSettings {
  return ctx.services.config.sealedSecrets.controller;
}

export function kube(ctx: PreviewContext | ActionContext, cluster: string) {
  if (!ctx.services.kube)
    throw new RollcallError('not_configured', 'no Kubernetes clusters configured (kube.clusters in rollcall.yaml)');
  try {
    return kubeFor(ctx.services.kube, cluster);
  } catch (error) {
    throw new RollcallError('unknown_target', (error as Error).message);
  }
}

export const keyLine = (k: { name: string; fingerprint: string; notBefore: string }) => ({
  text: `${k.name}`,
  detail: `sha256 ${k.fingerprint.slice(0, 23)}… · NotBefore ${k.notBefore.slice(0, 10)}`,
});
