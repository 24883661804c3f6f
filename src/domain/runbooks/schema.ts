import { z } from 'zod';

/** The name of a runbook, a param or a step id: what people type after `/argo run`. */
const identifier = z
  .string()
  .regex(/^[a-z][a-z0-9_-]*$/i, 'expected a name of letters, digits, "-" or "_" starting with a letter');

export const PARAM_TYPES = ['string', 'int', 'bool', 'duration', 'selector', 'enum'] as const;
export type ParamType = (typeof PARAM_TYPES)[number];

const scalar = z.union([z.string(), z.number(), z.boolean()]);

export const paramSchema = z
  .object({
    type: z.enum(PARAM_TYPES),
    description: z.string().default(''),
    required: z.boolean().default(false),
    default: scalar.optional(),
    /** The allowed values of an enum. */
    values: z.array(z.string()).optional(),
  })
  .strict()
  .superRefine((p, ctx) => {
    if (p.type === 'enum' && !p.values?.length)
      ctx.addIssue({ code: 'custom', path: ['values'], message: 'an enum param needs values: [a, b, ...]' });
    if (p.type !== 'enum' && p.values)
      ctx.addIssue({ code: 'custom', path: ['values'], message: 'values only applies to type enum' });
    if (p.required && p.default !== undefined)
      ctx.addIssue({ code: 'custom', path: ['default'], message: 'a required param cannot have a default' });
  });

/** `U012ABC`, `group:oncall` or `*`. */
const principal = z.string().min(1);

export const accessSchema = z
  .object({
    /** Who may start the runbook; absent = config access.operators. Admins always may. */
    runners: z.array(principal).optional(),
    approval: z
      .object({
        required: z.number().int().min(0).default(1),
        /** Who may approve; absent = config access.admins only. */
        approvers: z.array(principal).default([]),
        /** Whether the requester's own approval counts. */
        allowSelfApproval: z.boolean().default(false),
      })
      .strict()
      .optional(),
  })
  .strict()
  .prefault({});

export const FAILURE_POLICIES = ['abort', 'pause', 'continue'] as const;
export type FailurePolicy = (typeof FAILURE_POLICIES)[number];

export const stepSchema = z
  .object({
    id: identifier,
    action: z.string().min(1),
    with: z.record(z.string(), z.unknown()).default({}),
    /** Duration text (`30m`) or ms; resolved by the loader. */
    timeout: z.union([z.string(), z.number()]).optional(),
    retries: z.number().int().min(0).max(20).default(0),
    onFailure: z.enum(FAILURE_POLICIES).default('abort'),
  })
  .strict();

export const runbookFileSchema = z
  .object({
    name: identifier,
    title: z.string().min(1),
    description: z.string().default(''),
    params: z.record(identifier, paramSchema).default({}),
    access: accessSchema,
    steps: z.array(stepSchema).min(1, 'a runbook needs at least one step'),
  })
  .strict();

export type RunbookParam = z.output<typeof paramSchema>;
export type RunbookStepFile = z.output<typeof stepSchema>;
export type RunbookAccess = z.output<typeof accessSchema>;

export interface RunbookStep extends Omit<RunbookStepFile, 'timeout'> {
  /** Milliseconds; undefined = the action's default. */
  timeoutMs?: number;
}

export interface Runbook {
  name: string;
  title: string;
  description: string;
  params: Record<string, RunbookParam>;
  access: RunbookAccess;
  steps: RunbookStep[];
  /** The file it came from (for error messages). */
  file: string;
}
