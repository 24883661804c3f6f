/**
 * One Rollout's action, sent at most once and followed to the state it leads to. The progress is a checkpoint
 * entry moved by sync-progress.ts's state machine, as bulk-sync and rollback move theirs: `posting` is written
 * under the attempt's lease before the POST, and from `posting` or `unknown` the only way back to `pending`
 * is proof that the request never arrived: after the window in which it could still land, the Rollout shows
 * nothing of what the action's script changes at once. A resource action carries no operation to recognise
 * it by; its immediate effect on the live object (verbs.ts `tookEffect`) is what tells.
 */
import { isArgoError } from '../../../../infra/argocd/errors.js';
import type { ArgoApi } from '../../../../infra/argocd/api.js';
import type { Rollout } from '../../../../infra/argocd/types.js';
import type { Checkpoint } from '../../run-store.js';
import { nextAppState, type AppCheckpoint, type AppEvent } from '../sync-progress.js';
import type { ActionContext } from '../types.js';
import { appRefOf, rolloutKey, rolloutRef, type PlannedRollout } from './plan.js';
import { reached, snapshot, tookEffect, whereItStands, type RolloutSnapshot } from './verbs.js';

export interface RolloutCheckpoint extends AppCheckpoint {
  name: string;
  namespace: string;
  /** The Rollout as read right before the claim: what its action's effect and end are judged against. */
  before?: RolloutSnapshot;
  /** Where it stood when its entry settled (done, failed, timeout). */
  ended?: RolloutSnapshot;
}

export interface DriveSettings {
  action: string;
  verb: string;
  timeoutMs: number;
  pollMs: number;
  windowMs: number;
}

export const settled = (s: RolloutCheckpoint) => s.state === 'done' || s.state === 'failed' || s.state === 'timeout';

/** What one attempt knows of one Rollout: its entry as last seen, and the helpers that move and follow it. */
export class RolloutDriver {
  private s!: RolloutCheckpoint;
  /** This attempt sent the POST: it never sends it again, whatever the stored state says. */
  private sent = false;
  readonly key: string;

  constructor(
    private readonly ctx: ActionContext,
    private readonly cp: Checkpoint<RolloutCheckpoint>,
    private readonly api: ArgoApi,
    readonly r: PlannedRollout,
    private readonly set: DriveSettings,
  ) {
    this.key = rolloutKey(r);
  }

  state(): RolloutCheckpoint {
    return this.s;
  }

  /** The stored entry, made `pending` by the first attempt to reach this Rollout. */
  async load(wave: number): Promise<void> {
    const stored = await this.cp.get(this.key);
    if (stored) {
      this.s = stored;
      return;
    }
    const { instance, app, cluster, name, namespace } = this.r;
    await this.cp.transition(this.key, undefined, { state: 'pending', instance, app, cluster, wave, name, namespace });
    this.s = (await this.cp.get(this.key))!;
  }

  /** Compare-and-set from the state last seen; on a lost race the stored entry is taken. */
  private async apply(event: AppEvent, extra: Partial<RolloutCheckpoint> = {}): Promise<boolean> {
    const t = nextAppState(this.s, event);
    if (!t.ok) return false;
    const next: RolloutCheckpoint = { ...(t.next as RolloutCheckpoint), ...extra };
    if (await this.cp.transition(this.key, this.s.state, next)) {
      this.s = next;
      return true;
    }
    this.s = (await this.cp.get(this.key)) ?? this.s;
    return false;
  }

