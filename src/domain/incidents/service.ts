import { absoluteTime, formatDuration } from '../../core/format.js';
import { RollcallError } from '../../core/errors.js';
import { suggest } from '../../core/suggest.js';
import type { FleetView } from '../../fleet/model.js';
import { selectApps, type AppSelector } from '../../fleet/select.js';
import type { ChangeLog } from './change-log.js';
import type { ChangeRecord } from './changes.js';
import {
  blastRadius,
  computeMetrics,
  healthTracks,
  type BlastRadius,
  type Impacted,
  type IncidentMetrics,
} from './metrics.js';
import {
  INCIDENT_STATES,
  type Incident,
  type IncidentEntry,
  type IncidentState,
  type IncidentStatus,
  type IncidentStore,
} from './store.js';
import { incidentWindow, mergeTimeline, scopedApps, type TimelineEntry } from './timeline.js';

export interface IncidentServiceOptions {
  /** How far before a declaration the timeline and impactStart reach. @defaultValue 60 minutes */
  lookbackMs?: number;
  /** Every scoped app Synced and Healthy this long: rollcall suggests `status mitigated`. @defaultValue 5 minutes */
  mitigatedAfterMs?: number;
  now?: () => Date;
}

/** An alert as the incident timeline keeps it; `id` makes a re-sent alert one entry. */
export interface IncidentAlert {
  id: string;
  at?: string;
  text: string;
  instance?: string;
  app?: string;
  appSet?: string;
  cluster?: string;
  /** When the alerted problem began to be impact, if before the alert (alertImpactSince). */
  impactSince?: string;
}

export interface IncidentAnalysis {
  incident: Incident;
  timeline: TimelineEntry[];
  metrics: IncidentMetrics;
  blastRadius: BlastRadius;
  impacted: Impacted;
  tracks: ReturnType<typeof healthTracks>;
  window: { start: number; end: number };
}

/** Which incident, or why not: with several open, the error names them (suggestions, data.open). */
export class IncidentError extends RollcallError {
  override name = 'IncidentError';
  constructor(
    code:
      | 'incident_not_found'
      | 'incident_ambiguous'
      | 'incident_none_open'
      | 'incident_closed'
      | 'incident_not_closed'
      | 'invalid_params',
    message: string,
    readonly open: Incident[] = [],
    suggestions: string[] = open.map((i) => i.id),
  ) {
    super(code, message, {
      suggestions,
      ...(open.length
        ? { data: { open: open.map((i) => ({ id: i.id, title: i.title, state: i.state, severity: i.severity })) } }
        : {}),
    });
  }
}

const ID = /^inc-(\d+)$/i;

export function isIncidentId(word: string | undefined): boolean {
  return !!word && ID.test(word);
}

export function normalizeId(word: string): string {
  return `INC-${ID.exec(word)![1]}`;
}

/**
 * Incidents over the store, the change log and the fleet: the lifecycle, the timeline (its own
 * entries merged with the scoped changes), metrics and blast radius. Transport-neutral: Slack and
 * the terminal call the same methods through the commands.
 */
export class IncidentService {
  readonly lookbackMs: number;
  readonly mitigatedAfterMs: number;
  private readonly now: () => Date;

  constructor(
    readonly store: IncidentStore,
    readonly changes: ChangeLog,
    private readonly fleet: FleetView,
    opts: IncidentServiceOptions = {},
  ) {
    this.lookbackMs = opts.lookbackMs ?? 60 * 60_000;
    this.mitigatedAfterMs = opts.mitigatedAfterMs ?? 5 * 60_000;
    this.now = opts.now ?? (() => new Date());
  }

