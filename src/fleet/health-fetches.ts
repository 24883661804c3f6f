import type { ArgoApi } from '../infra/argocd/api.js';
import type { Application } from '../infra/argocd/types.js';
import { isProblem, syncOf } from './status.js';

/**
 * Gets in flight at once. Each waits on a round trip to the API server, so how many run at once sets how long a
 * start-up waits for them: against a simulator answering every request 20 ms late, 4 at once took 3.7 s to load
 * 10,000 apps (331 of them fetched), 8 at once 2.4 s. Still few enough not to crowd an API server the UI also uses.
 */
export const HEALTH_FETCHES_AT_ONCE = 8;

const HEALTHY = new Set(['Healthy', 'Suspended']);

/**
 * Whether an app as listed is a problem without its resources' health: Argo CD's List leaves that out since v3.0
 * (a Get, a watch event fills it in), and "Degraded" without the crash-loop message is no answer mid-incident.
 * Only problems (`isProblem`) are fetched: their reasons are what answers quote. An app Progressing and Synced is
 * none, and nothing reads its resources' messages: in the simulated 10,000-app fleet it was 148 of 331 fetches.
 */
export function lacksResourceHealth(app: Application): boolean {
  const health = app.status?.health?.status;
  if (!health || HEALTHY.has(health) || !isProblem(syncOf(app), health)) return false;
  const resources = app.status?.resources ?? [];
  return resources.length > 0 && resources.every((r) => r.health === undefined);
}

export interface HealthFetchesOptions {
  /** At most this many apps are fetched. */
  limit: number;
  /** Whether to stop fetching (the mirror stopped). */
  stopped: () => boolean;
  /** A fetch that failed: the app keeps what the List said. */
  onError: (app: Application, error: unknown) => void;
}

/**
 * The unhealthy apps of one list, fetched one by one for their resources' health, a few at a time. Apps are offered
 * as the list arrives, so against a remote Argo CD the fetches overlap the list's transfer instead of following it;
 * what comes back before the list is in the mirror waits for it (`applyWith`). Each app is fetched once however
 * often it is offered.
 */
export class HealthFetches {
  private readonly queue: Application[] = [];
  private readonly offered = new Set<string>();
  private readonly early: Application[] = [];
  private apply: ((full: Application) => void) | undefined;
  private running = 0;
  private closed = false;
  private cancelled = false;
  private resolveDone!: () => void;
  private readonly done = new Promise<void>((resolve) => (this.resolveDone = resolve));

  constructor(
    private readonly api: ArgoApi,
    private readonly opts: HealthFetchesOptions,
  ) {}

  /** An app as listed: fetched if it lacks resource health, unless it was offered before or the limit is reached. */
  offer(app: Application): void {
    if (this.closed || this.cancelled || !lacksResourceHealth(app)) return;
    const key = `${app.metadata.namespace ?? ''}/${app.metadata.name}`;
    if (this.offered.has(key) || this.offered.size >= this.opts.limit) return;
    this.offered.add(key);
    this.queue.push(app);
    this.pump();
  }

  /** Where fetched apps go from now on; those fetched before go there at once. */
  applyWith(apply: (full: Application) => void): void {
    this.apply = apply;
    for (const full of this.early.splice(0)) apply(full);
  }

  /** No more offers. Resolves once every fetch has ended. */
  close(): Promise<void> {
    this.closed = true;
    this.settle();
    return this.done;
  }

  /** The list failed: nothing more is fetched, and nothing fetched is applied. */
  cancel(): void {
    this.cancelled = true;
    this.queue.length = 0;
    this.early.length = 0;
    this.settle();
  }

  private pump(): void {
    while (this.running < HEALTH_FETCHES_AT_ONCE && this.queue.length > 0 && !this.cancelled && !this.opts.stopped()) {
      const listed = this.queue.shift()!;
      this.running++;
      void this.fetch(listed).finally(() => {
        this.running--;
        this.pump();
        this.settle();
      });
    }
  }

  private async fetch(listed: Application): Promise<void> {
    try {
      const full = await this.api.getApplication({
        name: listed.metadata.name,
        appNamespace: listed.metadata.namespace,
        project: listed.spec?.project,
      });
      if (this.cancelled) return;
      if (this.apply) this.apply(full);
      else this.early.push(full);
    } catch (error) {
      this.opts.onError(listed, error);
    }
  }

  private settle(): void {
    const drained = this.queue.length === 0 || this.cancelled || this.opts.stopped();
    if ((this.closed || this.cancelled) && this.running === 0 && drained) this.resolveDone();
  }
}
