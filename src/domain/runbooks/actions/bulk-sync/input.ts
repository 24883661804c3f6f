import { z } from 'zod';

export const GATES = ['healthy', 'synced', 'none'] as const;
export type Gate = (typeof GATES)[number];

/** What a failed wave (an app failed or timed out, its bake or a verifier failed) does to the run. */
export const ON_FAILURE = ['pause', 'abort', 'continue', 'rollback'] as const;
export type OnFailure = (typeof ON_FAILURE)[number];

/** What a regression found by the watch after the last wave does: roll every synced app back, pause, or say it. */
export const ON_REGRESSION = ['rollback', 'pause', 'notify'] as const;
export type OnRegression = (typeof ON_REGRESSION)[number];

export const bulkSyncInput = z.object({
  selector: z.string().min(1, 'expected a selector such as auth-config-*'),
  prune: z.boolean().default(false),
  dryRun: z.boolean().default(false),
  revision: z.string().optional(),
  /** Argo CD's force means delete and recreate; rollcall does not offer it and refuses the word (see preview). */
  force: z.boolean().default(false),
  /** Also sync apps already Synced and Healthy (what rollcall once called force). */
  includeSynced: z.boolean().default(false),
  /** The app count typed back to confirm a sync wider than the blast-radius guard allows in one wave. */
  confirm: z.number().int().optional(),
  concurrency: z
    .number()
    .int()
    .min(1, 'concurrency must be at least 1 (how many apps sync at once)')
    .max(500, 'concurrency is at most 500')
    .default(10),
  /** `;`-separated app-name globs or label selectors, each with an optional `@N`/`@N%` (bulk-sync/wave-spec.ts). */
  waves: z.string().optional(),
  canary: z.number().int().min(0, 'canary is how many apps go first: 0 or more').default(0),
  gate: z.enum(GATES).default('healthy'),
  waveTimeout: z.number().int().positive('waveTimeout must be longer than 0, e.g. 10m').default(600_000),
  /**
   * How long (ms) a wave stays under watch after it passed its gate, before the next starts: its wave
   * verifiers (bulk-sync/verify.ts) must pass throughout. 0 = no bake.
   * @defaultValue 0
   */
  bake: z.number().int().min(0, 'bake is a duration such as 30s or 5m').default(0),
  onFailure: z.enum(ON_FAILURE).default('pause'),
  /**
   * Metric checks (config `checks`) that verify each wave, `,`-separated: each a wave verifier of its own
   * (bulk-sync/check-verifier.ts), judged once a scrape interval after the wave, and throughout a bake.
   */
  check: z
    .string()
    .regex(/^\s*[^,\s]+\s*(,\s*[^,\s]+\s*)*$/, 'check is one or more check names separated by ",", e.g. error-rate')
    .optional(),
  /**
   * How long (ms) every app the run synced stays under watch (health and every check) after the last wave.
   * 0 = no watch.
   * @defaultValue 0
   */
  watch: z.number().int().min(0, 'watch is a duration such as 10m').default(0),
  onRegression: z.enum(ON_REGRESSION).default('notify'),
});
export type BulkSyncInput = z.output<typeof bulkSyncInput>;
