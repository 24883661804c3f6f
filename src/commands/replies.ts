/**
 * The data of every command's answer, by command name: what `rollcall ask --json` prints under `data`
 * and what surfaces read. `CommandReply` is the union a reader narrows on `command`.
 */
import type { ExpectedStall } from '../domain/alerts/rules.js';
import type { Digest } from '../domain/alerts/digest.js';
import type { ErrorReply, Reply } from '../core/reply.js';
import type { Finding } from '../fleet/diagnose.js';
import type { ClusterStatus, StatusProblem, StatusTotals } from '../fleet/status.js';
import type { ProblemGroup } from '../fleet/groups.js';
import type { ResourceChange } from '../fleet/manifest-diff.js';
import type { RolloutPlan, RolloutReport } from '../fleet/rollout.js';
import type { ChangeGroup, ChangeJson } from '../domain/incidents/groups.js';
import type { BlastRadius, IncidentMetrics } from '../domain/incidents/metrics.js';
import type {
  AuditData,
  NoopRunData,
  RolloutActionPlan,
  RunData,
  RunListData,
  RunStatus,
} from '../domain/runbooks/index.js';
import type { CheckVerdict, PrometheusTarget } from '../domain/checks/index.js';
import type { Guard } from '../domain/guards/index.js';
import type {
  AlertJson,
  AppDetail,
  CheckListing,
  ClusterRow,
  HistoryEntry,
  Refreshed,
  RefreshType,
  RolloutRow,
  UnreadRollout,
} from './reply-data.js';
import type { ResourceRef } from '../infra/argocd/types.js';

/** An interface's fields as a plain object type, which JSON data (`Record<string, unknown>`) accepts. */
type Fields<T> = { [K in keyof T]: T[K] };

export type StatusData = {
  total: StatusTotals;
  clusters: ClusterStatus[];
  problems: StatusProblem[];
  groups: (Pick<ProblemGroup, 'name' | 'by' | 'instance' | 'kind' | 'reason' | 'clusters' | 'clustersOfGroup'> & {
    apps: string[];
  })[];
  /** rollcall's active freezes that hold apps of the selection (empty without Redis). */
  frozen: {
    target: string;
    by: string;
    since: string;
    until: string | null;
    incident: string | null;
    apps: string[];
  }[];
};
export type AppData = {
  app: AppDetail & { live: boolean; warningEvents: unknown[]; rollouts: RolloutRow[]; unreadRollouts: UnreadRollout[] };
};
/** Rollouts alike but for their cluster (src/commands/argo-rollouts.ts). */
export interface RolloutGroup {
  instance: string;
  namespace: string;
  name: string;
  /** "canary · Paused at step 1/4 · 20% of traffic · CanaryPauseStep" */
  state: string;
  phase: string;
  revision: string | null;
  images: string[];
  clusters: string[];
  apps: string[];
  /** Clusters in the selection with a Rollout of this name: the denominator of "9/12 clusters". */
  clustersOfRollout: number;
  /** The earliest `since` of its Rollouts. */
  since: string | null;
}
export type RolloutsData = { rollouts: RolloutRow[]; groups: Fields<RolloutGroup>[]; unread: UnreadRollout[] };
/** What Argo CD offers to run on one resource now (src/commands/actions.ts). */
export type ActionsData = {
  app: string;
  instance: string;
  cluster: string;
  resource: Fields<ResourceRef>;
  actions: { name: string; disabled: boolean; displayName: string | null; params: string[] }[];
};
export type HistoryData = { app: string; instance: string; live: boolean; history: HistoryEntry[] };
export type DiffData = { app: string; instance: string; revision: string | null; resources: ResourceChange[] };
export type LogsData = {
  app: string;
  instance: string;
  tail: number;
  previous: boolean;
  pods: string[];
  lines: { pod: string | undefined; at: string | null; content: string }[];
};
/** A rollout, or an ApplicationSet with no RollingSync to report (`rollingSync: false`, no steps). */
export type RolloutData =
  (Fields<RolloutReport> & { paused: { by: string; at: string | null; runId: string | null } | null }) | NoRolloutData;
