import type { Job } from 'bullmq';
import { handBack } from '../../infra/queues.js';
import type { RollcallConfig } from '../../infra/config/schema.js';
import { runsRefusedTotal } from '../../infra/metrics.js';
import type { AuditEvent } from '../audit/audit-log.js';

/**
 * The Argo CD URL of every instance of a config, by instance name. A run carries the map of the deployment
 * that requested it, so a worker can tell a run meant for another deployment (another rollcall, a demo)
 * that shares its Redis and prefix: the same instance name pointing at another Argo CD.
 */
export function instanceUrls(config: Pick<RollcallConfig, 'instances'>): Record<string, string> {
  return Object.fromEntries(config.instances.map((i) => [i.name, normalizeUrl(i.url)]));
}

function normalizeUrl(url: string): string {
  return url.replace(/\/+$/, '');
}

/**
 * Why this worker must not execute the run, or undefined when its config points at the same Argo CD
 * instances the run was requested against. A run recorded without the map (before it existed) passes.
 */
export function foreignRunReason(
  run: { instanceUrls?: Record<string, string> },
  config: Pick<RollcallConfig, 'instances'>,
): string | undefined {
  if (!run.instanceUrls) return undefined;
  const mine = instanceUrls(config);
  const differences = Object.entries(run.instanceUrls)
    .filter(([name, url]) => mine[name] !== normalizeUrl(url))
    .map(([name, url]) =>
      mine[name] ? `${name} is ${url} for the run but ${mine[name]} here` : `${name} (${url}) is not configured here`,
    );
  return differences.length ? `run requested by another deployment: ${differences.join('; ')}` : undefined;
}

/** Runs this process has already reported as foreign, so a job that keeps coming back is audited once. */
const reported = new Set<string>();

/**
 * Where a worker picks up a step: a run of another deployment is refused, audited and logged (once per
 * run), and put back for the workers it belongs to. Nothing of it is executed here. Returns false for a
 * run this worker may execute; otherwise hands the job back to the queue (handBack) and throws BullMQ's error
 * for a job its processor moved.
 */
export async function refuseForeignRun(
  job: Job,
  token: string | undefined,
  run: { id: string; runbook: string; instanceUrls?: Record<string, string> },
  deps: {
    config: Pick<RollcallConfig, 'instances'>;
    audit(event: Omit<AuditEvent, 'at'>): Promise<void>;
    logger?: { warn(o: unknown, m?: string): void };
  },
): Promise<false> {
  const reason = foreignRunReason(run, deps.config);
  if (!reason) return false;
  if (!reported.has(run.id)) {
    reported.add(run.id);
    runsRefusedTotal.inc({ reason: 'other_deployment' });
    deps.logger?.warn(
      { runId: run.id, runbook: run.runbook, reason },
      'refusing a run of another deployment; leaving it for its own workers',
    );
    await deps.audit({
      kind: 'run.refused',
      who: 'rollcall',
      surface: 'engine',
      runId: run.id,
      result: 'other_deployment',
      message: reason,
    });
  }
  return handBack(job, token, 500);
}