  async declare(opts: {
    title: string;
    severity: number;
    scope?: { text: string; selector: AppSelector };
    by: string;
    lookbackMs?: number;
  }): Promise<Incident> {
    const at = this.now().toISOString();
    const scopeApps = opts.scope
      ? selectApps(this.fleet, opts.scope.selector).map((a) => `${a.instance}/${a.app.metadata.name}`)
      : [];
    const incident = await this.store.create({
      title: opts.title,
      severity: opts.severity,
      ...(opts.scope ? { scope: opts.scope.text, scopeSelector: opts.scope.selector } : {}),
      scopeApps,
      lead: opts.by,
      declaredBy: opts.by,
      declaredAt: at,
      lookbackMs: opts.lookbackMs ?? this.lookbackMs,
    });
    await this.store.append(incident.id, {
      at,
      kind: 'declared',
      source: 'human',
      by: opts.by,
      text: `${incident.id} declared by ${opts.by}: ${opts.title} (sev ${opts.severity}${opts.scope ? `, scope ${opts.scope.text}` : ''})`,
    });
    return incident;
  }

  /**
   * The incident a command means: the one named, else the one of the Slack channel or thread, else
   * the only open one. Otherwise it says which are open.
   */
  async resolve(id: string | undefined, where: { channel?: string; threadTs?: string } = {}): Promise<Incident> {
    if (id) {
      const incident = await this.store.get(normalizeId(id));
      if (!incident) {
        const known = (await this.store.recent(50)).map((i) => i.id);
        throw new IncidentError(
          'incident_not_found',
          `No incident ${normalizeId(id)}: \`incidents\` lists the open and recent ones.`,
          [],
          suggest(normalizeId(id), known),
        );
      }
      return incident;
    }
    const open = await this.store.open();
    if (where.channel) {
      const here = open.filter(
        (i) =>
          i.channel === where.channel ||
          (i.header?.channel === where.channel && (!where.threadTs || i.header?.ts === where.threadTs)),
      );
      if (here.length === 1) return here[0];
    }
    if (open.length === 1) return open[0];
    if (!open.length)
      throw new IncidentError(
        'incident_none_open',
        'No incident is open. Name one (`incident show INC-3`), or declare one: `incident start TITLE... [sev=1..4] [scope=SELECTOR]`.',
      );
    throw new IncidentError(
      'incident_ambiguous',
      `${open.length} incidents are open: ${open.map((i) => `${i.id} (${i.title})`).join(', ')}. Say which, e.g. \`incident note ${open[0].id} ...\`.`,
      open,
    );
  }

  private async requireOpen(incident: Incident): Promise<void> {
    if (incident.state === 'closed')
      throw new IncidentError('incident_closed', `${incident.id} is closed. \`incident reopen ${incident.id}\` first.`);
  }

  async note(
    incident: Incident,
    text: string,
    by: string,
    opts: { at?: string; dedupeKey?: string; ref?: string } = {},
  ): Promise<boolean> {
    if (!text.trim()) throw new IncidentError('invalid_params', 'A note needs text: `incident note [ID] TEXT`.');
    return this.store.append(
      incident.id,
      {
        at: opts.at ?? this.now().toISOString(),
        kind: 'note',
        source: 'human',
        by,
        text: text.trim(),
        ...(opts.ref ? { ref: opts.ref } : {}),
      },
      opts.dedupeKey,
    );
  }

  async setStatus(incident: Incident, state: IncidentStatus, by: string, text?: string): Promise<Incident> {
    await this.requireOpen(incident);
    if (!INCIDENT_STATES.includes(state))
      throw new IncidentError('invalid_params', `Status must be one of ${INCIDENT_STATES.join(', ')}.`);
    const at = this.now().toISOString();
    await this.store.append(incident.id, {
      at,
      kind: 'status',
      source: 'human',
      by,
      state,
      text: `status ${incident.state} → ${state} by ${by}${text ? `: ${text}` : ''}`,
    });
    return this.store.update(incident.id, { state });
  }

  async setSeverity(incident: Incident, severity: number, by: string): Promise<Incident> {
    await this.store.append(incident.id, {
      at: this.now().toISOString(),
      kind: 'status',
      source: 'human',
      by,
      text: `severity ${incident.severity} → ${severity} by ${by}`,
    });
    return this.store.update(incident.id, { severity });
  }

