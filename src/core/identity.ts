import { userInfo } from 'node:os';

/**
 * Who the person at a terminal is, the one rule `rollcall ask` acts by and `rollcall sim --write-config` writes
 * its operator by: $ROLLCALL_USER (e.g. their Slack id, to match the access lists), else $USER, else the OS
 * account (containers, cron and CI often set no USER), else "terminal". `osUser` is the OS account whatever
 * the variables say, for the audit log's record of who really ran a command.
 */
export function terminalIdentity(env: NodeJS.ProcessEnv = process.env): { self: string; osUser: string } {
  let account: string | undefined;
  try {
    account = userInfo().username || undefined;
  } catch {
    // A uid with no passwd entry (an arbitrary uid in a container) has no account name.
    account = undefined;
  }
  return { self: env.ROLLCALL_USER || env.USER || account || 'terminal', osUser: account ?? env.USER ?? 'unknown' };
}