export type NoRolloutData = {
  appSet: string;
  instance: string;
  strategy: string | null;
  rollingSync: false;
  currentStep: null;
  complete: false;
  steps: [];
  unmatched: [];
  waitingOn: null;
  findings: Finding[];
};
export type PlanData =
  | Fields<RolloutPlan>
  | Pick<NoRolloutData, 'appSet' | 'instance' | 'strategy' | 'rollingSync' | 'steps' | 'unmatched' | 'findings'>;
/** One ApplicationSet's findings, or the whole fleet's (src/commands/diagnose.ts). */
export type DiagnoseData =
  { appSet: string; instance: string; findings: Finding[] } | { appSets: number; findings: Finding[] };
export type ClustersData = { clusters: ClusterRow[] };
export type HelpData =
  | { command: string; usage: string; summary: string; aliases: string[]; readOnly: boolean; help: string | null }
  | { commands: { name: string; usage: string; summary: string; readOnly: boolean }[] };
export type PausedData = {
  paused: { target: string; instance: string; by: string; since: string; runId: string; changes: number }[];
};
export type FrozenData = {
  frozen: {
    target: string;
    instance: string;
    project: string;
    by: string;
    since: string;
    until: string | null;
    incident: string | null;
    runId: string;
    /** The window holds now (a for= freeze stops holding when its window ends). */
    active: boolean;
    manualBlocked: boolean;
  }[];
  /** Freeze and unfreeze runs confirmed and not ended: what they write is listed above only once they have. */
  inProgress: { runId: string; runbook: string; status: RunStatus; requester: string; params: string }[];
};
export type RefreshData =
  | { refresh: RefreshType; apps: Refreshed[] }
  | { preview: true; refresh: RefreshType; count: number; apps: { app: string; instance: string; cluster: string }[] };

/** Slack opened the runbook's parameter form instead of answering. */
export type RunFormData = { form: string };
/** What a command that starts a runbook answers: the run's preview (or its end, with `--wait`), or nothing to do. */
export type RunbookData = RunData | NoopRunData;
/**
 * src/commands/rollout-actions.ts (`promote`, `abort`, `retry`, `restart`): the run, whose preview holds the plan
 * (each Rollout offered the action, in waves, with its step, weight and phase; those skipped and why), its step's
 * output once it ended `rollouts[]` (where each Rollout got); or nothing to do (the action offered on none).
 */
export type RolloutActionData =
  | (RunData & { preview: { plan: RolloutActionPlan } | undefined })
  | (NoopRunData & { preview: { plan: RolloutActionPlan } });
/** src/commands/alerts.ts: `alerts` lists, `alert` shows one. */
export type AlertsData = { alerts: AlertJson[]; expected: ExpectedStall[] };
export type AlertData = { alert: AlertJson };
/** src/commands/digest.ts. */
export type DigestData = Fields<
  Pick<Digest, 'name' | 'at' | 'selector' | 'allClear' | 'attention' | 'activity' | 'totals' | 'incidents'>
>;
export type ChangesData = { since: string; changes: ChangeJson[]; groups: ChangeGroup[] };
/** src/commands/checks.ts: `check` judges apps now, `checks` lists what is configured. */
export type CheckData = {
  checks: string[];
  verdicts: Fields<CheckVerdict>[];
  counts: Record<CheckVerdict['status'], number>;
};
export type ChecksData = { checks: CheckListing[]; prometheus: Fields<PrometheusTarget>[] };

/** An incident as the incident commands answer it; `incident` with no verb adds the analysis. */
export type IncidentData = {
  id: string;
  incident: Record<string, unknown>;
  metrics?: IncidentMetrics;
  blastRadius?: BlastRadius;
  suggestion?: string | null;
  timeline?: Record<string, unknown>[];
  /** Where the incident's header message was posted. */
  header?: { channel: string; ts: string };
  [field: string]: unknown;
};
export type IncidentTimelineData = { id: string; timeline: Record<string, unknown>[] } | Record<string, never>;
/** The report's JSON (`incidents/report.ts`); its files are written by `ask --out`. */
export type IncidentReportData = Record<string, unknown>;
export type IncidentsData = { open: Record<string, unknown>[]; recent: Record<string, unknown>[] };

/** The incident verbs that answer with the incident itself, each under its own name (`incident note` ...). */
export type IncidentVerb =
  `incident ${'start' | 'show' | 'note' | 'status' | 'sev' | 'lead' | 'set' | 'close' | 'reopen'}`;