  async setLead(incident: Incident, lead: string, by: string): Promise<Incident> {
    await this.store.append(incident.id, {
      at: this.now().toISOString(),
      kind: 'status',
      source: 'human',
      by,
      text: `lead ${incident.lead ?? 'none'} → ${lead} (set by ${by})`,
    });
    return this.store.update(incident.id, { lead });
  }

  async setImpact(incident: Incident, at: string, by: string): Promise<Incident> {
    await this.store.append(incident.id, {
      at: this.now().toISOString(),
      kind: 'status',
      source: 'human',
      by,
      text: `impact start set to ${absoluteTime(at)} by ${by}`,
    });
    return this.store.update(incident.id, { impactOverride: at });
  }

  async close(incident: Incident, by: string, summary?: string): Promise<Incident> {
    await this.requireOpen(incident);
    const at = this.now().toISOString();
    await this.store.append(incident.id, {
      at,
      kind: 'closed',
      source: 'human',
      by,
      text: `${incident.id} closed by ${by}${summary ? `: ${summary}` : ''}`,
    });
    const closed = await this.store.update(incident.id, {
      state: 'closed',
      closedAt: at,
      ...(summary ? { summary } : {}),
    });
    // The change log forgets after its retention; the incident keeps its part of it.
    const changes = await this.scopedChanges(closed);
    await this.store.saveFleetSnapshot(closed.id, JSON.stringify(changes));
    return closed;
  }

  async reopen(incident: Incident, by: string): Promise<Incident> {
    if (incident.state !== 'closed')
      throw new IncidentError('incident_not_closed', `${incident.id} is open (${incident.state}); nothing to reopen.`);
    await this.store.append(incident.id, {
      at: this.now().toISOString(),
      kind: 'status',
      source: 'human',
      by,
      state: 'investigating',
      text: `${incident.id} reopened by ${by}`,
    });
    return this.store.update(incident.id, { state: 'investigating', closedAt: undefined });
  }

  /** Changes in the incident's window (those frozen at close included). */
  private async windowChanges(incident: Incident): Promise<ChangeRecord[]> {
    const { start, end } = incidentWindow(incident, this.now().getTime());
    const live = await this.changes.read(start, end);
    const frozen = await this.store.fleetSnapshot(incident.id);
    return frozen ? [...(JSON.parse(frozen) as ChangeRecord[]), ...live] : live;
  }

  private async scopedChanges(incident: Incident): Promise<ChangeRecord[]> {
    const timeline = mergeTimeline(incident, this.fleet, await this.windowChanges(incident), []);
    return timeline.map((e) => e.change).filter((c): c is ChangeRecord => !!c);
  }

  async timeline(incident: Incident): Promise<TimelineEntry[]> {
    const [changes, own] = await Promise.all([this.windowChanges(incident), this.store.entries(incident.id)]);
    return mergeTimeline(incident, this.fleet, changes, own);
  }

  async analyse(incident: Incident): Promise<IncidentAnalysis> {
    const timeline = await this.timeline(incident);
    const window = incidentWindow(incident, this.now().getTime());
    // Argo CD's clock may run ahead of ours: what it stamped after the close still happened before it.
    const last = timeline.length ? Date.parse(timeline[timeline.length - 1].at) : window.end;
    window.end = Math.max(window.end, last);
    const metrics = computeMetrics(incident, timeline);
    const tracks = healthTracks(timeline, scopedApps(incident, this.fleet), window.start);
    // The blast radius counts from the start of impact (or the window), not the whole look-back.
    const { radius, impacted } = blastRadius(tracks, window.start, window.end);
    return { incident, timeline, metrics, blastRadius: radius, impacted, tracks, window };
  }

