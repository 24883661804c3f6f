import { z } from 'zod';
import { RollcallError } from './errors.js';

/**
 * Decoding what rollcall reads back from Redis. Redis keeps strings only and anything can write
 * them (another rollcall version, a hand edit), so a stored record is decoded, not cast: a malformed
 * one becomes a `stored_record_invalid` error that names the record and the field, never an object
 * whose fields lie about their types.
 */

/** A field stored as JSON text, decoded and then checked against `schema`. */
export function jsonField<T extends z.ZodType>(schema: T) {
  return z
    .string()
    .transform((text, ctx) => {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        ctx.addIssue({ code: 'custom', message: `not JSON: ${text.length > 40 ? `${text.slice(0, 40)}…` : text}` });
        return z.NEVER;
      }
    })
    .pipe(schema);
}

/** A field that must hold an RFC3339 time. */
export const storedTime = z.string().refine((s) => Number.isFinite(Date.parse(s)), 'not a time');

/** `raw` decoded by `schema`, or a stored_record_invalid error saying which record (`what`) and which fields. */
export function decodeStored<T extends z.ZodType>(schema: T, raw: unknown, what: string): z.output<T> {
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((i) => `${i.path.join('.') || 'record'}: ${i.message}`).join('; ');
  throw new RollcallError(
    'stored_record_invalid',
    `${what} in Redis is malformed (${problems}); it was written by another rollcall version or edited by hand`,
  );
}

/** Where a reader reports the stored records it skipped as malformed. */
export interface MalformedEntryLogger {
  warn(o: unknown, m?: string): void;
}
