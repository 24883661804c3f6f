/**
 * autosync-ignored: the template sets syncPolicy.automated, which has no effect under RollingSync.
 * SyncDesiredApplications turns automated sync off on every generated app (disableAutomatedSync:
 * automated.enabled=false, progressive_sync.go at v3.5.1) and starts syncs itself; only automated.prune
 * carries into those syncs, and only when the template's policy counts as enabled (IsAutomatedSyncEnabled).
 */
import { progressiveSyncsLookDisabled, type AddFinding, type AppSetContext } from './appset-context.js';
import type { RuleViews } from './rule.js';

function check(ctx: AppSetContext, add: AddFinding) {
  // With progressive syncs off (see progressive-syncs-disabled) the template's auto-sync is fully in effect.
  if (progressiveSyncsLookDisabled(ctx)) return;
  const automated = ctx.appSet.spec?.template?.spec?.syncPolicy?.automated;
  if (!automated) return;
  const enabled = automated.enabled !== false;
  if (!enabled && !automated.selfHeal && !automated.prune) return;
  const set: string[] = [];
  if (automated.enabled !== undefined) set.push(`enabled: ${automated.enabled}`);
  if (automated.prune !== undefined) set.push(`prune: ${automated.prune}`);
  if (automated.selfHeal !== undefined) set.push(`selfHeal: ${automated.selfHeal}`);
  const pruneNote = enabled
    ? automated.prune
      ? 'prune: true is carried into the syncs RollingSync starts'
      : 'the syncs RollingSync starts do not prune'
    : 'because automated.enabled is false, even prune is not carried into RollingSync syncs';
  add({
    rule: 'autosync-ignored',
    severity: 'info',
    message:
      `The template sets syncPolicy.automated${set.length ? ` (${set.join(', ')})` : ''}, but under RollingSync the generated apps do not auto-sync` +
      `${automated.selfHeal ? ' and selfHeal has no effect' : ''}; ${pruneNote}.`,
    why:
      'RollingSync always turns autosync off on the Applications it generates (v3.3+: automated.enabled=false; v2.6–v3.2: the automated block is removed) and starts syncs itself. ' +
      "Only automated.prune carries over, and only when the template's automated policy is enabled. Toggling autosync on a generated app is reverted by the appset controller.",
    fix:
      'Nothing to repair: drop selfHeal from the template to avoid the false impression of self-healing; keep `automated.prune: true` only if RollingSync syncs should prune. ' +
      'Do not switch the strategy to AllAtOnce to "get autosync back" mid-incident: it releases every app at once.',
  });
}

export const autosyncIgnoredRule: RuleViews = { appSet: { check } };
