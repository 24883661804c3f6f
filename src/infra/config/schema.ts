import { createRequire } from 'node:module';
import { z } from 'zod';
import { suggest } from '../../core/suggest.js';
import { isTimeZone } from '../../core/format.js';
import { ALERT_RULES, ruleMeta } from './rule-catalog.js';
import { placeholderProblems } from './check-query.js';

// zod compiles a fast parser per object schema on its first parse. rollcall parses each schema a handful of
// times per process (config once, a stored record per read), so compiling costs more than it saves, most of
// all in a one-shot `ask`. Set here, where every process's first parse is.
z.config({ jitless: true });

/** A duration written without a unit: config files and commands refuse it alike, and say how to write it. */
export function missingUnitMessage(number: string): string {
  return `${number} needs a unit: ${number}s, ${number}m or ${number}h (a bare number is not a duration)`;
}

/**
 * Durations as written by people: `90s`, `15m`, `1h30m`, `2d` (see parseDuration). A config file must say the
 * unit; code that builds a config (and a parsed config read back) passes milliseconds, which `numbers: 'ms'` takes.
 */
function durationSchemaOf(numbers: 'ms' | 'refused') {
  return z.union([z.number(), z.string()]).transform((value, ctx) => {
    if (typeof value === 'number' && numbers === 'ms' && Number.isInteger(value) && value >= 0) return value;
    const text = String(value).trim();
    const ms = parseDuration(text);
    if (ms !== undefined) return ms;
    ctx.addIssue({
      code: 'custom',
      message: /^\d+(\.\d+)?$/.test(text)
        ? missingUnitMessage(text)
        : `expected a duration such as 30s, 15m or 1h (got "${text}")`,
    });
    return z.NEVER;
  });
}
type DurationSchema = ReturnType<typeof durationSchemaOf>;

/**
 * cron-parser (and the date library under it), loaded when a config has a schedule to check: every
 * process reads the config, few have schedules, and a one-shot `rollcall ask` should not pay for loading it.
 */
function cronParser(): typeof import('cron-parser') {
  return createRequire(import.meta.url)('cron-parser') as typeof import('cron-parser');
}

/** A cron pattern (5 fields, or 6 with seconds) in an IANA time zone, checked when the config loads. */
function checkCron(schedule: { cron: string; tz: string }, ctx: z.RefinementCtx): void {
  // Intl knows the IANA zones; asking it first keeps the answer off cron-parser's message text.
  if (!isTimeZone(schedule.tz)) {
    ctx.addIssue({
      code: 'custom',
      path: ['tz'],
      message: `expected a cron pattern such as "0 3 * * *" (unknown time zone "${schedule.tz}")`,
    });
    return;
  }
  try {
    cronParser().CronExpressionParser.parse(schedule.cron, { tz: schedule.tz }).next();
  } catch (error) {
    ctx.addIssue({
      code: 'custom',
      path: ['cron'],
      message: `expected a cron pattern such as "0 3 * * *" (${(error as Error).message})`,
    });
  }
}

/** A sealed-secrets key backup of one cluster on a cron (it becomes one generic schedule). */
export const scheduleSchema = z
  .strictObject({ cluster: z.string().min(1), cron: z.string(), tz: z.string().default('UTC') })
  .superRefine(checkCron);

/**
 * A chat command run on a cron: each tick dispatches `command` on the `schedule` surface, as `as` (else the
 * scheduler itself, which the config trusts), and posts the answer to `channel`.
 */
export const commandScheduleSchema = z
  .strictObject({
    id: z.string().regex(/^[a-z0-9][a-z0-9:._-]*$/, 'expected an id of lowercase letters, digits and : . _ -'),
    cron: z.string(),
    tz: z.string().default('UTC'),
    command: z.string().min(1),
    channel: z.string().optional(),
    as: z.string().optional(),
  })
  .superRefine(checkCron);

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

