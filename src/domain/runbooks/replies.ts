import { formatDuration, mention, when } from '../../core/format.js';
import { withUserText, type Reply, type ReplyBlock, type ReplyButton, type Tone } from '../../core/reply.js';
import type { AuditEntry } from '../audit/audit-log.js';
import { runPausable } from './actions/index.js';
import { isTerminal, previewExpired, type Run, type RunStatus } from './run-store.js';
import type { ActionPreview } from './actions/types.js';

export const STATUS_TONE: Record<RunStatus, Tone> = {
  previewing: 'progress',
  'awaiting-confirmation': 'info',
  'awaiting-approval': 'info',
  running: 'progress',
  paused: 'warn',
  succeeded: 'ok',
  failed: 'error',
  aborted: 'error',
  cancelled: 'unknown',
};

/**
 * A preview that found nothing to do: every target is already where the run would put it. There is no
 * run to confirm, so none is kept; the answer is what the preview found. Not a failure (nothing is wrong),
 * so not a RollcallError: `ask --yes` on it exits 0.
 */
export class NothingToDo extends Error {
  constructor(
    readonly runbook: string,
    readonly title: string,
    /** The previews' own words, e.g. "Nothing to sync: all 12 matching apps are already Synced and Healthy ...". */
    readonly summary: string,
    readonly preview: Pick<ActionPreview, 'data' | 'blocks'>,
  ) {
    super(summary);
    this.name = 'NothingToDo';
  }
}

/** A run as its replies carry it (runData): the id and status twice, for scripts. */
export type RunData = {
  runId: string;
  status: RunStatus;
  run: Pick<
    Run,
    | 'id'
    | 'runbook'
    | 'status'
    | 'params'
    | 'requester'
    | 'approvals'
    | 'approvalsRequired'
    | 'steps'
    | 'progress'
    | 'pausedReason'
    | 'error'
    | 'createdAt'
    | 'startedAt'
    | 'endedAt'
  >;
  preview: Record<string, unknown> | undefined;
};
/** A runbook whose preview found nothing to do: no run was made. */
export type NoopRunData = { runbook: string; nothingToDo: true; summary: string; preview: Record<string, unknown> };
export type RunListData = {
  runs: {
    id: string;
    runbook: string;
    status: RunStatus;
    requester: string;
    createdAt: string;
    progress: string | undefined;
  }[];
};
export type AuditData = { entries: AuditEntry[] };
/** The data every run reply carries for `ask --json` and tests. */
export function runData(run: Run): RunData {
  return {
    runId: run.id,
    status: run.status,
    run: {
      id: run.id,
      runbook: run.runbook,
      status: run.status,
      params: run.params,
      requester: run.requester,
      approvals: run.approvals,
      approvalsRequired: run.approvalsRequired,
      steps: run.steps,
      progress: run.progress,
      pausedReason: run.pausedReason,
      error: run.error,
      createdAt: run.createdAt,
      startedAt: run.startedAt,
      endedAt: run.endedAt,
    },
    preview: run.preview?.data,
  };
}

function button(label: string, action: string, run: Run, style?: ReplyButton['style']): ReplyButton {
  return { label, action, value: run.id, ...(style ? { style } : {}) };
}

/**
 * Buttons that fit the run's state and its runbook: Confirm/Cancel, Approve/Cancel, Pause (where a pause
 * holds something: runPausable) and Abort while running, Resume/Abort when paused, none once it ended.
 */
export function runButtons(run: Run): ReplyButton[] {
  switch (run.status) {
    case 'awaiting-confirmation':
      return [button('Confirm', 'run.confirm', run, 'primary'), button('Cancel', 'run.cancel', run)];
    case 'awaiting-approval':
      return [button('Approve', 'run.approve', run, 'primary'), button('Cancel', 'run.cancel', run)];
    case 'running':
      return [
        ...(runPausable(run) ? [button('Pause', 'run.pause', run)] : []),
        button('Abort', 'run.abort', run, 'danger'),
      ];
    case 'paused':
      return [button('Resume', 'run.resume', run, 'primary'), button('Abort', 'run.abort', run, 'danger')];
    default:
      return [];
  }
}

function paramsText(run: Run): string {
  if (run.paramsText !== undefined) return run.paramsText || '(none)';
  const entries = Object.entries(run.params);
  return entries.length ? entries.map(([k, v]) => `${k}=${String(v)}`).join(' ') : '(none)';
}

/** A run's parameters are what its requester typed: its replies may echo them (see Reply.userText). */
function typedParams(params: Record<string, unknown>): string[] {
  return Object.values(params).map((v) => (typeof v === 'string' ? v : (JSON.stringify(v) ?? '')));
}

