import { suggest } from '../../core/suggest.js';

/**
 * The placeholders of a check's PromQL query, read once here for the config schema (an unknown one is a
 * config error naming the check) and for the renderer (domain/checks/render.ts), so both agree on what a
 * query may say. `{{app}}`, `{{cluster}}`, `{{namespace}}`, `{{instance}}`, `{{project}}` and
 * `{{labels.KEY}}` are the app's identity: the renderer escapes them for a PromQL double-quoted string,
 * which is why they must stand inside one (`app="{{app}}"`): in a single-quoted or raw string, or bare,
 * an escaped value could still end the string and change the query. `{{window}}` is a duration (`1m`).
 */

export const IDENTITY_PLACEHOLDERS = ['app', 'cluster', 'namespace', 'instance', 'project'] as const;
export type IdentityPlaceholder = (typeof IDENTITY_PLACEHOLDERS)[number];

export type Placeholder =
  { kind: 'identity'; name: IdentityPlaceholder } | { kind: 'label'; key: string } | { kind: 'window' };

/** Where a placeholder stands in the query text. */
export interface PlaceholderUse {
  /** As written between the braces, trimmed: `app`, `labels.team`. */
  text: string;
  /** Offsets of `{{` and just past `}}`. */
  start: number;
  end: number;
  /** Inside a double-quoted PromQL string. */
  quoted: boolean;
  /** Undefined when the name is unknown. */
  placeholder?: Placeholder;
}

/** A Kubernetes label key: an optional DNS-subdomain prefix and `/`, then a name of at most 63 characters. */
const LABEL_KEY = /^(?:[a-z0-9](?:[-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

export function placeholderOf(text: string): Placeholder | undefined {
  if ((IDENTITY_PLACEHOLDERS as readonly string[]).includes(text))
    return { kind: 'identity', name: text as IdentityPlaceholder };
  if (text === 'window') return { kind: 'window' };
  if (text.startsWith('labels.') && LABEL_KEY.test(text.slice('labels.'.length)))
    return { kind: 'label', key: text.slice('labels.'.length) };
  return undefined;
}

/** `{{...}}` that is never closed: everything after it would be query text the author did not mean. */
export class UnclosedPlaceholderError extends Error {
  constructor(readonly at: number) {
    super(`a {{ at character ${at + 1} is never closed with }}`);
  }
}

/**
 * Every `{{...}}` of a query in order, with whether it stands inside a double-quoted string. PromQL strings
 * are `"..."` and `'...'` (backslash escapes) and raw `` `...` ``; `#` starts a comment to the end of the line.
 */
export function placeholderUses(query: string): PlaceholderUse[] {
  const uses: PlaceholderUse[] = [];
  let quote: '"' | "'" | '`' | '#' | undefined;
  for (let i = 0; i < query.length; i++) {
    const ch = query[i];
    if (ch === '{' && query[i + 1] === '{') {
      const close = query.indexOf('}}', i + 2);
      if (close === -1) throw new UnclosedPlaceholderError(i);
      const text = query.slice(i + 2, close).trim();
      uses.push({ text, start: i, end: close + 2, quoted: quote === '"', placeholder: placeholderOf(text) });
      i = close + 1;
    } else if (quote === '#') {
      if (ch === '\n') quote = undefined;
    } else if (quote) {
      if (ch === '\\' && quote !== '`') i++;
      else if (ch === quote) quote = undefined;
    } else if (ch === '"' || ch === "'" || ch === '`' || ch === '#') quote = ch;
  }
  return uses;
}

const KNOWN = [...IDENTITY_PLACEHOLDERS, 'window', 'labels.KEY'];

/** What is wrong with a check's query placeholders, one sentence each (empty when nothing is). */
export function placeholderProblems(query: string): string[] {
  let uses: PlaceholderUse[];
  try {
    uses = placeholderUses(query);
  } catch (error) {
    if (error instanceof UnclosedPlaceholderError) return [error.message];
    throw error;
  }
  const problems: string[] = [];
  for (const use of uses) {
    if (!use.placeholder) {
      const [near] = suggest(use.text, [...IDENTITY_PLACEHOLDERS, 'window'], 1);
      const hint = near
        ? ` (did you mean {{${near}}}?)`
        : use.text.startsWith('labels.')
          ? ' (a label key is written as in Kubernetes: {{labels.team}}, {{labels.app.kubernetes.io/name}})'
          : '';
      problems.push(`unknown placeholder {{${use.text}}}${hint}; known: ${KNOWN.map((k) => `{{${k}}}`).join(', ')}`);
    } else if (use.placeholder.kind !== 'window' && !use.quoted) {
      problems.push(
        `{{${use.text}}} must stand inside a double-quoted string (e.g. app="{{app}}"): rollcall escapes the value for one`,
      );
    }
  }
  return problems;
}