export function parseDuration(text: string): number | undefined {
  const trimmed = text.trim();
  // A bare number has no unit, and guessing one (seconds? minutes?) is how 10 became 10 seconds.
  if (/^\d+$/.test(trimmed)) return /^0+$/.test(trimmed) ? 0 : undefined;
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/gy;
  let total = 0;
  let matched = 0;
  for (const m of trimmed.matchAll(re)) {
    total += Number(m[1]) * UNIT_MS[m[2]];
    matched += m[0].length;
  }
  return matched === trimmed.length && matched > 0 ? Math.round(total) : undefined;
}

const nameSchema = z
  .string()
  .min(1)
  .regex(/^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$/i, 'expected a name of letters, digits, "-", "_" or "."');

const urlSchema = z.string().refine(
  (value) => {
    try {
      const url = new URL(value);
      return url.protocol === 'http:' || url.protocol === 'https:';
    } catch {
      return false;
    }
  },
  { message: 'expected a URL' },
);

/** TLS to an upstream (Argo CD, Prometheus): a private CA, or no verification at all. */
const tlsSchema = z
  .strictObject({
    insecureSkipVerify: z.boolean().default(false),
    caFile: z.string().optional(),
  })
  .prefault({});

function instanceSchemaWith(duration: DurationSchema) {
  return z.strictObject({
    name: nameSchema,
    /** Base URL including Argo CD's --rootpath if any, e.g. https://cd.example.com/argocd */
    url: urlSchema,
    token: z.string().min(1, 'expected a token (use ${ENV_VAR} to read it from the environment)'),
    /** Where links point; defaults to url. */
    uiUrl: urlSchema.optional(),
    tls: tlsSchema,
    timeout: duration.default(15_000),
    /** Mutating calls per instance, shared by every worker (BullMQ limiter). */
    rateLimit: z
      .strictObject({ max: z.number().int().positive().default(20), per: duration.default(1000) })
      .prefault({}),
    /** Namespace of Application/ApplicationSet objects when changed through the Kubernetes API. */
    namespace: z.string().default('argocd'),
    /** Kubernetes cluster (from kube.clusters) that hosts this Argo CD, for appset changes via the Kubernetes API. */
    kubeCluster: z.string().optional(),
    /** The Prometheus that sees this instance's clusters, when it is not the top-level one. */
    prometheus: prometheusSchemaWith(duration).optional(),
  });
}

/** A Prometheus the metric checks query: one for every instance (top level) or one per instance. */
function prometheusSchemaWith(duration: DurationSchema) {
  return z
    .strictObject({
      /** Base URL of Prometheus' HTTP API, including a path prefix if any, e.g. https://prom.example.com */
      url: urlSchema,
      /** Where verdict links point (Prometheus' /graph); defaults to url. */
      uiUrl: urlSchema.optional(),
      /** Bearer token (use ${ENV_VAR}). */
      token: z.string().min(1).optional(),
      basicAuth: z.strictObject({ username: z.string().min(1), password: z.string().min(1) }).optional(),
      tls: tlsSchema,
      timeout: duration.default(10_000),
      /**
       * How often this Prometheus scrapes the apps: a wave's checks are first read one interval after it turned
       * Healthy (the first sample of the new revision), and a bake reads them once an interval.
       */
      scrapeInterval: duration.default(15_000),
    })
    .refine((p) => !(p.token && p.basicAuth), {
      message: 'expected token or basicAuth, not both',
      path: ['token'],
    });
}

/**
 * A named metric check: a PromQL query with the app's identity as placeholders ({{app}}, {{cluster}},
 * {{namespace}}, {{instance}}, {{project}}, {{window}}, {{labels.KEY}}), judged against one threshold.
 */
function checkSchemaWith(duration: DurationSchema) {
  return z
    .strictObject({
      query: z
        .string()
        .min(1, 'expected a PromQL query')
        .superRefine((query, ctx) => {
          for (const message of placeholderProblems(query)) ctx.addIssue({ code: 'custom', message });
        }),
      /** The check fails when the value is above this (an error rate, a latency). */
      failAbove: z.number().optional(),
      /** The check fails when the value is below this (a success rate, a request count). */
      failBelow: z.number().optional(),
      /** The range the query looks back over ({{window}}), and how long a bake's query_range reaches. */
      window: duration
        .refine((ms) => ms >= 1000, 'expected a window of at least 1s (a shorter one holds no scraped sample)')
        .default(60_000),
      /** What an empty answer means: no data is not zero, so by default it fails. */
      noData: z.enum(['fail', 'pass', 'inconclusive']).default('fail'),
      description: z.string().optional(),
    })
    .refine((c) => (c.failAbove === undefined) !== (c.failBelow === undefined), {
      message: 'expected exactly one threshold: failAbove (e.g. an error rate) or failBelow (e.g. a success rate)',
    });
}

