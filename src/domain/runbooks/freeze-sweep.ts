import { freezeSpent, type Freeze } from '../../fleet/freeze.js';
import type { ArgoApi } from '../../infra/argocd/api.js';
import { keyBase, type RedisClient } from '../../infra/redis.js';
import { SharedSweep } from '../../infra/shared-sweep.js';
import type { AuditStream } from '../audit/audit-log.js';
import { editedMessage, findFreezeWindow, removeFreezeWindow, type FreezeStore } from './freeze.js';

export interface FreezeSweepOptions {
  redis: RedisClient;
  prefix: string;
  store: FreezeStore;
  argocd: ReadonlyMap<string, ArgoApi>;
  audit?: AuditStream;
  /**
   * How often spent freezes are looked for.
   * @defaultValue 60_000
   */
  everyMs?: number;
  now?: () => Date;
  logger?: { warn(o: unknown, m?: string): void; info(o: unknown, m?: string): void };
}

/** What one sweep did with each spent freeze. */
export interface FreezeSweepResult {
  removed: Freeze[];
  /** Windows already gone from the project (removed by hand): only the record went. */
  gone: Freeze[];
  /** Windows someone changed since the freeze: left in the project, said once. */
  refused: Freeze[];
}

/**
 * Removes the windows of spent for= freezes. Argo CD has no one-off window: a freeze `for=2h` is a deny window on a
 * yearly schedule that stops holding after two hours and fires again on the same date next year, until someone
 * removes it. The sweep removes exactly rollcall's own window, as `unfreeze` does (the project read, the window
 * found as written, PUT back with its resourceVersion), audits it in rollcall's name, and forgets the record. A
 * window someone changed since is left alone, said once in the audit log and kept for `frozen` to show. Any
 * number of processes may run one: a sweep is taken by one of them (SET NX for the interval).
 */
export class FreezeSweeper {
  private readonly now: () => Date;
  private readonly shared: SharedSweep;

  constructor(private readonly opts: FreezeSweepOptions) {
    this.now = opts.now ?? (() => new Date());
    this.shared = new SharedSweep({
      redis: opts.redis,
      lockKey: `${keyBase(opts.prefix)}freeze-sweep`,
      everyMs: opts.everyMs ?? 60_000,
      sweep: () => this.sweep(),
      name: 'freeze sweep',
      logger: opts.logger,
    });
  }

  start(): void {
    this.shared.start();
  }

  trigger(): void {
    this.shared.trigger();
  }

  stop(): Promise<void> {
    return this.shared.stop();
  }

  /** One pass over the recorded freezes; an instance that cannot be reached now is tried again next time. */
  async sweep(): Promise<FreezeSweepResult> {
    const now = this.now();
    const result: FreezeSweepResult = { removed: [], gone: [], refused: [] };
    for (const freeze of await this.opts.store.list()) {
      if (!freezeSpent(freeze, now) || freeze.expiryRefused) continue;
      const api = this.opts.argocd.get(freeze.instance);
      if (!api) {
        this.opts.logger?.warn({ instance: freeze.instance }, 'spent freeze on an instance rollcall has no client for');
        continue;
      }
      await this.sweepOne(api, freeze, result).catch((err) =>
        this.opts.logger?.warn(
          { err: (err as Error).message, project: freeze.project, instance: freeze.instance },
          'could not remove a spent freeze window; trying again next sweep',
        ),
      );
    }
    return result;
  }

  private async sweepOne(api: ArgoApi, freeze: Freeze, result: FreezeSweepResult): Promise<void> {
    const record = (outcome: string) =>
      this.opts.audit?.record({
        kind: 'argocd.mutation',
        who: 'rollcall',
        surface: 'engine',
        runId: freeze.runId,
        target: `${freeze.instance}/appproject:${freeze.project}`,
        message: `freeze of ${freeze.target} ended at ${freeze.until}: remove rollcall's deny window from AppProject ${freeze.project}`,
        params: { window: freeze.window, frozenBy: freeze.by, frozenRun: freeze.runId, until: freeze.until },
        result: outcome,
      });
    const found = findFreezeWindow(await api.getProject(freeze.project), freeze);
    if (found.state === 'edited') {
      // Someone's change is theirs to undo: left in place, said once, and shown by `frozen`.
      const message = editedMessage(freeze, freeze.instance, found.index, found.now);
      await this.opts.store.save({ ...freeze, expiryRefused: message });
      await record(`refused: ${message}`);
      result.refused.push(freeze);
      return;
    }
    // Removed as unfreeze removes it: an edit that lands between the read above and this write is refused here.
    const outcome = await removeFreezeWindow(api, freeze);
    await record(outcome === 'changed' ? 'ok' : 'already gone');
    await this.opts.store.remove(freeze);
    (outcome === 'changed' ? result.removed : result.gone).push(freeze);
  }
}
