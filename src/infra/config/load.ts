import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseDocument, LineCounter, isMap, isSeq, isScalar, type Node } from 'yaml';
import type { z } from 'zod';
import { configFileSchema, keysAt, type RollcallConfig } from './schema.js';
import { suggest } from '../../core/suggest.js';
import { RollcallError } from '../../core/errors.js';

export interface ConfigProblem {
  /** `instances[1].url` */
  path: string;
  message: string;
  line?: number;
  /** What was probably meant: the known key closest to an unknown one. */
  suggestion?: string;
}

export class ConfigError extends RollcallError {
  declare readonly code: 'config_invalid';
  constructor(
    readonly file: string,
    readonly problems: ConfigProblem[],
  ) {
    super(
      'config_invalid',
      `${file}: invalid configuration\n` + problems.map((p) => `  ${formatProblem(p)}`).join('\n'),
      {
        suggestions: problems.flatMap((p) => (p.suggestion ? [p.suggestion] : [])),
      },
    );
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

/**
 * The line of the YAML node at a path (config and runbook errors name it). `key`: the line of the last map key
 * rather than of its value, which for a nested map is the line below (an unknown key's line is where the typo is).
 */
export function lineOf(
  doc: ReturnType<typeof parseDocument>,
  counter: LineCounter,
  segments: readonly PropertyKey[],
  at: 'value' | 'key' = 'value',
): number | undefined {
  let node: Node | null | undefined = doc.contents as Node | null;
  let last: Node | null | undefined = node;
  for (const [i, segment] of segments.entries()) {
    if (isMap(node)) {
      const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === String(segment));
      if (!pair) break;
      node = pair.value as Node | null;
      last =
        at === 'key' && i === segments.length - 1
          ? (pair.key as Node)
          : ((pair.value as Node | null) ?? (pair.key as Node));
    } else if (isSeq(node) && typeof segment === 'number') {
      node = node.items[segment] as Node | null;
      if (!node) break;
      last = node;
    } else break;
  }
  const offset = last?.range?.[0];
  return offset === undefined ? undefined : counter.linePos(offset).line;
}

/**
 * One problem per zod issue, and per unknown key: its path names the key, its line is the key's, and with the
 * schema at hand it says which known key is closest (`redis.prefx: unknown key "prefx" (did you mean prefix?)`).
 */
export function zodProblems(
  error: z.ZodError,
  locate?: (p: readonly PropertyKey[], at?: 'value' | 'key') => number | undefined,
  schema?: z.ZodType,
): ConfigProblem[] {
  return error.issues.flatMap((issue): ConfigProblem[] => {
    if (issue.code === 'unrecognized_keys') {
      const known = schema ? keysAt(schema, issue.path) : [];
      return issue.keys.map((key) => unknownKey([...issue.path, key], known, locate));
    }
    // A bad record key says why in its own issue; "Invalid key in record" alone names no rule.
    const message = issue.code === 'invalid_key' && issue.issues[0]?.message ? issue.issues[0].message : issue.message;
    return [
      { path: formatPath(issue.path), message: message.replace(/^Invalid input: /, ''), line: locate?.(issue.path) },
    ];
  });
}

function unknownKey(
  at: PropertyKey[],
  known: string[],
  locate?: (p: readonly PropertyKey[], at?: 'value' | 'key') => number | undefined,
): ConfigProblem {
  const key = String(at.at(-1));
  const [suggestion] = suggest(key, known, 1);
  const hint = suggestion
    ? ` (did you mean ${suggestion}?)`
    : known.length
      ? ` (known keys here: ${known.join(', ')})`
      : '';
  return {
    path: formatPath(at),
    message: `unknown key "${key}"${hint}`,
    line: locate?.(at, 'key'),
    ...(suggestion ? { suggestion } : {}),
  };
}

/** Parses and validates config text. Throws ConfigError naming each path and problem. */
export function parseConfig(
  text: string,
  file = 'rollcall.yaml',
  env: NodeJS.ProcessEnv = process.env,
): RollcallConfig {
  const counter = new LineCounter();
  const doc = parseDocument(text, { lineCounter: counter, prettyErrors: false });
  if (doc.errors.length) {
    throw new ConfigError(
      file,
      doc.errors.map((e) => ({
        path: '',
        message: `YAML: ${e.message.split('\n')[0]}`,
        line: counter.linePos(e.pos[0]).line,
      })),
    );
  }
  const problems: ConfigProblem[] = [];
  const raw = interpolate(doc.toJS() ?? {}, [], env, problems);
  // "instances[0].token" -> ['instances', 0, 'token']: list indexes must be numbers for lineOf to step into a list.
  for (const p of problems)
    p.line = lineOf(
      doc,
      counter,
      p.path
        .split(/[.[\]]+/)
        .filter(Boolean)
        .map((s) => (/^\d+$/.test(s) ? Number(s) : s)),
    );
  const schema = configFileSchema();
  const result = schema.safeParse(raw);
  if (!result.success) {
    // A value left empty by an unset variable was reported as such already; its schema complaint only repeats it.
    const reported = new Set(problems.map((p) => p.path));
    problems.push(
      ...zodProblems(result.error, (p, at) => lineOf(doc, counter, p, at), schema).filter((p) => !reported.has(p.path)),
    );
  }
  // In file order, so a long list reads top to bottom (zod reports nested problems before their parents').
  problems.sort((a, b) => (a.line ?? Infinity) - (b.line ?? Infinity));
  if (problems.length) throw new ConfigError(file, problems);
  return result.data!;
}

export function loadConfig(
  explicit?: string,
  env: NodeJS.ProcessEnv = process.env,
): { config: RollcallConfig; file: string } {
  const file = resolveConfigPath(explicit);
  if (!existsSync(file)) {
    throw new ConfigError(file, [
      {
        path: '',
        message:
          'file not found (pass --config FILE, set ROLLCALL_CONFIG, or create ./rollcall.yaml; `rollcall sim --write-config rollcall.yaml` writes one for the simulator)',
      },
    ]);
  }
  return { config: parseConfig(readFileSync(file, 'utf8'), file, env), file };
}

const SECRET_KEYS = /token|secret|password|key/i;

/** A copy safe to print: every secret-looking value is masked. */
export function redactConfig(value: unknown, key = ''): unknown {
  if (typeof value === 'string') return SECRET_KEYS.test(key) && value ? '***' : redactUrlPassword(value);
  if (Array.isArray(value)) return value.map((v) => redactConfig(v));
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactConfig(v, k)]));
  return value;
}

/** `redis://default:hunter2@host` -> `redis://default:***@host`: a password can hide in any URL. */
export function redactUrlPassword(text: string): string {
  return text.replace(/^([a-z][a-z0-9+.-]*:\/\/[^/:@\s]*):[^/@\s]*@/i, '$1:***@');
}
