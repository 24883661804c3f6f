/**
 * key-backup-stale: a cluster with a scheduled sealed-secrets key backup whose newest successful backup is
 * older than the rule's threshold (or missing). The sealed-secrets controller renews its key every 30 days
 * and keeps the old ones; without a backup of every key, secrets sealed for a rebuilt cluster cannot be
 * opened. This is a Kubernetes fact, not an Argo CD one: it judges the backups the caller read (Redis).
 */
import { absoluteTime, formatDuration } from '../../core/format.js';
import { groupKey, type AlertCondition, type RuleSettings } from './facts.js';
import type { RuleViews } from './rule.js';

export interface KeyBackup {
  cluster: string;
  /** Newest successful backup; undefined when none is recorded. */
  lastBackupAt?: string;
}

export function keyBackupStaleAlerts(
  backups: readonly KeyBackup[],
  now: Date,
  settings: RuleSettings,
): AlertCondition[] {
  const out: AlertCondition[] = [];
  const afterMs = settings.afterMs;
  for (const b of backups) {
    const age = b.lastBackupAt ? now.getTime() - Date.parse(b.lastBackupAt) : Infinity;
    if (age <= afterMs) continue;
    out.push({
      key: groupKey({ rule: 'key-backup-stale', instance: b.cluster }),
      rule: 'key-backup-stale',
      severity: 'warning',
      instance: b.cluster,
      apps: [],
      since: b.lastBackupAt ?? now.toISOString(),
      summary: b.lastBackupAt
        ? `No sealed-secrets key backup of cluster ${b.cluster} since ${absoluteTime(b.lastBackupAt)} (expected within ${formatDuration(afterMs)}).`
        : `No successful sealed-secrets key backup of cluster ${b.cluster} is recorded, though it has a backup schedule.`,
      details: [`Back it up now: \`run backup-sealed-secrets-keys cluster=${b.cluster}\``],
    });
  }
  return out;
}

export const keyBackupStaleRule: RuleViews = {
  alert: (inputs, settings) => (inputs.keyBackups ? keyBackupStaleAlerts(inputs.keyBackups, inputs.now, settings) : []),
};
