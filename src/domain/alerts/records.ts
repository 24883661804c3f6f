import type { RedisClient } from '../../infra/redis.js';
import type { RollcallConfig } from '../../infra/config/schema.js';
import { keyBase } from '../../infra/redis.js';
import { RunStore } from '../runbooks/run-store.js';

export interface DigestRun {
  id: string;
  runbook: string;
  status: string;
  requester: string;
  createdAt: string;
  endedAt?: string;
}

/** The runbook whose successful runs count as a cluster's key backup. */
export const KEY_BACKUP_RUNBOOK = 'backup-sealed-secrets-keys';
/** How many run records are read: the newest key backups, and the newest runs for digest activity. */
const RUNS_READ = 500;

/**
 * What Redis remembers that the fleet mirror cannot say: the newest key backup per cluster (from the
 * run records), recent runbook runs, and each digest's previous totals.
 */
export class FleetRecords {
  private readonly runs: RunStore;
  private readonly base: string;
  constructor(
    private readonly redis: RedisClient,
    private readonly config: RollcallConfig,
  ) {
    this.runs = new RunStore(redis, config.redis.prefix);
    this.base = keyBase(config.redis.prefix);
  }

  /** Clusters with a backup schedule, with their newest successful backup run's end. */
  async keyBackups(): Promise<{ cluster: string; lastBackupAt?: string }[]> {
    const clusters = [...new Set(this.config.sealedSecrets.schedules.map((s) => s.cluster))];
    if (!clusters.length) return [];
    const newest = new Map<string, string>();
    for (const run of await this.runs.listOf([KEY_BACKUP_RUNBOOK], RUNS_READ)) {
      if (run.status !== 'succeeded') continue;
      const cluster = String(run.params.cluster ?? '');
      const at = run.endedAt ?? run.updatedAt;
      if (!newest.has(cluster) || Date.parse(at) > Date.parse(newest.get(cluster)!)) newest.set(cluster, at);
    }
    return clusters.map((cluster) => ({ cluster, lastBackupAt: newest.get(cluster) }));
  }

  async recentRuns(): Promise<DigestRun[]> {
    return (await this.runs.list(RUNS_READ)).map((r) => ({
      id: r.id,
      runbook: r.runbook,
      status: r.status,
      requester: r.requester,
      createdAt: r.createdAt,
      ...(r.endedAt ? { endedAt: r.endedAt } : {}),
    }));
  }

  private digestKey(name: string) {
    return `${this.base}digest:${name}:last`;
  }

  async previousDigest(name: string): Promise<{ at: string; totals: Record<string, number> } | undefined> {
    const text = await this.redis.get(this.digestKey(name));
    return text ? (JSON.parse(text) as { at: string; totals: Record<string, number> }) : undefined;
  }

  async recordDigest(name: string, at: string, totals: Record<string, number>): Promise<void> {
    await this.redis.set(this.digestKey(name), JSON.stringify({ at, totals }));
  }
}