/** The preview of a run, answered as `command` (the command that started it, or `runs` showing it). */
export function previewReply<C extends string>(run: Run, command: C): Reply<C, RunData> {
  const blocks: ReplyBlock[] = [
    { kind: 'header', text: `${run.title} — preview (${run.id})` },
    { kind: 'text', text: run.preview?.summary ?? 'nothing to preview', tone: 'info' },
    ...(run.preview?.blocks ?? []),
    {
      kind: 'context',
      text: `Requested by ${mention(run.requester)} · params: ${paramsText(run)}${run.approvalsRequired ? ` · needs ${run.approvalsRequired} approval${run.approvalsRequired > 1 ? 's' : ''} after confirming` : ''}`,
    },
    { kind: 'actions', buttons: runButtons(run) },
  ];
  // Its pages are read from the stored preview: turning one must never run the runbook's command again.
  return withUserText(
    {
      ok: true,
      command,
      title: `${run.title}: preview`,
      data: runData(run),
      blocks,
      pageCommand: `runs show ${run.id}`,
    },
    ...typedParams(run.params),
  );
}

/**
 * The answer to a runbook whose preview found nothing to do: what it found and why, with no run and no
 * Confirm (see NothingToDo). `ok`: the request was understood and answered; nothing is wrong.
 */
export function nothingToDoReply<C extends string>(
  found: { runbook: string; title: string; summary: string; preview: { data: Record<string, unknown> } },
  command: C,
  params: Record<string, string>,
): Reply<C, NoopRunData> {
  const blocks: ReplyBlock[] = [
    { kind: 'header', text: `${found.title}: nothing to do` },
    { kind: 'text', text: found.summary, tone: 'ok' },
    { kind: 'context', text: 'No run was created: there is nothing to confirm.' },
  ];
  return withUserText(
    {
      ok: true,
      command,
      title: `${found.title}: nothing to do`,
      data: { runbook: found.runbook, nothingToDo: true, summary: found.summary, preview: found.preview.data },
      blocks,
    },
    ...Object.values(params),
  );
}

const VERDICT_TONE: Record<'pass' | 'fail' | 'inconclusive', Tone> = {
  pass: 'ok',
  fail: 'error',
  inconclusive: 'warn',
};

function countsText(counts: Record<string, number>): string {
  return Object.entries(counts)
    .filter(([, n]) => n > 0)
    .map(([state, n]) => `${n} ${state}`)
    .join(' · ');
}

/** The one live message: state, counts, failing apps, and the buttons for the state. Also the summary at the end. */
export function progressReply(run: Run): Reply<'runs', RunData> {
  const tone = STATUS_TONE[run.status];
  const blocks: ReplyBlock[] = [{ kind: 'header', text: `${run.title} ${run.id}: ${run.status}` }];
  if (run.status === 'awaiting-approval') {
    blocks.push({
      kind: 'text',
      text: `Waiting for approval: ${run.approvals.length}/${run.approvalsRequired}${run.approvals.length ? ` (approved by ${run.approvals.map((a) => mention(a.user)).join(', ')})` : ''}.`,
      tone,
    });
    // Approvers decide on what the run will do: show them the preview's summary, not only the params.
    if (run.preview?.summary) blocks.push({ kind: 'text', text: run.preview.summary, tone: 'info' });
  }
  if (run.progress) {
    blocks.push({ kind: 'text', text: run.progress.headline, tone });
    const counts = countsText(run.progress.counts);
    if (counts) blocks.push({ kind: 'context', text: counts });
    const watch = run.progress.watch;
    // Each verifier's latest word while a wave is watched: an inconclusive one says what it is waiting for.
    if (watch && run.status === 'running')
      blocks.push({
        kind: 'list',
        title: `${watch.kind === 'watch' ? `After the rollout: watching ${watch.apps ?? 'the'} synced app${watch.apps === 1 ? '' : 's'}` : `Wave ${watch.wave}: ${watch.kind === 'bake' ? 'baking' : 'verifying'}`}, ends ${when(watch.endsAt, new Date(run.progress.updatedAt))}`,
        items: watch.verdicts.map((v) => ({
          text: `${v.name}: ${v.verdict}${v.figure ? ` · ${v.figure}` : ''}`,
          detail: v.reason,
          tone: VERDICT_TONE[v.verdict],
        })),
      });
    if (run.progress.failing.length) {
      blocks.push({
        kind: 'list',
        title: 'Failing',
        items: run.progress.failing.slice(0, 15).map((f) => ({
          text: `${f.app}${f.cluster ? ` (${f.cluster})` : ''}`,
          detail: f.reason,
          tone: 'error' as Tone,
        })),
        total: run.progress.failing.length,
      });
    }
  }
  if (run.status === 'paused')
    blocks.push({
      kind: 'text',
      text: `Paused${run.pausedBy ? ` by ${mention(run.pausedBy)}` : ''}${run.pausedReason ? `: ${run.pausedReason.replace(/\.+$/, '')}` : ''}. Resume to continue where it stopped (the next apps), or abort.`,
      tone: 'warn',
    });
  if (isTerminal(run.status)) {
    // What each step did, in its own words (output.summary), then its error: the summary is read for this.
    const steps = run.steps.map((s) => {
      const said = Array.isArray(s.output?.summary) ? (s.output.summary as unknown[]).map(String) : [];
      const detail = [...said, ...(s.error ? [s.error] : [])].join('\n') || undefined;
      return {
        text: `${s.id}: ${s.status}`,
        detail,
        tone: (s.status === 'succeeded' ? 'ok' : s.status === 'failed' ? 'error' : 'unknown') as Tone,
      };
    });
    blocks.push({ kind: 'list', title: 'Steps', items: steps });
    if (run.error) blocks.push({ kind: 'text', text: run.error, tone: 'error' });
  }
  const buttons = runButtons(run);
  if (buttons.length) blocks.push({ kind: 'actions', buttons });
  blocks.push({
    kind: 'context',
    text: `Requested by ${mention(run.requester)}${approvalsText(run)} · ${paramsText(run)}${endedText(run)}`,
  });
  return withUserText(
    {
      ok: run.status !== 'failed' && run.status !== 'aborted',
      command: 'runs',
      title: `${run.title} ${run.id}: ${run.status}`,
      data: runData(run),
      blocks,
    },
    ...typedParams(run.params),
  );
}

