import type { AppSelector } from '../fleet/select.js';
import type { ParsedCommand } from './registry.js';
import type { ReplyBlock } from '../core/reply.js';
import type { ErrorCode } from '../core/error-codes.js';
import { RollcallError } from '../core/errors.js';

/**
 * The chat grammar: `<command> [target...] [key=value ...] [-l selector] [--flag]`.
 * Values with spaces are quoted ("..." or '...'), also in the middle of a word:
 * `selector="env in (prod,staging)"`.
 */

/** A failure a command reports to the user: a stable code and a message that says what to do. */
export class CommandError extends RollcallError {
  constructor(
    code: ErrorCode,
    message: string,
    suggestions?: string[],
    /** What the reply's data carries besides the error (e.g. the matches of an ambiguous name). */
    data?: Record<string, unknown>,
    /** Blocks shown under the message (the candidates, buttons to pick one). */
    blocks?: ReplyBlock[],
  ) {
    super(code, message, { suggestions, data, blocks });
    this.name = 'CommandError';
  }
}

/** The text does not follow the grammar (unterminated quote, `-l` without a selector ...). */
export class CommandSyntaxError extends CommandError {
  constructor(message: string) {
    super('usage', message);
    this.name = 'CommandSyntaxError';
  }
}

// Slack sends &, < and > HTML-escaped in command text, and its clients turn straight quotes
// into typographic ones; both would otherwise end up inside app names and selectors.
function normalize(text: string): string {
  return text
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&')
    .replace(/[\u201c\u201d\u201e\u201f]/g, '"')
    .replace(/[\u2018\u2019\u201a\u201b]/g, "'");
}

/** Splits like a shell would, without any expansion. Throws CommandSyntaxError on an open quote. */
export function tokenize(text: string): string[] {
  const tokens: string[] = [];
  let current = '';
  let inToken = false;
  let quote: '"' | "'" | null = null;
  let quoteStart = 0;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (quote) {
      if (ch === quote) quote = null;
      else if (ch === '\\' && quote === '"' && (text[i + 1] === '"' || text[i + 1] === '\\')) current += text[++i];
      else current += ch;
    } else if (ch === '"' || ch === "'") {
      quote = ch;
      quoteStart = i;
      inToken = true;
    } else if (/\s/.test(ch)) {
      if (inToken) tokens.push(current);
      current = '';
      inToken = false;
    } else {
      current += ch;
      inToken = true;
    }
  }
  if (quote)
    throw new CommandSyntaxError(
      `unterminated ${quote} quote at position ${quoteStart + 1}: close it, e.g. selector="env in (prod)"`,
    );
  if (inToken) tokens.push(current);
  return tokens;
}

const OPTION = /^([A-Za-z][A-Za-z0-9_.-]*)=(.*)$/s;

export function parseCommand(text: string): ParsedCommand {
  const raw = normalize(text).trim();
  const tokens = tokenize(raw);
  // Pasted from a Slack message or a runbook: "/argo status" means "status".
  if (tokens[0]?.startsWith('/')) tokens.shift();
  const command = (tokens.shift() ?? '').toLowerCase();
  const positional: string[] = [];
  const options: Record<string, string> = {};
  const flags = new Set<string>();
  const selectors: string[] = [];

  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i];
    if (token === '-l' || token === '--selector') {
      const value = tokens[++i];
      if (value === undefined || value === '')
        throw new CommandSyntaxError(`${token} needs a label selector, e.g. ${token} env=prod,tier=canary`);
      const [selector, next] = extendSelector(value, tokens, i);
      selectors.push(selector);
      i = next;
    } else if (token.startsWith('-l') && token.length > 2 && !token.startsWith('--')) {
      const [selector, next] = extendSelector(token.slice(token[2] === '=' ? 3 : 2), tokens, i);
      selectors.push(selector);
      i = next;
    } else if (token === '--page' && /^\d+$/.test(tokens[i + 1] ?? '')) {
      options.page = tokens[++i];
    } else if (token.startsWith('--') && token.length > 2) {
      const body = token.slice(2);
      const eq = body.indexOf('=');
      if (eq > 0) {
        const key = body.slice(0, eq);
        if (key === 'selector') selectors.push(body.slice(eq + 1));
        else options[key] = body.slice(eq + 1);
      } else flags.add(body.toLowerCase());
    } else {
      const m = OPTION.exec(token);
      if (m) {
        let value = m[2];
        // Waves may be set-based label selectors, typed unquoted in Slack as after -l: `waves=tier in (canary);tier=low@50%`.
        if (m[1] === 'waves' && value) [value, i] = extendSelector(value, tokens, i, WAVE_CONTINUES);
        if (m[1] === 'selector' || m[1] === 'l') selectors.push(value);
        else if (m[1] in options && options[m[1]] !== value) {
          // `prune=true prune=false`: which one was meant? Guessing would act on the wrong one.
          throw new CommandSyntaxError(
            `${m[1]}= is given twice (${m[1]}=${options[m[1]]} and ${m[1]}=${value}): keep the one you mean`,
          );
        } else options[m[1]] = value;
      } else positional.push(token);
    }
  }
  // Several selectors narrow together, as requirements of one selector would.
  const selector = selectors.filter((s) => s.trim()).join(',');
  if (selector) options.selector = selector;
  return { command, positional, options, flags, raw };
}

