/** What `diagnose` says about one problem: the rule behind it, the Argo CD behaviour, and the fix. */
export type Severity = 'critical' | 'warning' | 'info';

export interface Finding {
  /** Stable rule id (one of the registry's). */
  rule: string;
  severity: Severity;
  /** What is wrong here, in a sentence or two: names the step, the key, the apps. */
  message: string;
  /** One line per app the finding is about, saying what is wrong with that one (a stuck app's operation and health). */
  details?: string[];
  /** The Argo CD behaviour behind it. */
  why: string;
  /** What to do about it, concretely. */
  fix: string;
  step?: number;
  apps?: string[];
  appSet?: string;
  instance?: string;
}