type IncidentVerbData = { [V in IncidentVerb]: IncidentData };
/** Every name the `incident` command answers under. */
export type IncidentCommand = 'incident' | IncidentVerb | 'incident timeline' | 'incident report';

/** Every command's answer data, by the command name its reply carries. */
export interface CommandData extends IncidentVerbData {
  status: StatusData;
  app: AppData;
  history: HistoryData;
  diff: DiffData;
  logs: LogsData;
  rollout: RolloutData;
  rollouts: RolloutsData;
  actions: ActionsData;
  plan: PlanData;
  diagnose: DiagnoseData;
  clusters: ClustersData;
  help: HelpData;
  pause: RunbookData;
  resume: RunbookData;
  paused: PausedData;
  freeze: RunbookData;
  unfreeze: RunbookData;
  frozen: FrozenData;
  run: RunbookData | RunFormData;
  sync: RunbookData;
  refresh: RefreshData;
  rollback: RunbookData;
  'terminate-op': RunbookData;
  action: RunbookData;
  promote: RolloutActionData;
  abort: RolloutActionData;
  retry: RolloutActionData;
  restart: RolloutActionData;
  /** `runs show|wait|confirm ...` answer one run; `runs` lists them. */
  runs: RunData | RunListData;
  audit: AuditData;
  alerts: AlertsData;
  alert: AlertData;
  digest: DigestData;
  changes: ChangesData;
  check: CheckData;
  checks: ChecksData;
  /** The incident's header message (kept current in its channel). */
  incident: IncidentData;
  'incident timeline': IncidentTimelineData;
  'incident report': IncidentReportData;
  incidents: IncidentsData;
  guard: GuardData;
  guards: GuardsData;
  unguard: UnguardData;
}

export type CommandName = keyof CommandData;

export type GuardData = { guard: Guard; verdicts: CheckVerdict[] };
export type GuardsData = { guards: Guard[] };
export type UnguardData = { guard: Guard };

/**
 * A command's answer, with the data named for it here. It may still carry an error with its data (a refresh
 * where some apps failed, a run no worker picks up). For a union of names, the union of their answers.
 */
export type ReplyOf<C extends CommandName> = C extends CommandName ? Reply<C, CommandData[C]> : never;

/** Any command's answer with its data: narrow it on `command`. */
export type CommandReply = ReplyOf<CommandName>;

/** What a command answering these names returns: one of their answers, or an error answer (`errorReply`). */
export type AnswerOf<C extends CommandName> = ReplyOf<C> | ErrorReply;

/**
 * What `dispatch` answers: a command's answer, typed by its command, or an error answer (an unknown
 * command, a refusal, a thrown error), whose data is the error's. `ok` tells them apart: an ok answer is
 * always its command's; a reader of a failed one's data checks the field that tells its shapes apart, as
 * `runOf` does.
 */
export type DispatchReply = AnswerOf<CommandName>;

/**
 * Whether the reply is an ok answer of `command`: then its data is that command's (an error answer is never
 * ok, and every command's ok answer carries its own data, as CommandSpec makes the compiler check).
 */
export function isAnswer<C extends CommandName>(reply: DispatchReply, command: C): reply is ReplyOf<C> {
  return reply.ok && reply.command === command;
}

/** The commands whose answers may carry a run (a runbook command's preview or end, `runs show|wait ID`). */
const RUN_ANSWERS: ReadonlySet<string> = new Set<CommandName>([
  'run',
  'runs',
  'sync',
  'pause',
  'resume',
  'freeze',
  'unfreeze',
  'rollback',
  'terminate-op',
  'action',
  'promote',
  'abort',
  'retry',
  'restart',
]);

/** Run data, rather than an error's data or another shape a run command answers with (nothing to do, a form). */
function carriesRun(data: object): data is RunData {
  return 'run' in data && typeof data.run === 'object' && data.run !== null;
}

/** The run an answer carries, read from any reply (a notifier's, a dispatched one); none otherwise. */
export function runOf(answer: Reply): RunData['run'] | undefined {
  return RUN_ANSWERS.has(answer.command) && carriesRun(answer.data) ? answer.data.run : undefined;
}
