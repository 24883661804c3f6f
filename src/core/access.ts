import { mention } from './format.js';

/**
 * Who may do what, from `access` in rollcall.yaml. Principals are user ids, `group:<name>`
 * (members in access.groups) or `*`. Admins may do everything; operators run mutating commands;
 * readers (when configured) are the only ones who may ask read-only questions.
 */

export function principalMatches(user: string, principals: readonly string[], groups: AccessGroups): boolean {
  for (const p of principals) {
    if (p === '*' || p === user) return true;
    if (p.startsWith('group:') && groups[p.slice(6)]?.includes(user)) return true;
  }
  return false;
}

/** Where a request comes from: a person in Slack or a terminal, or a schedule in rollcall.yaml. */
export type Surface = 'slack' | 'terminal' | 'schedule';

/**
 * The principal a schedule acts as when it names no user (`as`). Whoever wrote rollcall.yaml decided the
 * schedule may run, so on the schedule surface it passes the access lists (runbook approvals still apply).
 */
export const SCHEDULER = 'rollcall-scheduler';

/** A request from a schedule acting as itself: trusted as the config that defines it. */
export function isScheduler(who: { user: string; surface: Surface }): boolean {
  return who.surface === 'schedule' && who.user === SCHEDULER;
}

/** Named groups of user ids, referenced as `group:<name>`. */
export type AccessGroups = Record<string, readonly string[]>;

/** The part of the config these rules read (config `access`): who is in which list. */
export interface AccessLists {
  access: { groups: AccessGroups; operators: readonly string[]; admins: readonly string[]; readers: readonly string[] };
}

function accessOf(config: AccessLists | undefined): AccessLists['access'] {
  return config?.access ?? { groups: {}, operators: [], admins: [], readers: [] };
}

export function isAdmin(user: string, config: AccessLists | undefined): boolean {
  const a = accessOf(config);
  return principalMatches(user, a.admins, a.groups);
}

/** May run mutating commands (when a runbook says nothing more specific). */
export function canOperate(user: string, config: AccessLists | undefined): boolean {
  const a = accessOf(config);
  return principalMatches(user, a.admins, a.groups) || principalMatches(user, a.operators, a.groups);
}

/** May use read-only commands: everyone unless access.readers is set; operators and admins always. */
export function canRead(user: string, config: AccessLists | undefined): boolean {
  const a = accessOf(config);
  if (!a.readers.length) return true;
  return principalMatches(user, a.readers, a.groups) || canOperate(user, config);
}

/** "U123, group:oncall (U1, U2), or any admin (U9)" — for a forbidden message that says whom to ask. */
export function describePrincipals(principals: readonly string[], groups: AccessGroups, except?: string): string {
  return [...new Set(principals)]
    .filter((p) => p !== except)
    .map((p) => {
      if (p === '*') return 'everyone';
      if (p.startsWith('group:')) {
        const members = [...new Set(groups[p.slice(6)] ?? [])].filter((m) => m !== except);
        return members.length
          ? `${p} (${members.slice(0, 5).map(mention).join(', ')}${members.length > 5 ? ', …' : ''})`
          : `${p} (no members)`;
      }
      return mention(p);
    })
    .join(', ');
}

/** Why a user may not operate: names who may, or says no one is configured. */
export function operateDeniedMessage(user: string, command: string, config: AccessLists | undefined): string {
  const a = accessOf(config);
  const who = [...a.operators, ...a.admins];
  if (!who.length) {
    return `\`${command}\` changes the fleet and no one may run it: access.operators and access.admins are empty in rollcall.yaml. Add user ids or group:<name> there.`;
  }
  return `\`${command}\` changes the fleet; ${mention(user)} is not an operator. Allowed: ${describePrincipals(who, a.groups)}. Ask one of them, or an admin to add you to access.operators.`;
}

export function readDeniedMessage(user: string, config: AccessLists | undefined): string {
  const a = accessOf(config);
  return `${mention(user)} may not query rollcall: access.readers is set to ${describePrincipals(a.readers, a.groups)}. Ask an admin to add you to access.readers.`;
}