export const kubeClusterSchema = z
  .strictObject({
    name: nameSchema,
    kubeconfig: z.string().optional(),
    context: z.string().optional(),
    inCluster: z.boolean().default(false),
  })
  .refine((c) => c.inCluster || c.kubeconfig, {
    message: 'expected kubeconfig (with optional context) or inCluster: true',
  });

export const slackSchema = z
  .strictObject({
    mode: z.enum(['socket', 'http']).default('http'),
    botToken: z.string().min(1),
    appToken: z.string().optional(),
    signingSecret: z.string().optional(),
    port: z.number().int().min(0).max(65535).default(3000),
    /** Web API base, e.g. a fake for tests: http://127.0.0.1:4000/api/ */
    apiUrl: urlSchema.optional(),
    /** The channels the bot answers in; empty = everywhere. */
    channels: z.array(z.string()).default([]),
    command: z.string().default('/argo'),
  })
  .superRefine((s, ctx) => {
    if (s.mode === 'socket' && !s.appToken)
      ctx.addIssue({
        code: 'custom',
        path: ['appToken'],
        message: 'socket mode needs an app-level token (xapp-...) with connections:write',
      });
    if (s.mode === 'http' && !s.signingSecret)
      ctx.addIssue({
        code: 'custom',
        path: ['signingSecret'],
        message: 'http mode needs the signing secret to verify requests',
      });
  });

const principalList = z.array(z.string()).default([]);

export const accessSchema = z
  .strictObject({
    /** Named groups of Slack user ids, referenced as `group:<name>`. */
    groups: z.record(z.string(), z.array(z.string())).default({}),
    /** Who may run mutating commands when a runbook says nothing: user ids, `group:x`, or `*`. */
    operators: principalList,
    /** Always allowed, and may approve anything. */
    admins: principalList,
    /** Who may use read-only commands; empty = everyone in allowed channels. */
    readers: principalList,
    terminal: z
      .strictObject({
        /**
         * `rollcall ask --as USER` acts as someone else. Off by default: otherwise one person could request
         * a run as one user and approve it as another. The simulator's written config turns it on.
         */
        allowActAs: z.boolean().default(false),
      })
      .prefault({}),
  })
  .prefault({});

export const sealedSecretsSchema = z
  .strictObject({
    controller: z
      .strictObject({
        namespace: z.string().default('kube-system'),
        name: z.string().default('sealed-secrets-controller'),
        podSelector: z.string().default('name=sealed-secrets-controller'),
      })
      .prefault({}),
    backup: z.strictObject({ cluster: z.string(), namespace: z.string().default('sealed-secrets-backup') }).optional(),
    /** Per-cluster backup schedules (cron). */
    schedules: z.array(scheduleSchema).default([]),
  })
  .prefault({});

/**
 * A scheduled digest: posted to `channel` at every tick of `cron` in `tz`, covering the apps `selector`
 * picks (all when absent).
 */
export const digestSchema = z
  .strictObject({
    name: nameSchema,
    channel: z.string().min(1, 'expected a Slack channel id such as C0123456789'),
    cron: z.string(),
    tz: z.string().default('UTC'),
    selector: z.string().optional(),
  })
  .superRefine(checkCron);

export { ALERT_RULES, type AlertRuleName } from './rule-catalog.js';

/** Why `name` is not a key of `alerts.rules`: the registry's alerting rules, and the one meant. */
function unknownAlertRule(name: string): string {
  const meta = ruleMeta(name);
  if (meta) return `rule "${name}" raises no alerts (it is a diagnose finding); alert rules: ${ALERT_RULES.join(', ')}`;
  const near = suggest(name, ALERT_RULES, 1);
  return `unknown alert rule "${name}"${near.length ? ` (did you mean "${near[0]}"?)` : ''} (rules: ${ALERT_RULES.join(', ')})`;
}

