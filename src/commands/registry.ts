import type { ChangeLog } from '../domain/incidents/change-log.js';
import type { IncidentService } from '../domain/incidents/service.js';
import type { AlertStore } from '../domain/alerts/store.js';
import type { FleetRecords } from '../domain/alerts/records.js';
import type { AuditStream } from '../domain/audit/audit-log.js';
import type { GuardStore } from '../domain/guards/index.js';
import type { Surface } from '../core/access.js';
import type { AnswerOf, CommandName, DispatchReply } from './replies.js';
import type { RunService, RunbookServices } from '../domain/runbooks/index.js';

/** A parsed chat command: `/argo <command> [target] [key=value ...] [--flag]`. */
export interface ParsedCommand {
  command: string;
  /** Positional words after the command (usually the target). */
  positional: string[];
  /** key=value options (`selector=`, `cluster=`, `prune=true` ...) and `-l` as `selector`. */
  options: Record<string, string>;
  /** --flags (`public`, `json`, `yes` ...). */
  flags: Set<string>;
  raw: string;
}

/** What commands work with: the runbook services, and the runbook engine when this process has one (it needs Redis). */
export interface Services extends RunbookServices {
  runs?: RunService;
  /** The audit stream (Redis): refusals and mutations are recorded here, `audit` reads it. */
  audit?: AuditStream;
  /** The fleet change log (needs Redis). */
  changes?: ChangeLog;
  /** Incidents: lifecycle, timelines, reports (needs Redis). */
  incidents?: IncidentService;
  /** Alert state shared by every process (needs Redis). */
  alerts?: AlertStore;
  /** Key backups, recent runs and previous digests, read from Redis (for alerts and digests). */
  records?: FleetRecords;
  /** Guards on RollingSync rollouts (needs Redis). */
  guards?: GuardStore;
}

export interface CommandContext {
  services: Services;
  /** Slack user id, or the terminal user (`--as`). */
  user: string;
  channel?: string;
  threadTs?: string;
  /** Some flows (modals) exist only in Slack; a schedule has no one to ask. */
  surface: Surface;
  /** Terminal: the operating-system account that ran rollcall; the audit log records it with `user`. */
  osUser?: string;
  /** Terminal: `user` was chosen with `--as` (only where access.terminal.allowActAs allows it). */
  actAs?: boolean;
  /** The terminal's --yes. */
  assumeYes?: boolean;
  /**
   * The fleet's version() when the request arrived. A shared answer computed from it or a later one holds everything
   * the mirror had when the asker asked, so it answers them; unset: the version when the command runs.
   */
  askedAtVersion?: number;
  /**
   * Slack only (a fresh trigger_id is needed): shows a form to the user as a modal. Resolves false where
   * no form can be shown (terminal, expired trigger). The submission runs the action named `form.action`.
   */
  openForm?(form: FormSpec): Promise<boolean>;
}

/** A form the user fills in (Slack renders a modal). Transport-neutral: fields, not Block Kit. */
export interface FormSpec {
  /** Registered action (registerAction) run on submit with value = JSON `{"metadata": string, "values": {name: string}}`. */
  action: string;
  title: string;
  submitLabel?: string;
  /** Opaque data handed back on submit (Slack: private_metadata, keep it under 2000 chars). */
  metadata?: string;
  /** Shown above the fields (mrkdwn). */
  intro?: string;
  fields: FormField[];
}

export interface FormField {
  name: string;
  label: string;
  type: 'string' | 'int' | 'bool' | 'duration' | 'selector' | 'enum';
  required?: boolean;
  default?: string;
  hint?: string;
  /** For enum. */
  options?: string[];
}

/**
 * A command, typed by the names its answers carry (`status`; `incident` also answers `incident timeline` and
 * `incident report`): `run` returns one of their answers with the data replies.ts names for it, or an error
 * answer, and the compiler refuses anything else.
 */
export interface CommandSpec<C extends CommandName> {
  name: string;
  aliases?: string[];
  summary: string;
  /** e.g. "status [selector] [cluster=X] [project=X] [instance=X]" */
  usage: string;
  /** Longer help: examples and what the output means. */
  help?: string;
  /** Read-only commands stay open to every user in allowed channels. */
  readOnly: boolean;
  /**
   * Reads or starts runbook runs, so it needs the engine and Redis (`ask` starts them only then).
   * `optional`: answers without Redis too, and says more with it (`ask` connects when Redis answers).
   */
  usesRuns?: boolean | 'optional';
  /** Reads or writes Redis (change log, incidents) without starting runs. */
  usesRedis?: boolean;
  /**
   * The answer depends only on the command, the fleet mirror, the config and the clock: never on who asks (beyond
   * their permissions) or where. Askers of the same question at the same mirror version share one computation
   * (shared-answers.ts).
   */
  sharedAnswer?: boolean;
  run(cmd: ParsedCommand, ctx: CommandContext): Promise<AnswerOf<C>>;
}

/** A button/interaction handler (confirm, approve, pause...). `value` comes from the button. */
/** Any command, as the registry and the dispatcher hold them. */
export type AnyCommandSpec = CommandSpec<CommandName>;

export interface ActionSpec {
  name: string;
  /** Answers as the command it acts for would (a run's progress as `runs`, a note as `incident`). */
  run(value: string, ctx: CommandContext): Promise<DispatchReply | undefined>;
  /**
   * For form submissions: synchronous checks of `{"metadata", "values"}`, as messages by field
   * name. Slack shows them next to the fields, keeping what the user typed (they must come in the ack).
   */
  validate?(value: string, ctx: CommandContext): Record<string, string> | undefined;
}

const commands = new Map<string, AnyCommandSpec>();
const aliases = new Map<string, string>();
const actions = new Map<string, ActionSpec>();

export function registerCommand(spec: AnyCommandSpec): void {
  commands.set(spec.name, spec);
  for (const a of spec.aliases ?? []) aliases.set(a, spec.name);
}

export function findCommand(name: string): AnyCommandSpec | undefined {
  return commands.get(name) ?? commands.get(aliases.get(name) ?? '');
}

export function allCommands(): AnyCommandSpec[] {
  return [...commands.values()];
}

export function registerAction(spec: ActionSpec): void {
  actions.set(spec.name, spec);
}

export function findAction(name: string): ActionSpec | undefined {
  return actions.get(name);
}
