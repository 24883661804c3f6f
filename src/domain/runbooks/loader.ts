import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { LineCounter, parseDocument } from 'yaml';
import { parseDuration } from '../../infra/config/schema.js';
import { formatPath, lineOf, zodProblems } from '../../infra/config/load.js';
import { findRunbookAction, runbookActionNames } from './actions/index.js';
import { z } from 'zod';
import { coerceParam, type ParamValue } from './params.js';
import { runbookFileSchema, type Runbook } from './schema.js';
import { RollcallError } from '../../core/errors.js';
import { packageFile } from '../../core/package-files.js';
import { suggest } from '../../core/suggest.js';

export interface RunbookProblem {
  file: string;
  line?: number;
  /** `steps[0].action` */
  path: string;
  message: string;
}

export class RunbookLoadError extends RollcallError {
  declare readonly code: 'runbook_invalid' | 'runbook_dir_empty';
  constructor(
    readonly problems: RunbookProblem[],
    code: RunbookLoadError['code'] = 'runbook_invalid',
  ) {
    super(code, `invalid runbooks:\n${problems.map((p) => `  ${formatRunbookProblem(p)}`).join('\n')}`);
  }
}

export function formatRunbookProblem(p: RunbookProblem): string {
  return `${p.file}${p.line ? `:${p.line}` : ''}: ${p.path ? `${p.path}: ` : ''}${p.message}`;
}

const WHOLE_REF = /^\s*\$\{\{\s*params\.([A-Za-z][\w-]*)\s*\}\}\s*$/;
const ANY_EXPR = /\$\{\{([^}]*)\}\}/g;
const PARAM_EXPR = /^\s*params\.([A-Za-z][\w-]*)\s*$/;

/** The param a value is exactly a reference to (`${{ params.prune }}` → `prune`), else undefined. */
export function paramReference(value: unknown): string | undefined {
  return typeof value === 'string' ? WHOLE_REF.exec(value)?.[1] : undefined;
}

/** Every `${{ ... }}` inside a value, with the path where it sits. */
function expressions(value: unknown, at: PropertyKey[], out: { at: PropertyKey[]; expr: string }[] = []) {
  if (typeof value === 'string') for (const m of value.matchAll(ANY_EXPR)) out.push({ at, expr: m[1] });
  else if (Array.isArray(value)) value.forEach((v, i) => expressions(v, [...at, i], out));
  else if (value && typeof value === 'object')
    for (const [k, v] of Object.entries(value)) expressions(v, [...at, k], out);
  return out;
}

/**
 * Substitutes `${{ params.x }}` as data: a value that is exactly one reference takes the param's
 * typed value (so `prune: ${{ params.prune }}` stays a boolean); a reference inside a longer string
 * is replaced by its text. Nothing is evaluated, and the result is never re-scanned, so a param
 * value that itself contains `${{ ... }}` stays literal.
 */
export function substitute(value: unknown, params: Record<string, ParamValue | undefined>): unknown {
  if (typeof value === 'string') {
    const whole = WHOLE_REF.exec(value);
    if (whole) return params[whole[1]];
    return value.replace(ANY_EXPR, (_all, expr: string) => {
      const m = PARAM_EXPR.exec(expr);
      const v = m ? params[m[1]] : undefined;
      return v === undefined ? '' : String(v);
    });
  }
  if (Array.isArray(value)) return value.map((v) => substitute(v, params));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      const s = substitute(v, params);
      if (s !== undefined) out[k] = s;
    }
    return out;
  }
  return value;
}

/** Parses one runbook file's text. Returns the runbook or the problems (with lines). */
export function parseRunbook(text: string, file: string): { runbook?: Runbook; problems: RunbookProblem[] } {
  const counter = new LineCounter();
  const doc = parseDocument(text, { lineCounter: counter, prettyErrors: false });
  if (doc.errors.length) {
    return {
      problems: doc.errors.map((e) => ({
        file,
        line: counter.linePos(e.pos[0]).line,
        path: '',
        message: `YAML: ${e.message.split('\n')[0]}`,
      })),
    };
  }
  const at = (segments: readonly PropertyKey[]) => lineOf(doc, counter, segments);
  const result = runbookFileSchema.safeParse(doc.toJS() ?? {});
  if (!result.success) return { problems: zodProblems(result.error, at).map((p) => ({ file, ...p })) };
  const data = result.data;
  const problems: RunbookProblem[] = [];
  const problem = (segments: PropertyKey[], message: string) =>
    problems.push({ file, line: at(segments), path: formatPath(segments), message });
  const paramNames = Object.keys(data.params);
  const stepIds = new Set<string>();
  const steps = data.steps.map((step, i) => {
    if (stepIds.has(step.id)) problem(['steps', i, 'id'], `duplicate step id "${step.id}"`);
    stepIds.add(step.id);
    const action = findRunbookAction(step.action);
    if (!action) {
      const known = runbookActionNames();
      problem(
        ['steps', i, 'action'],
        `unknown action "${step.action}"${known.length ? ` (${nearText(step.action, known)}actions: ${known.join(', ')})` : ''}`,
      );
    } else {
      checkStepInput(action.name, action.input, step.with, (segments, message) =>
        problem(['steps', i, 'with', ...segments], message),
      );
    }
    for (const { at: where, expr } of expressions(step.with, ['steps', i, 'with'])) {
      const m = PARAM_EXPR.exec(expr);
      if (!m) problem(where, `only \${{ params.NAME }} can be used here (got "\${{${expr}}}")`);
      else if (!data.params[m[1]])
        problem(
          where,
          `unknown param "${m[1]}"${paramNames.length ? ` (${nearText(m[1], paramNames)}params: ${paramNames.join(', ')})` : ' (the runbook declares no params)'}`,
        );
    }
    let timeoutMs: number | undefined;
    if (step.timeout !== undefined) {
      timeoutMs = typeof step.timeout === 'number' ? step.timeout : parseDuration(step.timeout);
      if (timeoutMs === undefined)
        problem(['steps', i, 'timeout'], `expected a duration such as 30s, 10m or 1h (got "${step.timeout}")`);
    }
    const { timeout: _timeout, ...rest } = step;
    return { ...rest, timeoutMs };
  });
  data.access.approval?.approvers.forEach((a, i) => {
    if (!a.trim()) problem(['access', 'approval', 'approvers', i], 'empty approver');
  });
  for (const [name, spec] of Object.entries(data.params)) {
    if (spec.default === undefined) continue;
    if (spec.type === 'enum' && !spec.values?.includes(String(spec.default))) {
      problem(
        ['params', name, 'default'],
        `default "${String(spec.default)}" is not one of ${spec.values?.join(', ')}`,
      );
      continue;
    }
    // The default goes through the same conversion as a value typed in Slack, so it must survive it.
    const coerced = coerceParam(name, spec, spec.default as ParamValue);
    if ('error' in coerced) problem(['params', name, 'default'], `default: ${coerced.error.replace(`${name}: `, '')}`);
  }
  if (problems.length) return { problems };
  return {
    runbook: {
      name: data.name,
      title: data.title,
      description: data.description,
      params: data.params,
      access: data.access,
      steps,
      file,
    },
    problems,
  };
}