  /**
   * "Every scoped app has been Synced and Healthy for 5 minutes": the moment to say `status
   * mitigated`. Without a scope the apps that were hit stand for it (a whole fleet always has drift).
   */
  mitigationSuggestion(analysis: IncidentAnalysis): string | undefined {
    const { incident } = analysis;
    if (incident.state !== 'investigating' && incident.state !== 'identified') return undefined;
    const nowMs = this.now().getTime();
    const apps = incident.scopeSelector
      ? scopedApps(incident, this.fleet)
      : this.fleet
          .apps()
          .filter(
            (a) =>
              analysis.impacted.apps.includes(a.app.metadata.name) && analysis.impacted.instances.includes(a.instance),
          );
    if (!apps.length) return undefined;
    const settled = apps.every((a) => {
      const health = a.app.status?.health;
      if (a.app.status?.sync?.status !== 'Synced' || health?.status !== 'Healthy') return false;
      const since = health.lastTransitionTime ? Date.parse(health.lastTransitionTime) : 0;
      return nowMs - since >= this.mitigatedAfterMs;
    });
    if (!settled) return undefined;
    return `All ${apps.length} scoped app${apps.length === 1 ? '' : 's'} have been Synced and Healthy for ${formatDuration(this.mitigatedAfterMs)}: \`incident status ${incident.id} mitigated\`?`;
  }

  // ---- for alert rules ----

  /** Open incidents whose scope covers the app (any open incident without a scope covers everything). */
  async openCoveringScope(target: { instance?: string; app?: string } | AppSelector): Promise<Incident[]> {
    const open = await this.store.open();
    let keys: string[];
    if ('app' in target && typeof target.app === 'string' && !('patterns' in target)) {
      keys = [`${target.instance ?? ''}/${target.app}`];
    } else {
      try {
        keys = selectApps(this.fleet, target as AppSelector).map((a) => `${a.instance}/${a.app.metadata.name}`);
      } catch {
        keys = [];
      }
    }
    return open.filter((incident) => {
      if (!incident.scopeSelector) return true;
      const scope = new Set(incident.scopeApps);
      for (const a of scopedApps(incident, this.fleet)) scope.add(`${a.instance}/${a.app.metadata.name}`);
      return keys.some((k) => scope.has(k) || (k.startsWith('/') && [...scope].some((s) => s.endsWith(k))));
    });
  }

  /**
   * Puts an alert on the timeline of every open incident that covers it (and, through the change
   * log, on any declared later within its look-back, where it marks `detected`). The alert's id
   * keeps it once, however many alert workers send it.
   */
  async recordAlert(alert: IncidentAlert): Promise<void> {
    const at = alert.at ?? this.now().toISOString();
    await this.changes.record([
      {
        id: `alert/${alert.id}`,
        at,
        kind: 'alert',
        ...(alert.instance ? { instance: alert.instance } : {}),
        ...(alert.app ? { app: alert.app } : {}),
        ...(alert.appSet ? { appSet: alert.appSet } : {}),
        ...(alert.cluster ? { cluster: alert.cluster } : {}),
        ...(alert.impactSince ? { impactAt: alert.impactSince } : {}),
        text: alert.text,
      },
    ]);
    // An alert about no app in particular (an instance, the fleet) still belongs on the open incidents.
    if (!alert.app) {
      for (const incident of await this.store.open()) {
        await this.store.append(
          incident.id,
          {
            at,
            kind: 'alert',
            source: 'alert',
            text: alert.text,
            ...(alert.impactSince ? { impactAt: alert.impactSince } : {}),
          },
          `alert/${alert.id}`,
        );
      }
    }
  }

  /** An alert's event on one incident's timeline (the alert rules found the incident covering it); once per id. */
  async recordAlertOn(incidentId: string, alert: IncidentAlert): Promise<boolean> {
    const at = alert.at ?? this.now().toISOString();
    return this.store.append(
      incidentId,
      {
        at,
        kind: 'alert',
        source: 'alert',
        text: alert.text,
        ...(alert.impactSince ? { impactAt: alert.impactSince } : {}),
      },
      `alert/${alert.id}`,
    );
  }

  /** Closed at or after `fromMs`, in the order they closed. */
  closedSince(fromMs: number): Promise<Incident[]> {
    return this.store.closedSince(fromMs);
  }

  async recent(count = 10): Promise<Incident[]> {
    return this.store.recent(count);
  }

  async open(): Promise<Incident[]> {
    return this.store.open();
  }
}

export type { Incident, IncidentEntry, IncidentState, IncidentStatus };
