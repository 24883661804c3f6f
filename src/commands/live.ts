import type { ArgoApi } from '../infra/argocd/api.js';
import { ArgoError } from '../infra/argocd/errors.js';
import type { FleetApp } from '../fleet/model.js';
import { CommandError } from './parse.js';
import type { CommandContext } from './registry.js';

/**
 * Live calls to Argo CD for what the mirror does not hold (manifests, logs, live resources), each within a budget
 * so that no answer is held up by a slow instance.
 */

/** A live Get must not hold an answer up: after this the mirror's copy is shown. */
export const LIVE_LOOKUP_MS = 4000;
/** How Argo CD's API names the app (project too, so a missing app is a 404 rather than a 403). */
export function appRef(fa: FleetApp): { name: string; appNamespace?: string; project?: string } {
  return { name: fa.app.metadata.name, appNamespace: fa.app.metadata.namespace, project: fa.app.spec?.project };
}

/**
 * The Argo CD API of the app's instance, for commands that only a live call can answer (history
 * metadata, diff, logs): rollcall's mirror holds no manifests or logs.
 */
export function argoApiFor(ctx: CommandContext, fa: FleetApp, command: string): ArgoApi {
  const api = ctx.services.argocd?.get(fa.instance);
  if (!api)
    throw new CommandError(
      'not_configured',
      `\`${command}\` reads Argo CD instance ${fa.instance} live, and this process has no client for it: check instances[] in rollcall.yaml.`,
    );
  return api;
}

/** A live call that must not hold an answer up: it fails as an Argo CD timeout after LIVE_LOOKUP_MS. */
export async function withinLiveBudget<T>(instance: string, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new ArgoError(
            `Argo CD instance ${instance} gave no answer within ${LIVE_LOOKUP_MS / 1000}s; try again, or check its health.`,
            { kind: 'timeout', instance },
          ),
        ),
      LIVE_LOOKUP_MS,
    );
  });
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
