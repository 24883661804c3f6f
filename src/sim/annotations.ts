import type { Application } from '../infra/argocd/types.js';
import { parseGoDuration } from './clock.js';

/** Annotations a fixture can set to tune one app or appset in the simulator. */
export const SIM_ANNOTATIONS = {
  /** Go duration or milliseconds: how long this app's sync runs. */
  syncDuration: 'sim.rollcall.io/sync-duration',
  /** Go duration or milliseconds: how long this app stays Progressing after a sync. */
  healthSettle: 'sim.rollcall.io/health-settle',
  /** On an app: every sync fails with this message (as faults.failApp). */
  failSync: 'sim.rollcall.io/fail-sync',
  /**
   * `true` on an app: its workload crash-loops after a sync (as faults.crashLoop). On a ReplicaSet of a simulated
   * cluster: its pods never become available (a canary that cannot progress).
   */
  crashLoop: 'sim.rollcall.io/crash-loop',
  /** `disabled` on an ApplicationSet: behave as if the appset controller ran without --enable-progressive-syncs. */
  progressiveSyncs: 'sim.rollcall.io/progressive-syncs',
  /**
   * On an ApplicationSet: JSON `[{"name", "labels"?, "error"}]`, Applications its generators produce that
   * fail validation (so are never created): they still count in the RollingSync step lists.
   */
  generatedInvalid: 'sim.rollcall.io/generated-invalid',
} as const;

/** A duration annotation on the app, in ms: bare digits are milliseconds, anything else a Go duration. */
export function durationAnnotation(app: Application, key: string): number | undefined {
  const v = app.metadata.annotations?.[key];
  if (!v) return undefined;
  return /^\d+$/.test(v) ? Number(v) : parseGoDuration(v);
}