/** The `alerts` section, durations read by `duration`. */
function alertsSchemaWith(duration: DurationSchema) {
  /** Per rule: off switch, own channel, and the rule's threshold (`after`) or window where it has one. */
  const alertRuleSchema = z.strictObject({
    enabled: z.boolean().default(true),
    /** Where this rule's alerts go; defaults to alerts.channel. */
    channel: z.string().optional(),
    /**
     * How long the condition must last before it is a problem: stuck-step (default alerts.stuckAfter),
     * app-degraded (Degraded or Missing this long; 5m), out-of-sync (1h), instance-unreachable (2m),
     * key-backup-stale (no backup newer than this; 26h).
     */
    after: duration.optional(),
    /** degraded-after-sync: an app turning Degraded this long after a successful sync still counts. @defaultValue 30m */
    window: duration.optional(),
  });

  return z
    .strictObject({
      /** Where alerts go when their rule names no channel. */
      channel: z.string().optional(),
      /** An app Pending or Progressing in its RollingSync step longer than this is stuck. */
      stuckAfter: duration.default(15 * 60_000),
      /**
       * A condition must hold this long before its alert fires (and a pending one that clears never posts).
       * Rules with their own threshold (stuckAfter, `after`) count it on top. @defaultValue 30s
       */
      holdDown: duration.default(30_000),
      /** A firing alert resolves once its condition has been gone this long; back sooner, it is flapping. @defaultValue 1m */
      resolveAfter: duration.default(60_000),
      /**
       * How often workers evaluate every rule, besides on fleet events (a stuck step produces none). One
       * sweep of the 10,000-app fleet costs tens of milliseconds (bench/alerts.ts). @defaultValue 15s
       */
      sweepEvery: duration.default(15_000),
      /** How long a resolved alert stays listed by `alerts`. @defaultValue 24h */
      keepResolved: duration.default(86_400_000),
      rules: z
        .record(
          // Checked as a key, so a misspelt rule is reported even when other settings are wrong too.
          z.string().refine((name) => (ALERT_RULES as readonly string[]).includes(name), {
            error: (issue) => unknownAlertRule(String(issue.input)),
          }),
          alertRuleSchema,
        )
        .default({}),
    })
    .superRefine((alerts, ctx) => {
      if (alerts.sweepEvery < 1000)
        ctx.addIssue({ code: 'custom', path: ['sweepEvery'], message: 'expected at least 1s between sweeps' });
    })
    .prefault({});
}