const SET_OPERATOR = /^(in|notin)$/i;
/**
 * A wave list also goes on with a word that starts with `;` or `@` (`tier=low @50%`). Not after a word that
 * ends with `;`: `waves=a-*; prune=true` cannot tell a selector from the next option (quote such lists).
 */
const WAVE_CONTINUES = /^[;@]/;

/**
 * Set-based selectors have spaces (`env in (prod, staging)`), and in Slack nobody quotes them: after
 * `-l`, keep taking words while the selector is unfinished — an open parenthesis, a trailing comma
 * or `in`/`notin`, or a next word that is an operator, a value list or a continuation.
 */
function extendSelector(first: string, tokens: string[], at: number, continues?: RegExp): [string, number] {
  let value = first;
  let i = at;
  const unfinished = () => {
    const open = (value.match(/\(/g) ?? []).length > (value.match(/\)/g) ?? []).length;
    const last = value.trim().split(/\s+/).pop() ?? '';
    return open || value.endsWith(',') || SET_OPERATOR.test(last) || !!continues?.test(value);
  };
  while (i + 1 < tokens.length) {
    const next = tokens[i + 1];
    const joins = SET_OPERATOR.test(next) || next.startsWith('(') || next.startsWith(',') || !!continues?.test(next);
    if (!(unfinished() || joins)) break;
    value += ` ${next}`;
    i++;
  }
  return [value, i];
}

/** Options every selection understands. */
export const SELECTOR_OPTIONS = ['selector', 'cluster', 'project', 'appset', 'instance'] as const;

/**
 * The app selection of a command: positional names/globs, `-l`/`selector=`, `cluster=`, `project=`,
 * `appset=`, `instance=`.
 */
export function selectorFromCommand(cmd: ParsedCommand): AppSelector {
  const sel: AppSelector = {};
  if (cmd.positional.length) sel.patterns = [...cmd.positional];
  if (cmd.options.selector) sel.labels = cmd.options.selector;
  if (cmd.options.cluster) sel.cluster = cmd.options.cluster;
  if (cmd.options.project) sel.project = cmd.options.project;
  if (cmd.options.appset) sel.appSet = cmd.options.appset;
  if (cmd.options.instance) sel.instance = cmd.options.instance;
  return sel;
}

/** Rejects options the command does not know, so a typo (`instnace=`) is not silently ignored. */
export function checkOptions(cmd: ParsedCommand, allowed: readonly string[], usage: string): void {
  // Transport flags every command accepts.
  const unknown = Object.keys(cmd.options).filter((k) => !allowed.includes(k));
  if (unknown.length) {
    const hint = unknown.some((k) => !(SELECTOR_OPTIONS as readonly string[]).includes(k) || k === 'selector')
      ? ` To select by label, use -l ${unknown.map((k) => `${k}=${cmd.options[k]}`).join(',')}.`
      : '';
    throw new CommandError(
      'usage',
      `\`${cmd.command}\` does not take ${unknown.map((k) => `${k}=`).join(', ')}. Usage: ${usage}.${allowed.includes('selector') ? hint : ''}`,
    );
  }
}

/** A true/false option (`detail=true`); absent is false. `meaning` says what true does, for the error. */
export function booleanOption(cmd: ParsedCommand, name: string, meaning: string): boolean {
  const raw = cmd.options[name];
  if (raw === undefined || raw === 'false') return false;
  if (raw === 'true') return true;
  throw new CommandError('usage', `${name}= takes true or false (true: ${meaning}); got \`${raw}\`.`);
}

/** At most `max` positional words. */
export function checkPositional(cmd: ParsedCommand, max: number, usage: string): void {
  if (cmd.positional.length > max) {
    throw new CommandError(
      'usage',
      `\`${cmd.command}\` takes ${max === 0 ? 'no target' : `at most ${max} target`}; got ${cmd.positional.map((p) => `\`${p}\``).join(' ')}. Usage: ${usage}.`,
    );
  }
}

function quoteIfNeeded(value: string): string {
  return /^[^\s"'\\]+$/.test(value) ? value : `"${value.replace(/["\\]/g, (c) => `\\${c}`)}"`;
}

/** The command as canonical text (what a "Refresh" button runs again). Drops --public: a refresh answers the clicker. */
export function commandText(cmd: ParsedCommand): string {
  const parts = [cmd.command, ...cmd.positional.map(quoteIfNeeded)];
  for (const [k, v] of Object.entries(cmd.options))
    parts.push(k === 'selector' ? `-l ${quoteIfNeeded(v)}` : `${k}=${quoteIfNeeded(v)}`);
  for (const f of cmd.flags) if (f !== 'public') parts.push(`--${f}`);
  return parts.join(' ');
}
