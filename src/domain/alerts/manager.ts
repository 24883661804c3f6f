import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { RollcallConfig } from '../../infra/config/schema.js';
import type { FleetView } from '../../fleet/model.js';
import { isActive, nextAlert, type AlertRecord, type LifecyclePolicy } from './lifecycle.js';
import { evaluateAlertRules, ruleSettings, type AlertCondition, type RuleInputs } from './rules.js';
import type { AlertStore } from './store.js';

/** Where an alert's message lives and how it changes. Implemented over the Slack notifier by the runtime. */
export interface AlertOutput {
  /** Posts the alert's message; returns where it is. */
  post(
    target: { channel: string; threadTs?: string },
    alert: AlertRecord,
  ): Promise<{ channel: string; ts: string; threadTs?: string }>;
  /** Re-renders it in place (apps joined or left, acked, snoozed, resolved). */
  update(message: { channel: string; ts: string }, alert: AlertRecord): Promise<void>;
  /** It got worse: one new notification, in the message's thread. */
  followUp(message: { channel: string; ts: string }, alert: AlertRecord): Promise<void>;
}

/** An open incident an alert belongs to (same instance, and its scope covers the alert's apps). */
export interface CoveringIncident {
  id: string;
  channel: string;
  threadTs: string;
}

/**
 * What alerts need from incidents: the open incident whose scope covers an alert, where the alert's
 * message then goes (its thread), and the alert's events for its timeline. The default has none.
 */
export interface IncidentSink {
  openCovering(alert: AlertRecord): Promise<CoveringIncident | null>;
  recordAlert(incidentId: string, alert: AlertRecord, event: 'fired' | 'worse' | 'resolved'): Promise<void>;
}

export const NO_INCIDENTS: IncidentSink = {
  async openCovering() {
    return null;
  },
  async recordAlert() {},
};

export interface AlertManagerOptions {
  fleet: FleetView;
  config: RollcallConfig;
  store: AlertStore;
  output?: AlertOutput;
  incidents?: IncidentSink;
  /** Newest successful key backup per cluster with a backup schedule (from the run records). */
  keyBackups?: () => Promise<RuleInputs['keyBackups']>;
  /** Metric checks failing on watched apps (RegressionStore), for the check-failed rule. */
  regressions?: () => Promise<RuleInputs['regressions']>;
  /** rollcall's freezes (Redis): what they hold is an expected stall, not an alert. */
  freezes?: () => Promise<RuleInputs['freezes']>;
  logger?: Logger;
  now?: () => Date;
}

/** How long a worker may take to post or edit one message before another may try. */
const RENDER_LEASE_MS = 60_000;
/** Fleet events come in bursts (a sync touches an app many times): one sweep after the burst. */
const EVENT_DEBOUNCE_MS = 1000;

/**
 * Evaluates the alert rules on fleet events and every `alerts.sweepEvery` (a stuck step produces no
 * events), moves every group through its lifecycle in Redis, and keeps each alert's one message up to
 * date. Any number of workers may run one: the state changes are compare-and-set, and a message is
 * posted or edited only by the worker holding its render lease, so each alert is posted once.
 */
export class AlertManager {
  private readonly owner = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  private readonly policy: LifecyclePolicy;
  private readonly incidents: IncidentSink;
  private readonly now: () => Date;
  private timer?: NodeJS.Timeout;
  private debounce?: NodeJS.Timeout;
  private unsubscribe?: () => void;
  private running?: Promise<void>;
  private again = false;
  private stopped = false;

  constructor(private readonly opts: AlertManagerOptions) {
    const a = opts.config.alerts;
    this.policy = { holdDownMs: a.holdDown, resolveAfterMs: a.resolveAfter };
    this.incidents = opts.incidents ?? NO_INCIDENTS;
    this.now = opts.now ?? (() => new Date());
  }

  start(): void {
    this.unsubscribe = this.opts.fleet.subscribe(() => {
      if (this.stopped || this.debounce) return;
      this.debounce = setTimeout(() => {
        this.debounce = undefined;
        this.trigger();
      }, EVENT_DEBOUNCE_MS);
      this.debounce.unref?.();
    });
    this.timer = setInterval(() => this.trigger(), this.opts.config.alerts.sweepEvery);
    this.timer.unref?.();
    this.trigger();
  }

  /** Runs a sweep now, or once more right after the one in progress. */
  trigger(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.sweep()
      .then(() => undefined)
      .catch((err) => this.opts.logger?.warn({ err: (err as Error).message }, 'alert sweep failed'))
      .finally(() => {
        this.running = undefined;
        if (this.again && !this.stopped) {
          this.again = false;
          this.trigger();
        }
      });
  }