  private sleep(ms: number): Promise<void> {
    const signal = this.ctx.signal;
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(t);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const t = setTimeout(done, ms);
      signal.addEventListener('abort', done);
    });
  }

  private async read(): Promise<Rollout | undefined> {
    try {
      return await this.api.liveResource<Rollout>(appRefOf(this.r), rolloutRef(this.r));
    } catch (error) {
      const message = (error as Error).message;
      if (isArgoError(error) && ['not_found', 'forbidden'].includes(error.kind) && this.s.state === 'pending') {
        await this.apply({ type: 'gone', reason: `the Rollout could not be read (${message}); not sent` });
        return undefined;
      }
      // Followed but unreadable: it cannot be seen getting there, so its timeout still counts.
      if (this.s.state === 'accepted' && (await this.ctx.redisNow()) > (this.s.at ?? 0) + this.set.timeoutMs) {
        await this.apply({
          type: 'timedOut',
          reason: `Argo CD took ${this.set.action}, but the Rollout could not be read since (${message})`,
        });
        return undefined;
      }
      await this.sleep(this.set.pollMs);
      return undefined;
    }
  }

  /** Sends the action at most once and follows it until its entry settles or the step's signal stops this attempt. */
  async drive(): Promise<void> {
    while (!this.ctx.signal.aborted && !settled(this.s)) {
      const ro = await this.read();
      if (!ro) continue;
      const now = snapshot(ro);
      if (this.s.state === 'pending') await this.start(now, ro);
      else if (this.s.state === 'posting' || this.s.state === 'unknown') await this.followUncertain(now, ro);
      else if (this.s.state === 'accepted') await this.follow(now);
    }
  }

  /** A `pending` Rollout: the action offered again right before it is sent, as the preview found it. */
  private async start(now: RolloutSnapshot, ro: Rollout): Promise<void> {
    if (this.sent) {
      await this.sleep(this.set.pollMs);
      return;
    }
    if (tookEffect(this.set.action, this.r.before, now, ro) || reached(this.set.action, this.r.before, now)) {
      // Someone did it since the preview (from the Argo CD UI, kubectl argo rollouts): followed, not sent again.
      await this.apply({ type: 'found' }, { note: `${this.set.action} already done by someone else; not sent` });
      return;
    }
    const offered = await this.api.listResourceActions(appRefOf(this.r), rolloutRef(this.r)).catch((e: Error) => e);
    if (offered instanceof Error) {
      if (isArgoError(offered) && ['not_found', 'forbidden'].includes(offered.kind)) {
        const reason = `Argo CD's action list could not be read (${offered.message}); not sent`;
        await this.apply({ type: 'gone', reason }, { ended: now });
      } else await this.sleep(this.set.pollMs);
      return;
    }
    const found = offered.find((a) => a.name === this.set.action);
    if (!found || found.disabled) {
      await this.apply(
        {
          type: 'gone',
          reason: `${this.set.action} is not offered any more: ${whereItStands(now)} (changed since the preview); not sent`,
        },
        { ended: now },
      );
      return;
    }
    await this.send(now);
  }

  /** The POST, after the `posting` mark with the Rollout as it was, and a check that this process was not frozen since. */
  private async send(before: RolloutSnapshot): Promise<void> {
    const { ctx, r, set } = this;
    await ctx.limiter.acquire(r.instance, ctx.signal);
    const started = performance.now();
    if (!(await this.apply({ type: 'claim' }, { before }))) return;
    // A process frozen since its mark must not send late: the window that proves "never took" has started.
    if (ctx.signal.aborted || performance.now() - started > set.windowMs / 2) return;
    this.sent = true;
    const audit = (result: string) =>
      ctx.audit({
        kind: 'argocd.mutation',
        who: ctx.run.requester,
        target: `${r.instance}/${r.app}`,
        message: `${set.verb}: Argo CD action ${set.action} on Rollout ${r.namespace}/${r.name}`,
        params: {
          action: set.action,
          cluster: r.cluster,
          rollout: `${r.namespace}/${r.name}`,
          before: whereItStands(before),
        },
        result,
      });
    try {
      await this.api.runResourceAction(appRefOf(r), rolloutRef(r), set.action);
      await this.apply({ type: 'answered' });
      await audit('accepted');
    } catch (error) {
      const e = isArgoError(error) ? error : undefined;
      const message = e?.argoMessage ?? (error as Error).message;
      if (!e || e.maybeApplied || ['unavailable', 'rate_limited', 'timeout', 'network'].includes(e.kind))
        // It may have reached Argo CD: read back, never re-sent blindly.
        await this.apply({ type: 'answerLost', note: message });
      else await this.apply({ type: 'refused', reason: e.message }, { reason: `${set.action} refused: ${e.message}` });
      await audit(`error: ${e?.kind ?? 'unknown'}`);
    }
  }

  /** A `posting` or `unknown` action: its effect seen, or (after the posting window) never taken. */
  private async followUncertain(now: RolloutSnapshot, ro: Rollout): Promise<void> {
    const before = this.s.before ?? this.r.before;
    if (tookEffect(this.set.action, before, now, ro) || reached(this.set.action, before, now)) {
      await this.apply({ type: 'found' });
      return;
    }
    if ((await this.ctx.redisNow()) > (this.s.at ?? 0) + this.set.windowMs) {
      // The window in which the POST could still land has passed and the Rollout shows nothing of it: it never took.
      if (await this.apply({ type: 'notApplied', windowPassed: true })) this.sent = false;
      return;
    }
    await this.sleep(this.set.pollMs);
  }

  /** An `accepted` action: followed until the controller brings the Rollout where it leads, or its timeout. */
  private async follow(now: RolloutSnapshot): Promise<void> {
    const before = this.s.before ?? this.r.before;
    if (reached(this.set.action, before, now)) {
      await this.apply({ type: 'finished', succeeded: true }, { ended: now });
      return;
    }
    if ((await this.ctx.redisNow()) > (this.s.at ?? 0) + this.set.timeoutMs) {
      await this.apply(
        {
          type: 'timedOut',
          reason: `Argo CD took ${this.set.action}, but the Rollout did not get there in time: ${whereItStands(now)}`,
        },
        { ended: now },
      );
      return;
    }
    await this.sleep(this.set.pollMs);
  }
}
