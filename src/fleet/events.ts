import type { FleetApp, FleetAppSet } from './app.js';

/**
 * What the fleet mirror saw change, typed so that everything reacting to the fleet (bulk-sync's
 * wait for health, the change recorder, alert rules) reads the same facts without reaching into
 * the mirror. The initial load of an instance is not an event: it is the starting state, and a
 * late subscriber reads it from the FleetView itself.
 */
export type FleetEvent =
  | { kind: 'app-added'; instance: string; at: string; app: FleetApp }
  | { kind: 'app-changed'; instance: string; at: string; app: FleetApp; previous: FleetApp }
  | { kind: 'app-removed'; instance: string; at: string; app: FleetApp }
  | { kind: 'appset-added'; instance: string; at: string; appSet: FleetAppSet }
  | { kind: 'appset-changed'; instance: string; at: string; appSet: FleetAppSet; previous: FleetAppSet }
  | { kind: 'appset-removed'; instance: string; at: string; appSet: FleetAppSet }
  /** The instance's list is loaded and both watch streams are connected (first time or again). */
  | { kind: 'instance-connected'; instance: string; at: string }
  /** A stream of the instance dropped or its list failed: answers about it may be stale until connected again. */
  | { kind: 'instance-lost'; instance: string; at: string; error?: string };

export type FleetEventKind = FleetEvent['kind'];
export type FleetListener = (event: FleetEvent) => void;

/** How well the fleet view follows one Argo CD instance. */
export interface InstanceHealth {
  instance: string;
  /** Initial list loaded, the last list read and both streams connected. */
  synced: boolean;
  lastEventAt?: string;
  error?: string;
  /** The error's code (`argocd_bad_response`, `argocd_network`, ...), when it has one. */
  errorCode?: string;
  /** Not in sync but holding data from before: when that data was last known current. */
  dataAsOf?: string;
  /** What the last lists skipped of Argo CD's answers, in plain words (a null item). */
  warnings?: string[];
}

/**
 * The listener set behind FleetView.subscribe. A listener that throws is reported, not allowed to
 * stop the others: one broken rule must not blind the recorder.
 */
export class FleetFeed {
  private readonly listeners = new Set<FleetListener>();

  constructor(private readonly onListenerError: (error: unknown, event: FleetEvent) => void = () => undefined) {}

  subscribe(listener: FleetListener): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  get size(): number {
    return this.listeners.size;
  }

  publish(event: FleetEvent): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(event);
      } catch (error) {
        this.onListenerError(error, event);
      }
    }
  }
}