  /** Resolves once no sweep is running: the one in progress, and any asked for meanwhile, are done. */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    clearInterval(this.timer);
    clearTimeout(this.debounce);
    await this.running;
  }

  /** Conditions of every rule now, without touching Redis (for `alerts` and the benchmark). */
  async evaluate(): Promise<ReturnType<typeof evaluateAlertRules>> {
    const [keyBackups, regressions, freezes] = await Promise.all([
      this.opts.keyBackups?.().catch(() => undefined),
      this.opts.regressions?.().catch(() => undefined),
      this.opts.freezes?.().catch(() => undefined),
    ]);
    return evaluateAlertRules({
      fleet: this.opts.fleet,
      now: this.now(),
      config: this.opts.config.alerts,
      keyBackups,
      regressions,
      freezes,
    });
  }

  /** One pass: evaluate, move every group on, render what changed. Returns the groups as stored after. */
  async sweep(): Promise<AlertRecord[]> {
    const { conditions } = await this.evaluate();
    const now = this.now();
    const byKey = new Map<string, AlertCondition>(conditions.map((c) => [c.key, c]));
    const all = await this.opts.store.all();
    const keepResolved = this.opts.config.alerts.keepResolved;
    const expired = (a: AlertRecord) =>
      a.state === 'resolved' && now.getTime() - Date.parse(a.resolvedAt ?? a.updatedAt) > keepResolved;
    for (const a of all) if (a.archived && expired(a)) await this.opts.store.removeArchived(a.id);
    const stored = all.filter((a) => !a.archived);
    const keys = new Set<string>([...byKey.keys(), ...stored.map((a) => a.key)]);
    const after: AlertRecord[] = [];
    for (const key of keys) {
      const condition = byKey.get(key);
      const current = stored.find((a) => a.key === key);
      // Its problem is back (or others of the group have it): the resolved alert is kept under its id first.
      if (current?.state === 'resolved' && condition && !(current.message && current.version > current.rendered))
        await this.opts.store.archive(current);
      const record = await this.opts.store.mutate(key, (current) => {
        if (current && !condition && expired(current)) return null;
        return nextAlert(current, condition, now, this.policy);
      });
      if (record) after.push(record);
    }
    if (this.opts.output) {
      for (const record of after) {
        if (record.state === 'pending' || (record.version <= record.rendered && !record.renotify)) continue;
        await this.render(record).catch((err) =>
          this.opts.logger?.warn({ alert: record.id, err: (err as Error).message }, 'alert message not delivered'),
        );
      }
    }
    return after;
  }

  private channelOf(alert: AlertRecord): string | undefined {
    return ruleSettings(this.opts.config.alerts, alert.rule).channel;
  }

  /** Posts or edits the alert's message, if this worker wins its render lease. */
  private async render(seen: AlertRecord): Promise<void> {
    const output = this.opts.output!;
    const nowMs = this.now().getTime();
    const claimed = await this.opts.store.mutate(seen.key, (current) => {
      if (!current || current.id !== seen.id) return undefined;
      if (current.version <= current.rendered && !current.renotify) return undefined;
      if (current.renderLease && current.renderLease.owner !== this.owner && current.renderLease.until > nowMs)
        return undefined;
      return { ...current, renderLease: { owner: this.owner, until: nowMs + RENDER_LEASE_MS } };
    });
    if (!claimed || claimed.renderLease?.owner !== this.owner) return;

    let message = claimed.message;
    let incident = claimed.incident;
    let delivered = false;
    try {
      if (!message) {
        // A resolved alert nobody was told about stays untold.
        if (claimed.state !== 'resolved') {
          incident = (await this.incidents.openCovering(claimed)) ?? undefined;
          const channel = incident?.channel ?? this.channelOf(claimed);
          if (channel) {
            message = await output.post(incident ? { channel, threadTs: incident.threadTs } : { channel }, claimed);
            if (incident) await this.incidents.recordAlert(incident.id, claimed, 'fired');
          }
        }
      } else {
        await output.update(message, claimed);
        if (claimed.renotify && isActive(claimed)) {
          await output.followUp(message, claimed);
          if (incident) await this.incidents.recordAlert(incident.id, claimed, 'worse');
        }
        if (claimed.state === 'resolved' && incident)
          await this.incidents.recordAlert(incident.id, claimed, 'resolved');
      }
      // Without a channel there is nothing to deliver: the alert is still listed by `alerts`.
      delivered = true;
    } finally {
      await this.opts.store.mutate(claimed.key, (current) => {
        if (!current || current.id !== claimed.id) return undefined;
        return {
          ...current,
          message: current.message ?? message,
          incident: current.incident ?? incident,
          // A failed post or edit is tried again at the next sweep.
          rendered: delivered ? Math.max(current.rendered, claimed.version) : current.rendered,
          renotify: delivered ? current.renotify && current.notifiedApps !== claimed.notifiedApps : current.renotify,
          renderLease: undefined,
        };
      });
    }
  }
}