/** "did you mean X? " when a known name is close to the word, else nothing: the full list follows it. */
function nearText(word: string, known: string[]): string {
  const near = suggest(word, known, 1)[0];
  return near ? `did you mean ${near}? ` : '';
}

/**
 * A step's `with` against its action's input schema, at load time rather than mid-run: unknown
 * keys (with the closest known one), required inputs left out, and literal values of the wrong
 * type. Values that are `${{ params.x }}` expressions are checked when the run starts.
 */
function checkStepInput(
  actionName: string,
  input: z.ZodType,
  given: Record<string, unknown> | undefined,
  problem: (segments: PropertyKey[], message: string) => void,
) {
  if (!(input instanceof z.ZodObject)) return;
  const shape = input.shape as Record<string, z.ZodType>;
  const known = Object.keys(shape);
  const values = given ?? {};
  for (const [key, value] of Object.entries(values)) {
    const field = shape[key];
    if (!field) {
      problem(
        [key],
        `${actionName} has no input "${key}"${known.length ? ` (${nearText(key, known)}inputs: ${known.join(', ')})` : ''}`,
      );
      continue;
    }
    if (JSON.stringify(value ?? null).includes('${{')) continue;
    const parsed = field.safeParse(value);
    if (!parsed.success)
      problem([key], `${key}: ${parsed.error.issues[0]?.message.replace(/^Invalid input: /, '') ?? 'invalid value'}`);
  }
  for (const key of known) {
    if (key in values) continue;
    if (!shape[key].safeParse(undefined).success)
      problem([], `${actionName} needs input "${key}" (add it under with:)`);
  }
}

function runbookFiles(dir: string): string[] {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) return [];
  return readdirSync(dir)
    .filter((f) => /\.ya?ml$/i.test(f))
    .sort()
    .map((f) => path.join(dir, f));
}

export interface RunbookValidation {
  ok: boolean;
  runbooks: Runbook[];
  problems: RunbookProblem[];
  /** What `rollcall runbooks validate` prints. */
  report: string;
}

/** For `rollcall runbooks validate [DIR]`: exit 0 when problems is empty. */
export function validateRunbooks(dir: string): RunbookValidation {
  const files = runbookFiles(dir);
  const runbooks: Runbook[] = [];
  const problems: RunbookProblem[] = [];
  if (!files.length) problems.push({ file: dir, path: '', message: 'no runbook files (*.yaml) found' });
  const byName = new Map<string, string>();
  for (const file of files) {
    const parsed = parseRunbook(readFileSync(file, 'utf8'), file);
    problems.push(...parsed.problems);
    if (!parsed.runbook) continue;
    const other = byName.get(parsed.runbook.name);
    if (other) {
      problems.push({
        file,
        line: 1,
        path: 'name',
        message: `runbook "${parsed.runbook.name}" is also defined in ${other}`,
      });
      continue;
    }
    byName.set(parsed.runbook.name, file);
    runbooks.push(parsed.runbook);
  }
  const report = problems.length
    ? `${problems.length} problem${problems.length === 1 ? '' : 's'} in ${dir}:\n${problems.map((p) => `  ${formatRunbookProblem(p)}`).join('\n')}`
    : `${runbooks.length} runbook${runbooks.length === 1 ? '' : 's'} OK in ${dir}: ${runbooks.map((r) => r.name).join(', ')}`;
  return { ok: problems.length === 0, runbooks, problems, report };
}

/** Loads every runbook in dir; throws RunbookLoadError listing each problem with file and line. */
export function loadRunbooks(dir: string): Map<string, Runbook> {
  const { runbooks, problems } = validateRunbooks(dir);
  if (!runbookFiles(dir).length) throw new RunbookLoadError(problems, 'runbook_dir_empty');
  if (problems.length) throw new RunbookLoadError(problems);
  return new Map(runbooks.map((r) => [r.name, r]));
}

/** The runbooks shipped with rollcall (./runbooks next to package.json). */
export const SHIPPED_RUNBOOKS_DIR = packageFile('runbooks');
