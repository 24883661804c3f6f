import { AsyncLocalStorage } from 'node:async_hooks';
import type { ArgoApi } from '../infra/argocd/api.js';
import { ArgoError } from '../infra/argocd/errors.js';
import { cutRequestsWith } from '../infra/http/transport.js';
import type { FleetApp, FleetView } from '../fleet/model.js';
import { since } from '../core/format.js';
import { CommandError } from './parse.js';
import type { CommandContext } from './registry.js';

/**
 * Live calls to Argo CD for what the mirror does not hold (manifests, logs, live resources), all within one answer
 * budget per command: in an incident Argo CD's API is the first thing to slow down, and the mirror still answers.
 */

/**
 * How long a command's live reads may hold its answer up, all of them together, unless config `answers.budget` says
 * otherwise. Slack has the request acked before the command runs and the answer goes through response_url, so 3 s is
 * not a hard limit here; it is how long people wait on a slash command before they retype it, and 2.5 s keeps the
 * whole answer under it, with room for the mirror's part and the post. A healthy Argo CD answers a Get well within it.
 */
export const ANSWER_BUDGET_MS = 2500;

/** The budget of the answer being computed: its deadline, on the monotonic clock. */
interface AnswerBudget {
  ms: number;
  deadline: number;
  /**
   * A read was cut at the deadline. Node runs the cut's timer by the event loop's time, taken when the loop's turn
   * began, which lags `performance.now()` by as long as that turn ran: the cut can fire while the clock still shows
   * budget left, and a read started after it must not count on that.
   */
  spent?: boolean;
}
const budgets = new AsyncLocalStorage<AnswerBudget>();

/** Runs one command's answer under a budget of `ms` for its live reads, counted from now. */
export function withAnswerBudget<T>(ms: number, answer: () => Promise<T>): Promise<T> {
  return budgets.run({ ms, deadline: performance.now() + ms }, answer);
}

/** The budget in force: the command's, or a fresh default one for a caller outside `dispatch`. */
function currentBudget(): AnswerBudget {
  return budgets.getStore() ?? { ms: ANSWER_BUDGET_MS, deadline: performance.now() + ANSWER_BUDGET_MS };
}

/** A live read that the answer's budget cut (an Argo CD timeout): Argo CD may still answer it, later than anyone waits. */
export class LiveReadCut extends ArgoError {
  constructor(instance: string, budgetMs: number) {
    super(
      `no answer within ${budgetMs / 1000}s, this answer's budget for its live reads; try again, or check the instance's health.`,
      { kind: 'timeout', instance },
    );
  }
}

/** How Argo CD's API names the app (project too, so a missing app is a 404 rather than a 403). */
export function appRef(fa: FleetApp): { name: string; appNamespace?: string; project?: string } {
  return { name: fa.app.metadata.name, appNamespace: fa.app.metadata.namespace, project: fa.app.spec?.project };
}

/**
 * The Argo CD API of the app's instance, for commands that only a live call can answer (history
 * metadata, diff, logs): rollcall's mirror holds no manifests or logs.
 */
export function argoApiFor(ctx: CommandContext, fa: FleetApp, command: string): ArgoApi {
  const api = ctx.services.argocd?.get(fa.instance);
  if (!api)
    throw new CommandError(
      'not_configured',
      `\`${command}\` reads Argo CD instance ${fa.instance} live, and this process has no client for it: check instances[] in rollcall.yaml.`,
    );
  return api;
}

/**
 * A live call that must not hold the answer up: it fails as an Argo CD timeout once the command's answer budget is
 * spent (shared by every live read of the answer, so three reads in a row cannot take three budgets), and its
 * requests still in flight are aborted then. A budget already spent starts no read at all.
 */
export async function withinLiveBudget<T>(instance: string, work: () => Promise<T>): Promise<T> {
  const budget = currentBudget();
  if (budget.spent || budget.deadline <= performance.now()) throw new LiveReadCut(instance, budget.ms);
  const cut = new AbortController();
  const running = cutRequestsWith(cut.signal, work);
  // The aborted requests fail after the cut has answered: nobody is left to hear it.
  running.catch(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => {
        budget.spent = true;
        reject(new LiveReadCut(instance, budget.ms));
        cut.abort();
      },
      Math.max(0, budget.deadline - performance.now()),
    );
  });
  try {
    return await Promise.race([running, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * How old the mirror's copy of an instance is, as an answer shown instead of a live read says it: "40s old" when its
 * watch broke 40 s ago, "kept current by its watch" while the watch follows.
 */
export function mirrorAge(fleet: FleetView, instance: string, now: Date): string {
  const h = fleet.health().find((x) => x.instance === instance);
  if (!h || h.synced) {
    const last = since(h?.lastEventAt, now);
    return `from the mirror, kept current by Argo CD's watch${last ? ` (last change ${last} ago)` : ''}`;
  }
  const age = since(h.dataAsOf, now);
  return age ? `from the mirror, ${age} old (its watch of ${instance} is broken)` : `from the mirror, of unknown age`;
}

/** "Argo CD did not answer within 2.5s; from the mirror, 40s old": the line an answer cut short carries. */
export function cutLine(fleet: FleetView, instance: string, now: Date): string {
  return `Argo CD instance ${instance} did not answer within ${currentBudget().ms / 1000}s; ${mirrorAge(fleet, instance, now)}.`;
}
