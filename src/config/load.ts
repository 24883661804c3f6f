import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseDocument, LineCounter, isMap, isSeq, isScalar, type Node } from 'yaml';
import type { z } from 'zod';
import { configSchema, type RollcallConfig } from './schema.js';
import { RollcallError } from '../core/errors.js';

export interface ConfigProblem {
  /** `instances[1].url` */
  path: string;
  message: string;
  line?: number;
}

export class ConfigError extends RollcallError {
  declare readonly code: 'config_invalid';
  constructor(
    readonly file: string,
    readonly problems: ConfigProblem[],
  ) {
    super('config_invalid', `${file}: invalid configuration\n` + problems.map((p) => `  ${formatProblem(p)}`).join('\n'));
  }
}

export function formatProblem(p: ConfigProblem): string {
  return `${p.path || '(root)'}: ${p.message}${p.line ? ` (line ${p.line})` : ''}`;
}

export function formatPath(segments: readonly PropertyKey[]): string {
  let out = '';
  for (const segment of segments) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else out += out ? `.${String(segment)}` : String(segment);
  }
  return out;
}

/** Which file to read: --config, else ROLLCALL_CONFIG, else ./rollcall.yaml. */
export function resolveConfigPath(explicit?: string): string {
  return path.resolve(explicit ?? process.env.ROLLCALL_CONFIG ?? 'rollcall.yaml');
}

/**
 * Replaces `${NAME}` (and `${NAME:-default}`) in string values. Interpolation happens after YAML
 * parsing, so a secret containing YAML syntax stays data.
 */
function interpolate(value: unknown, at: PropertyKey[], env: NodeJS.ProcessEnv, problems: ConfigProblem[]): unknown {
  if (typeof value === 'string') {
    return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g, (_all, name: string, fallback?: string) => {
      const found = env[name];
      if (found !== undefined && found !== '') return found;
      if (fallback !== undefined) return fallback;
      problems.push({ path: formatPath(at), message: `environment variable ${name} is not set` });
      return '';
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => interpolate(v, [...at, i], env, problems));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolate(v, [...at, k], env, problems)]));
  }
  return value;
}

/** The line of the YAML node at a path (config and runbook errors name it). */
export function lineOf(doc: ReturnType<typeof parseDocument>, counter: LineCounter, segments: readonly PropertyKey[]): number | undefined {
  let node: Node | null | undefined = doc.contents as Node | null;
  let last: Node | null | undefined = node;
  for (const segment of segments) {
    if (isMap(node)) {
      const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === String(segment));
      if (!pair) break;
      node = pair.value as Node | null;
      last = (pair.value as Node | null) ?? (pair.key as Node);
    } else if (isSeq(node) && typeof segment === 'number') {
      node = node.items[segment] as Node | null;
      if (!node) break;
      last = node;
    } else break;
  }
  const offset = last?.range?.[0];
  return offset === undefined ? undefined : counter.linePos(offset).line;
}

export function zodProblems(error: z.ZodError, locate?: (p: readonly PropertyKey[]) => number | undefined): ConfigProblem[] {
  return error.issues.map((issue) => {
    // An unknown key is reported on its parent; its own line is where the typo is.
    const at = issue.code === 'unrecognized_keys' && issue.keys.length ? [...issue.path, issue.keys[0]] : issue.path;
    // A bad record key says why in its own issue; "Invalid key in record" alone names no rule.
    const message = issue.code === 'invalid_key' && issue.issues[0]?.message ? issue.issues[0].message : issue.message;
    return { path: formatPath(issue.path), message: message.replace(/^Invalid input: /, ''), line: locate?.(at) };
  });
}

/** Parses and validates config text. Throws ConfigError naming each path and problem. */
export function parseConfig(text: string, file = 'rollcall.yaml', env: NodeJS.ProcessEnv = process.env): RollcallConfig {
  const counter = new LineCounter();
  const doc = parseDocument(text, { lineCounter: counter, prettyErrors: false });
  if (doc.errors.length) {
    throw new ConfigError(
      file,
      doc.errors.map((e) => ({ path: '', message: `YAML: ${e.message.split('\n')[0]}`, line: counter.linePos(e.pos[0]).line })),
    );
  }
  const problems: ConfigProblem[] = [];
  const raw = interpolate(doc.toJS() ?? {}, [], env, problems);
  // "instances[0].token" -> ['instances', 0, 'token']: list indexes must be numbers for lineOf to step into a list.
  for (const p of problems) p.line = lineOf(doc, counter, p.path.split(/[.[\]]+/).filter(Boolean).map((s) => (/^\d+$/.test(s) ? Number(s) : s)));
  const result = configSchema.safeParse(raw);
  if (!result.success) {
    // A value left empty by an unset variable was reported as such already; its schema complaint only repeats it.
    const reported = new Set(problems.map((p) => p.path));
    problems.push(...zodProblems(result.error, (p) => lineOf(doc, counter, p)).filter((p) => !reported.has(p.path)));
  }
  if (problems.length) throw new ConfigError(file, problems);
  return result.data!;
}

export function loadConfig(explicit?: string, env: NodeJS.ProcessEnv = process.env): { config: RollcallConfig; file: string } {
  const file = resolveConfigPath(explicit);
  if (!existsSync(file)) {
    throw new ConfigError(file, [
      { path: '', message: 'file not found (pass --config FILE, set ROLLCALL_CONFIG, or create ./rollcall.yaml; `rollcall sim --write-config rollcall.yaml` writes one for the simulator)' },
    ]);
  }
  return { config: parseConfig(readFileSync(file, 'utf8'), file, env), file };
}

const SECRET_KEYS = /token|secret|password|key/i;

/** A copy safe to print: every secret-looking value is masked. */
export function redactConfig(value: unknown, key = ''): unknown {
  if (typeof value === 'string') return SECRET_KEYS.test(key) && value ? '***' : redactUrlPassword(value);
  if (Array.isArray(value)) return value.map((v) => redactConfig(v));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactConfig(v, k)]));
  return value;
}

/** `redis://default:hunter2@host` -> `redis://default:***@host`: a password can hide in any URL. */
export function redactUrlPassword(text: string): string {
  return text.replace(/^([a-z][a-z0-9+.-]*:\/\/[^/:@\s]*):[^/@\s]*@/i, '$1:***@');
}
