import { parseDuration } from '../../infra/config/schema.js';
import type { Runbook, RunbookParam } from './schema.js';
import { RollcallError } from '../../core/errors.js';
import { suggest } from '../../core/suggest.js';
import { typedDuration } from '../../core/format.js';

export type ParamValue = string | number | boolean;

export interface ParamProblem {
  param: string;
  code: 'unknown_param' | 'missing_param' | 'invalid_value';
  message: string;
  /** What was probably meant, as it would be typed (`prune=true`, `gate=healthy`); not repeated in `message`. */
  suggestion?: string;
}

export class ParamError extends RollcallError {
  declare readonly code: 'invalid_params';
  constructor(
    readonly runbook: string,
    readonly problems: ParamProblem[],
  ) {
    super('invalid_params', problems.map((p) => p.message).join('; '), {
      suggestions: problems.map((p) => p.suggestion).filter((s): s is string => !!s),
      data: { problems },
    });
  }
}

const TRUE = new Set(['true', 'yes', 'on', '1']);
const FALSE = new Set(['false', 'no', 'off', '0']);

/** Converts one typed value. Returns a message (and a close enum value, if any) when the text does not fit the type. */
export function coerceParam(
  name: string,
  spec: RunbookParam,
  raw: ParamValue,
): { value: ParamValue } | { error: string; suggestion?: string } {
  const text = String(raw).trim();
  switch (spec.type) {
    case 'string':
    case 'selector':
      if (spec.type === 'selector' && !text)
        return { error: `${name}: expected a selector such as auth-config-* (got nothing)` };
      return { value: text };
    case 'int': {
      if (typeof raw === 'number' && Number.isInteger(raw)) return { value: raw };
      if (!/^-?\d+$/.test(text)) return { error: `${name}: expected a whole number (got "${text}")` };
      return { value: Number(text) };
    }
    case 'bool': {
      if (typeof raw === 'boolean') return { value: raw };
      const lower = text.toLowerCase();
      if (TRUE.has(lower)) return { value: true };
      if (FALSE.has(lower)) return { value: false };
      return { error: `${name}: expected true or false (got "${text}")` };
    }
    case 'duration': {
      if (typeof raw === 'number') return { value: raw };
      const ms = parseDuration(text);
      if (ms === undefined && /^\d+$/.test(text.trim()))
        return { error: `${name}=${text.trim()} has no unit: write ${text.trim()}m or ${text.trim()}s` };
      if (ms === undefined) return { error: `${name}: expected a duration such as 30s, 10m or 1h (got "${text}")` };
      return { value: ms };
    }
    case 'enum': {
      const values = spec.values ?? [];
      if (values.includes(text)) return { value: text };
      const near = suggest(text, values, 1)[0];
      return {
        error: `${name}: expected one of ${values.join(', ')} (got "${text}")`,
        ...(near ? { suggestion: `${name}=${near}` } : {}),
      };
    }
  }
}

/**
 * Turns `key=value` strings into typed values, applying defaults. Every problem is collected, so
 * one reply tells the user everything that is wrong.
 */
export function parseParams(runbook: Runbook, raw: Record<string, string>): Record<string, ParamValue> {
  const problems: ParamProblem[] = [];
  const values: Record<string, ParamValue> = {};
  const known = Object.keys(runbook.params);
  for (const [name, text] of Object.entries(raw)) {
    const spec = runbook.params[name];
    if (!spec) {
      const near = suggest(name, known, 1)[0];
      problems.push({
        param: name,
        code: 'unknown_param',
        message: `unknown param "${name}" for ${runbook.name}; params: ${known.join(', ') || 'none'}`,
        ...(near ? { suggestion: `${near}=${text}` } : {}),
      });
      continue;
    }
    const result = coerceParam(name, spec, text);
    if ('error' in result)
      problems.push({
        param: name,
        code: 'invalid_value',
        message: result.error,
        ...(result.suggestion ? { suggestion: result.suggestion } : {}),
      });
    else values[name] = result.value;
  }
  for (const [name, spec] of Object.entries(runbook.params)) {
    if (name in values || problems.some((p) => p.param === name)) continue;
    if (spec.default !== undefined) {
      const result = coerceParam(name, spec, spec.default);
      if ('value' in result) values[name] = result.value;
    } else if (spec.required) {
      problems.push({
        param: name,
        code: 'missing_param',
        message: `missing required param ${name}${spec.description ? ` (${spec.description})` : ''}: add ${name}=...`,
      });
    }
  }
  if (problems.length) throw new ParamError(runbook.name, problems);
  return values;
}

/** One line per param, for help and the modal: `selector (selector, required): which apps`. */
export function describeParams(runbook: Runbook): string[] {
  return Object.entries(runbook.params).map(([name, p]) => {
    const bits = [p.type === 'enum' ? (p.values ?? []).join('|') : p.type];
    if (p.required) bits.push('required');
    if (p.default !== undefined) bits.push(`default ${String(p.default)}`);
    return `${name} (${bits.join(', ')})${p.description ? `: ${p.description}` : ''}`;
  });
}

/** A typed value as someone would type it back: durations as `10m` rather than 600000. */
export function formatParam(spec: RunbookParam | undefined, value: ParamValue): string {
  if (spec?.type !== 'duration' || typeof value !== 'number') return String(value);
  return typedDuration(value);
}