function approvalsText(run: Run): string {
  return run.approvals.length ? ` · approved by ${run.approvals.map((a) => mention(a.user)).join(', ')}` : '';
}

/** " · ended 07:00:12Z after 2m 3s" — how long the run took is the first thing a summary is read for. */
function endedText(run: Run): string {
  if (!run.endedAt) return '';
  const from = Date.parse(run.startedAt ?? run.confirmedAt ?? run.createdAt);
  const took = Number.isNaN(from) ? '' : ` after ${formatDuration(Date.parse(run.endedAt) - from)}`;
  return ` · ended ${when(run.endedAt)}${took}`;
}

export function runListReply(runs: Run[]): Reply<'runs', RunListData> {
  const reply: Reply<'runs', RunListData> = {
    ok: true,
    command: 'runs',
    title: 'Recent runs',
    data: {
      runs: runs.map((r) => ({
        id: r.id,
        runbook: r.runbook,
        status: r.status,
        requester: r.requester,
        createdAt: r.createdAt,
        progress: r.progress?.headline,
      })),
    },
    blocks: [
      { kind: 'header', text: 'Recent runs' },
      runs.length
        ? {
            kind: 'list',
            items: runs.map((r) => ({
              text: `\`${r.id}\` ${r.runbook} — ${previewExpired(r) ? 'preview expired (never confirmed)' : r.status}`,
              detail: `${mention(r.requester)} · ${when(r.createdAt)}${r.progress ? ` · ${r.progress.headline}` : ''}`,
              tone: STATUS_TONE[r.status],
            })),
          }
        : {
            kind: 'text',
            text: 'No runs yet. Start one with `/argo sync <selector>` or `/argo run <runbook> key=value`.',
          },
    ],
  };
  return withUserText(reply, ...runs.flatMap((r) => typedParams(r.params)));
}

/** " (slack)", " (terminal, --as by alice)": where an entry came from; entries older than surfaces say nothing. */
function originText(e: AuditEntry): string {
  if (!e.surface) return '';
  return ` (${e.surface}${e.actAs ? `, --as by ${e.osUser ?? 'unknown'}` : ''})`;
}

export function auditReply(entries: AuditEntry[]): Reply<'audit', AuditData> {
  const reply: Reply<'audit', AuditData> = {
    ok: true,
    command: 'audit',
    title: `Audit log (latest ${entries.length})`,
    data: { entries },
    blocks: [
      { kind: 'header', text: `Audit log (latest ${entries.length})` },
      entries.length
        ? {
            kind: 'list',
            items: entries.map((e) => ({
              text: `${when(e.at)} ${e.who}${originText(e)} ${e.kind}${e.runId ? ` ${e.runId}` : ''}${e.target ? ` ${e.target}` : ''}`,
              detail:
                [e.result, e.message, e.params ? JSON.stringify(e.params) : undefined].filter(Boolean).join(' · ') ||
                undefined,
            })),
          }
        : { kind: 'text', text: 'The audit log is empty.' },
    ],
  };
  return withUserText(reply, ...entries.flatMap((e) => [e.who, ...typedParams(e.params ?? {})]));
}

/** One line for terminal progress: `r-7f3k2 running · wave 1/2 · done 5 · syncing 3`. */
export function progressLine(run: Run): string {
  const bits = [`${run.id} ${run.status}`];
  if (run.progress) {
    bits.push(run.progress.headline);
    const counts = countsText(run.progress.counts);
    if (counts) bits.push(counts);
  }
  if (run.status === 'paused' && run.pausedReason) bits.push(`paused: ${run.pausedReason}`);
  if (run.error) bits.push(run.error);
  return bits.join(' · ');
}
