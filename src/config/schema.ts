import { CronExpressionParser } from 'cron-parser';
import { z } from 'zod';

/** Durations as written by people: `90s`, `15m`, `1h30m`, `2d`, or a number of milliseconds. */
export const durationSchema = z.union([z.number().int().nonnegative(), z.string()]).transform((value, ctx) => {
  if (typeof value === 'number') return value;
  const ms = parseDuration(value);
  if (ms === undefined) {
    ctx.addIssue({ code: 'custom', message: `expected a duration such as 30s, 15m or 1h (got "${value}")${/^\d+$/.test(value.trim()) ? `: add a unit, e.g. ${value.trim()}m or ${value.trim()}s` : ''}` });
    return z.NEVER;
  }
  return ms;
});

/** A cron pattern (5 fields, or 6 with seconds) in an IANA time zone, checked when the config loads. */
export const scheduleSchema = z
  .object({ cluster: z.string().min(1), cron: z.string(), tz: z.string().default('UTC') })
  .superRefine((schedule, ctx) => {
    try {
      CronExpressionParser.parse(schedule.cron, { tz: schedule.tz }).next();
    } catch (error) {
      const message = (error as Error).message.includes('Invalid Date') ? `unknown time zone "${schedule.tz}"` : (error as Error).message;
      ctx.addIssue({ code: 'custom', path: [message.startsWith('unknown time zone') ? 'tz' : 'cron'], message: `expected a cron pattern such as "0 3 * * *" (${message})` });
    }
  });

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

export const instanceSchema = z.object({
  name: nameSchema,
  /** Base URL including Argo CD's --rootpath if any, e.g. https://cd.example.com/argocd */
  url: urlSchema,
  token: z.string().min(1, 'expected a token (use ${ENV_VAR} to read it from the environment)'),
  /** Where links point; defaults to url. */
  uiUrl: urlSchema.optional(),
  tls: z
    .object({
      insecureSkipVerify: z.boolean().default(false),
      caFile: z.string().optional(),
    })
    .prefault({}),
  timeout: durationSchema.default(15_000),
  /** Mutating calls per instance, shared by every worker (BullMQ limiter). */
  rateLimit: z
    .object({ max: z.number().int().positive().default(20), per: durationSchema.default(1000) })
    .prefault({}),
  /** Namespace of Application/ApplicationSet objects when changed through the Kubernetes API. */
  namespace: z.string().default('argocd'),
  /** Kubernetes cluster (from kube.clusters) that hosts this Argo CD, for appset changes via the Kubernetes API. */
  kubeCluster: z.string().optional(),
});

export const kubeClusterSchema = z
  .object({
    name: nameSchema,
    kubeconfig: z.string().optional(),
    context: z.string().optional(),
    inCluster: z.boolean().default(false),
  })
  .refine((c) => c.inCluster || c.kubeconfig, { message: 'expected kubeconfig (with optional context) or inCluster: true' });

export const slackSchema = z
  .object({
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
      ctx.addIssue({ code: 'custom', path: ['appToken'], message: 'socket mode needs an app-level token (xapp-...) with connections:write' });
    if (s.mode === 'http' && !s.signingSecret)
      ctx.addIssue({ code: 'custom', path: ['signingSecret'], message: 'http mode needs the signing secret to verify requests' });
  });

const principalList = z.array(z.string()).default([]);

export const accessSchema = z
  .object({
    /** Named groups of Slack user ids, referenced as `group:<name>`. */
    groups: z.record(z.string(), z.array(z.string())).default({}),
    /** Who may run mutating commands when a runbook says nothing: user ids, `group:x`, or `*`. */
    operators: principalList,
    /** Always allowed, and may approve anything. */
    admins: principalList,
    /** Who may use read-only commands; empty = everyone in allowed channels. */
    readers: principalList,
    terminal: z
      .object({
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
  .object({
    controller: z
      .object({
        namespace: z.string().default('kube-system'),
        name: z.string().default('sealed-secrets-controller'),
        podSelector: z.string().default('name=sealed-secrets-controller'),
      })
      .prefault({}),
    backup: z.object({ cluster: z.string(), namespace: z.string().default('sealed-secrets-backup') }).optional(),
    /** Per-cluster backup schedules (cron). */
    schedules: z.array(scheduleSchema).default([]),
  })
  .prefault({});

export const digestSchema = z.object({
  name: nameSchema,
  channel: z.string(),
  cron: z.string(),
  tz: z.string().default('UTC'),
  selector: z.string().optional(),
});

export const configSchema = z
  .object({
    instances: z.array(instanceSchema).min(1, 'expected at least one Argo CD instance'),
    kube: z.object({ clusters: z.array(kubeClusterSchema).default([]) }).prefault({}),
    slack: slackSchema.optional(),
    redis: z
      .object({ url: z.string().default('redis://127.0.0.1:6379'), prefix: z.string().default('rollcall') })
      .prefault({}),
    access: accessSchema,
    /** Absolute times ("3 Dec, 14:19 CET") are shown in this IANA time zone, after the relative age. */
    display: z
      .object({
        timeZone: z
          .string()
          .default('UTC')
          .refine((tz) => {
            try {
              new Intl.DateTimeFormat('en-GB', { timeZone: tz });
              return true;
            } catch {
              return false;
            }
          }, 'expected an IANA time zone such as UTC or Europe/Berlin'),
      })
      .prefault({}),
    diagnose: z.object({ stuckAfter: durationSchema.default(15 * 60_000) }).prefault({}),
    /**
     * Blast radius of one sync wave: more than `maxFleetShare` of the fleet, or more apps than the
     * fleet's largest cluster holds, in one wave asks for waves, a canary or `confirm=<count>`.
     * Syncs of `freeUpTo` apps or fewer are never held.
     */
    syncGuard: z
      .object({ maxFleetShare: z.number().gt(0).max(1).default(0.25), freeUpTo: z.number().int().min(0).default(10) })
      .prefault({}),
    alerts: z.object({ channel: z.string().optional(), stuckAfter: durationSchema.default(15 * 60_000) }).prefault({}),
    digests: z.array(digestSchema).default([]),
    sealedSecrets: sealedSecretsSchema,
    runbooksDir: z.string().default('runbooks'),
    http: z.object({ port: z.number().int().min(0).max(65535).default(8080) }).prefault({}),
    /**
     * On SIGTERM `rollcall start` finishes what it can within `grace`, then exits whatever Redis or Argo CD
     * do: a step it could not finish keeps its job, which another worker takes once the job's lock expires.
     * Keep it below the pod's terminationGracePeriodSeconds.
     */
    shutdown: z.object({ grace: durationSchema.default(10_000) }).prefault({}),
  })
  .superRefine((c, ctx) => {
    const seen = new Set<string>();
    c.instances.forEach((instance, i) => {
      if (seen.has(instance.name))
        ctx.addIssue({ code: 'custom', path: ['instances', i, 'name'], message: `duplicate instance name "${instance.name}"` });
      seen.add(instance.name);
    });
  });

export type RollcallConfig = z.output<typeof configSchema>;
export type InstanceConfig = z.output<typeof instanceSchema>;
export type SlackConfig = z.output<typeof slackSchema>;
export type KubeClusterConfig = z.output<typeof kubeClusterSchema>;
export type AccessConfig = z.output<typeof accessSchema>;
