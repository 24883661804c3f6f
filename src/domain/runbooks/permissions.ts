import { mention } from '../../core/format.js';
import { canOperate, describePrincipals, isAdmin, principalMatches } from '../../core/access.js';
import type { RollcallConfig } from '../../infra/config/schema.js';
import type { Run } from './run-store.js';
import type { Runbook } from './schema.js';
import { RollcallError } from '../../core/errors.js';

export class RunForbiddenError extends RollcallError {
  declare readonly code: 'forbidden';
  constructor(message: string) {
    super('forbidden', message);
  }
}

/**
 * Who may start a runbook: admins always; else the runbook's `access.runners` when it sets them,
 * else the config's operators.
 */
export function mayRun(user: string, runbook: Runbook, config: Pick<RollcallConfig, 'access'>): boolean {
  if (isAdmin(user, config)) return true;
  if (runbook.access.runners) return principalMatches(user, runbook.access.runners, config.access.groups);
  return canOperate(user, config);
}

function allowedRunners(runbook: Runbook, config: Pick<RollcallConfig, 'access'>): string[] {
  return [...(runbook.access.runners ?? config.access.operators), ...config.access.admins];
}

export function assertMayRun(user: string, runbook: Runbook, config: Pick<RollcallConfig, 'access'>): void {
  if (mayRun(user, runbook, config)) return;
  const who = allowedRunners(runbook, config);
  throw new RunForbiddenError(
    who.length
      ? `${mention(user)} may not run ${runbook.name}. Allowed: ${describePrincipals(who, config.access.groups)}. Ask one of them to run it, or an admin to add you${runbook.access.runners ? ` to access.runners in ${runbook.file}` : ' to access.operators'}.`
      : `no one may run ${runbook.name}: it sets no runners and access.operators/admins are empty in rollcall.yaml.`,
  );
}

/** Operating a run (confirm, cancel, pause, resume, abort): its requester, anyone who may run the runbook, or an admin. */
export function assertMayOperate(
  user: string,
  run: Run,
  runbook: Runbook | undefined,
  config: Pick<RollcallConfig, 'access'>,
  what: string,
): void {
  if (user === run.requester || isAdmin(user, config) || (runbook && mayRun(user, runbook, config))) return;
  throw new RunForbiddenError(
    `${mention(user)} may not ${what} run ${run.id}: only ${mention(run.requester)} (who started it), its runners or an admin may.`,
  );
}

/**
 * Who may approve: the runbook's approvers when it names them, else anyone who may run it (a
 * "second person" is another on-call engineer), and admins always. Self-approval is checked apart.
 */
export function approversOf(runbook: Runbook, config: Pick<RollcallConfig, 'access'>): string[] {
  const named = runbook.access.approval?.approvers ?? [];
  return [...(named.length ? named : allowedRunners(runbook, config)), ...config.access.admins];
}

/** Throws with who may approve when the user may not approve this run. */
export function assertMayApprove(
  user: string,
  run: Run,
  runbook: Runbook,
  config: Pick<RollcallConfig, 'access'>,
): void {
  const approval = runbook.access.approval;
  if (user === run.requester && !approval?.allowSelfApproval) {
    throw new RunForbiddenError(
      `${mention(user)} started run ${run.id} and may not approve it: ${runbook.name} needs approval from someone else (${describePrincipals(approversOf(runbook, config), config.access.groups, user) || 'an admin'}).`,
    );
  }
  if (run.approvals.some((a) => a.user === user))
    throw new RunForbiddenError(`${mention(user)} has already approved run ${run.id}; it needs another approver.`);
  if (isAdmin(user, config)) return;
  const named = approval?.approvers ?? [];
  if (named.length ? principalMatches(user, named, config.access.groups) : mayRun(user, runbook, config)) return;
  const who = approversOf(runbook, config);
  throw new RunForbiddenError(
    `${mention(user)} may not approve ${runbook.name}. Approvers: ${who.length ? describePrincipals(who, config.access.groups, run.requester) || 'none but the requester' : 'none configured (add access.approval.approvers to the runbook, or operators/admins to rollcall.yaml)'}.`,
  );
}