/** Redis Cluster's hash tag of a key: the text between its first `{` and the next `}`, when that is not empty. */
export function hashTag(key: string): string | undefined {
  const open = key.indexOf('{');
  if (open < 0) return undefined;
  const close = key.indexOf('}', open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : undefined;
}

/** `redis+cluster://...` and `rediss+cluster://...` name a Redis Cluster. */
export function isClusterUrl(url: string): boolean {
  return /^rediss?\+cluster:\/\//i.test(url.trim());
}

/**
 * Why `prefix` cannot be used on the Redis at `url`, or undefined. On a Cluster every key rollcall writes starts
 * with the prefix, so a hash tag in the prefix puts them all in one slot: its Lua scripts, transactions and BullMQ
 * queues each touch several keys at once, which a Cluster refuses (CROSSSLOT) unless they share a slot.
 */
export function clusterPrefixProblem(url: string, prefix: string): string | undefined {
  if (!isClusterUrl(url) || hashTag(prefix) !== undefined) return undefined;
  const bare = prefix.replace(/[{}]/g, '').replace(/:+$/, '') || 'rollcall';
  return (
    `redis.prefix "${prefix}" has no hash tag, and Redis Cluster needs one: rollcall's scripts, transactions and queues each use several keys at once, ` +
    `which a Cluster allows only when they hash to one slot. Put the prefix in braces, e.g. prefix: "{${bare}}"`
  );
}

/** The config, durations read by `duration`. */
function configSchemaWith(duration: DurationSchema) {
  return z
    .strictObject({
      instances: z.array(instanceSchemaWith(duration)).min(1, 'expected at least one Argo CD instance'),
      kube: z.strictObject({ clusters: z.array(kubeClusterSchema).default([]) }).prefault({}),
      slack: slackSchema.optional(),
      redis: z
        .strictObject({ url: z.string().default('redis://127.0.0.1:6379'), prefix: z.string().default('rollcall') })
        .superRefine((redis, ctx) => {
          const problem = clusterPrefixProblem(redis.url, redis.prefix);
          if (problem) ctx.addIssue({ code: 'custom', path: ['prefix'], message: problem });
        })
        .prefault({}),
      access: accessSchema,
      /** Absolute times ("3 Dec, 14:19 CET") are shown in this IANA time zone, after the relative age. */
      display: z
        .strictObject({
          timeZone: z
            .string()
            .default('UTC')
            .refine(isTimeZone, 'expected an IANA time zone such as UTC or Europe/Berlin'),
        })
        .prefault({}),
      /** The Prometheus metric checks query unless an instance names its own. */
      prometheus: prometheusSchemaWith(duration).optional(),
      /** Named metric checks, used by `sync check=NAME`, watches and guards. */
      checks: z.record(nameSchema, checkSchemaWith(duration)).default({}),
      /** How often guards (`guard APPSET check=…`) evaluate their checks: about one scrape interval. */
      guards: z.strictObject({ every: duration.default(15_000) }).prefault({}),
      /**
       * How long the live reads of one answer (a Get, a diff, logs) may take together before the answer is given from
       * the mirror, saying so and how old it is; a command that only a live read can answer fails as a timeout.
       */
      answers: z.strictObject({ budget: duration.default(2500) }).prefault({}),
      diagnose: z.strictObject({ stuckAfter: duration.default(15 * 60_000) }).prefault({}),
      /**
       * Blast radius of one sync wave: more than `maxFleetShare` of the fleet, or more apps than the
       * fleet's largest cluster holds, in one wave asks for waves, a canary or `confirm=<count>`.
       * Syncs of `freeUpTo` apps or fewer are never held.
       */
      syncGuard: z
        .strictObject({
          maxFleetShare: z.number().gt(0).max(1).default(0.25),
          freeUpTo: z.number().int().min(0).default(10),
        })
        .prefault({}),
      alerts: alertsSchemaWith(duration),
      digests: z.array(digestSchema).default([]),
      schedules: z.array(commandScheduleSchema).default([]),
      /** The fleet change log: how long it keeps changes (Redis Streams, trimmed by time). */
      changes: z.strictObject({ retention: duration.default(7 * 86_400_000) }).prefault({}),
      incidents: z
        .strictObject({
          /** How far before a declaration the timeline and impactStart reach. */
          lookback: duration.default(60 * 60_000),
          /** Every scoped app Synced and Healthy this long: rollcall suggests `status mitigated`. */
          mitigatedAfter: duration.default(5 * 60_000),
          /** Slack: `incident start` creates #<channelPrefix>-<n>-<slug> and invites the declarer. */
          createChannel: z.boolean().default(false),
          channelPrefix: z
            .string()
            .regex(/^[a-z0-9][a-z0-9_-]*$/, 'expected lower-case letters, digits, "-" or "_"')
            .default('inc'),
        })
        .prefault({}),
      sealedSecrets: sealedSecretsSchema,
      runbooksDir: z.string().default('runbooks'),
      http: z.strictObject({ port: z.number().int().min(0).max(65535).default(8080) }).prefault({}),
      /**
       * On SIGTERM `rollcall start` finishes what it can within `grace`, then exits whatever Redis or Argo CD
       * do: a step it could not finish keeps its job, which another worker takes once the job's lock expires.
       * Keep it below the pod's terminationGracePeriodSeconds.
       */
      shutdown: z.strictObject({ grace: duration.default(10_000) }).prefault({}),
    })
    .superRefine(checkUniqueNames)
    .superRefine(checkPrometheusForChecks);
}

/** Checks are evaluated through a Prometheus: some instance, or the top level, must name one. */
function checkPrometheusForChecks(
  c: { prometheus?: unknown; checks: Record<string, unknown>; instances: { name: string; prometheus?: unknown }[] },
  ctx: z.RefinementCtx,
): void {
  const names = Object.keys(c.checks);
  if (!names.length || c.prometheus || c.instances.every((i) => i.prometheus)) return;
  const without = c.instances.filter((i) => !i.prometheus).map((i) => i.name);
  ctx.addIssue({
    code: 'custom',
    path: ['prometheus'],
    message: `checks (${names.join(', ')}) need a Prometheus: set prometheus.url${c.instances.some((i) => i.prometheus) ? ` (instances without their own: ${without.join(', ')})` : ''}`,
  });
}

/** Names the config refers to things by are unique: instances, schedule ids, digests. */
function checkUniqueNames(
  c: { instances: { name: string }[]; schedules: { id: string }[]; digests: { name: string }[] },
  ctx: z.RefinementCtx,
): void {
  const seen = new Set<string>();
  c.instances.forEach((instance, i) => {
    if (seen.has(instance.name))
      ctx.addIssue({
        code: 'custom',
        path: ['instances', i, 'name'],
        message: `duplicate instance name "${instance.name}"`,
      });
    seen.add(instance.name);
  });
  const ids = new Set<string>();
  c.schedules.forEach((s, i) => {
    if (ids.has(s.id))
      ctx.addIssue({ code: 'custom', path: ['schedules', i, 'id'], message: `duplicate schedule id "${s.id}"` });
    ids.add(s.id);
  });
  const digests = new Set<string>();
  c.digests.forEach((digest, i) => {
    if (digests.has(digest.name))
      ctx.addIssue({ code: 'custom', path: ['digests', i, 'name'], message: `duplicate digest name "${digest.name}"` });
    digests.add(digest.name);
  });
}

const MILLISECONDS = durationSchemaOf('ms');
export const instanceSchema = instanceSchemaWith(MILLISECONDS);
export const alertsSchema = alertsSchemaWith(MILLISECONDS);
/** The config as code builds it (tests, a parsed config read back): durations may be milliseconds. */
export const configSchema = configSchemaWith(MILLISECONDS);

let fileSchema: typeof configSchema | undefined;
/**
 * The config as a file says it: every duration with its unit, as commands take them (`stuckAfter: 15` may mean
 * seconds or minutes to its writer; read as milliseconds it is a 15 ms threshold). Built when first used.
 */
export function configFileSchema(): typeof configSchema {
  return (fileSchema ??= configSchemaWith(durationSchemaOf('refused')));
}

/**
 * The keys the object schema at `path` takes (through defaults, optionals, transforms, list items and record
 * values), for "did you mean" on an unknown key; none where no object is.
 */
export function keysAt(schema: z.ZodType, path: readonly PropertyKey[]): string[] {
  const unwrap = (node: unknown): unknown => {
    for (;;) {
      if (
        node instanceof z.ZodDefault ||
        node instanceof z.ZodPrefault ||
        node instanceof z.ZodOptional ||
        node instanceof z.ZodNullable
      )
        node = node.unwrap();
      else if (node instanceof z.ZodPipe) node = node.in;
      else return node;
    }
  };
  let node = unwrap(schema);
  for (const segment of path) {
    if (node instanceof z.ZodObject) node = (node.shape as Record<PropertyKey, unknown>)[segment];
    else if (node instanceof z.ZodArray) node = node.element;
    else if (node instanceof z.ZodRecord) node = node.valueType;
    else return [];
    node = unwrap(node);
  }
  return node instanceof z.ZodObject ? Object.keys(node.shape) : [];
}

export type RollcallConfig = z.output<typeof configSchema>;
export type InstanceConfig = z.output<typeof instanceSchema>;
export type PrometheusConfig = NonNullable<RollcallConfig['prometheus']>;
export type CheckConfig = RollcallConfig['checks'][string];
export type SlackConfig = z.output<typeof slackSchema>;
export type KubeClusterConfig = z.output<typeof kubeClusterSchema>;
export type AccessConfig = z.output<typeof accessSchema>;
export type CommandScheduleConfig = z.output<typeof commandScheduleSchema>;
export type AlertsConfig = z.output<typeof alertsSchema>;
export type DigestConfig = z.output<typeof digestSchema>;
