/**
 * The `waves` param, read once: entries separated by `;`, in order, each either app-name globs
 * (`auth-config-*,web-*`) or one Kubernetes label selector on the Application's labels (`tier=canary`,
 * `tier in (low, mid)`), with an optional `@N` or `@N%`: how many of that wave's apps sync at once.
 * Pure: the planner and the preview call it with the selected apps.
 */
import picomatch from 'picomatch';
import { RollcallError } from '../../../../core/errors.js';
import { plural } from '../../../../core/format.js';
import { suggest } from '../../../../core/suggest.js';
import {
  LabelSelectorSyntaxError,
  matchesLabels,
  parseLabelSelector,
  type LabelRequirement,
} from '../../../../infra/argocd/labels.js';

/** What a wave entry is matched against: an app's name and its Application labels. */
export interface WaveCandidate {
  app: string;
  labels?: Record<string, string>;
}

/** `@N` (apps at once) or `@N%` (a share of the wave's apps). */
export type MaxUpdate = { count: number } | { percent: number };

export interface WaveSpec {
  /** The entry as typed, without its `@…`: the wave's name in the preview and the live message. */
  name: string;
  kind: 'names' | 'labels';
  /** names: the globs (any of them matches). */
  patterns: string[];
  /** labels: the selector's requirements (all of them must match). */
  requirements: LabelRequirement[];
  maxUpdate?: MaxUpdate;
  /** The `@…` as typed (`50%`), for the preview. */
  asked?: string;
  matches(app: WaveCandidate): boolean;
}

/** The most apps a wave may sync at once with `@N`, the same bound `concurrency` has. */
export const MAX_WAVE_UPDATE = 500;

const WAVES_HELP =
  'Waves are app-name globs or label selectors on the Application labels, in order, each with an optional @N or @N% (how many of its apps sync at once): `waves="auth-config-*;auth-service-*"` or `waves="tier=canary;tier=low-traffic@50%;tier=high-traffic@25%"`.';

const invalid = (message: string, suggestions?: string[]) =>
  new RollcallError('invalid_params', `${message} Nothing was started.`, { suggestions });

/**
 * How many of a wave's apps sync at once. `@N%` is scaled to the wave's app count and rounded down, then
 * raised to 1, as Argo CD's RollingSync scales a step's maxUpdate: `intstr.GetScaledValueFromIntOrPercent(
 * maxUpdate, total, false)` (false = round down), and "ensure that percentage values greater than 0% always
 * result in at least 1 Application being selected" (applicationset/progressivesync/progressive_sync.go, v3.5.1).
 * Without `@`, the run's `concurrency`.
 */
export function resolveMaxUpdate(asked: MaxUpdate | undefined, waveApps: number, concurrency: number): number {
  if (!asked) return concurrency;
  if ('count' in asked) return asked.count;
  return Math.max(1, Math.floor((asked.percent * waveApps) / 100));
}

/** The entries of `waves`, as typed: empty ones (`a;;b`) are typos and dropped. */
export function waveEntries(waves: string | undefined): string[] {
  return (waves ?? '')
    .split(';')
    .map((w) => w.trim())
    .filter((w) => w.replace(/^(?:labels|l|apps):/i, '').replace(/[\s,]/g, '') !== '');
}

/** The globs of a names entry (`a-*,b-*`); empty ones (`a,,b`) are dropped, picomatch refuses them. */
function globsOf(body: string): string[] {
  return body
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
}

/** Splits `tier=canary@50%` into the selection and its maxUpdate; refuses an `@` that is not one. */
function splitMaxUpdate(entry: string): { body: string; asked?: string; maxUpdate?: MaxUpdate } {
  const at = entry.lastIndexOf('@');
  if (at < 0) return { body: entry };
  const body = entry.slice(0, at).trim();
  const asked = entry.slice(at + 1).trim();
  const example = `e.g. ${body || 'tier=canary'}@2 or ${body || 'tier=canary'}@25%`;
  if (!body) throw invalid(`wave \`${entry}\` has nothing before its @: write what the wave selects, ${example}.`);
  if (body.includes('@'))
    throw invalid(`wave \`${entry}\` has more than one @: one @N or @N% per wave, at its end (${example}).`);
  const m = /^(\d+)(%?)$/.exec(asked);
  if (!m)
    throw invalid(
      `wave \`${entry}\`: @${asked} is not a maxUpdate. Write @N (how many of the wave's apps sync at once) or @N% (a share of them, rounded down as Argo CD does, at least 1), ${example}.`,
    );
  const n = Number(m[1]);
  if (n < 1)
    throw invalid(
      `wave \`${entry}\`: @${asked} would never sync the wave's apps (in Argo CD, maxUpdate 0 is a manual gate). Write @1 or more; to hold the rollout, pause the run.`,
    );
  if (m[2] && n > 100) throw invalid(`wave \`${entry}\`: @${asked} is more than the whole wave; write at most @100%.`);
  if (!m[2] && n > MAX_WAVE_UPDATE)
    throw invalid(
      `wave \`${entry}\`: @${asked} is more than ${MAX_WAVE_UPDATE} apps at once; write at most @${MAX_WAVE_UPDATE}.`,
    );
  return { body, asked, maxUpdate: m[2] ? { percent: n } : { count: n } };
}

const GLOB_CHARS = /[*?[\]{}]/;
/** `=`, `==`, `!=`, ` in (`, `notin`: only a label selector is written with these. */
const SELECTOR_OPERATORS = /=|\sin\s*\(|\bnotin\b/i;

/**
 * Whether an entry selects by name or by label, decided by its syntax: operators make a selector, glob
 * characters make globs, `!key` is a selector. Plain words (`tier`, `web-prod-eu1`) could be either an
 * app's name or a label key (`key` selects the apps that have it): the selected apps decide, and a word
 * that is both, or a list mixing both, is refused rather than guessed. `labels:` and `apps:` say it outright.
 */
function kindOf(entry: string, body: string, apps: readonly WaveCandidate[]): { kind: WaveSpec['kind']; text: string } {
  const explicit = /^(labels|l|apps):/i.exec(body);
  if (explicit)
    return { kind: explicit[1].toLowerCase() === 'apps' ? 'names' : 'labels', text: body.slice(explicit[0].length) };
  const operators = SELECTOR_OPERATORS.test(body);
  const globs = GLOB_CHARS.test(body);
  if (operators && globs)
    throw invalid(
      `wave \`${entry}\` mixes app-name globs (*, ?) with label-selector operators (=, in, notin): a wave is one or the other. Split it into two waves, or write the globs as one wave and the selector as another. ${WAVES_HELP}`,
    );
  if (operators) return { kind: 'labels', text: body };
  if (globs) return { kind: 'names', text: body };
  const words = globsOf(body);
  if (words.some((w) => w.startsWith('!'))) return { kind: 'labels', text: body };
  const isName = (w: string) => apps.some((a) => a.app === w);
  const isKey = (w: string) => apps.some((a) => a.labels && Object.prototype.hasOwnProperty.call(a.labels, w));
  const both = words.filter((w) => isName(w) && isKey(w));
  if (both.length)
    throw invalid(
      `wave \`${entry}\` is ambiguous: ${both.map((w) => `\`${w}\``).join(', ')} ${both.length === 1 ? 'is' : 'are'} the name of a selected app and a label key on selected apps. Write \`apps:${body}\` for the app${words.length > 1 ? 's' : ''}, or \`labels:${body}\` for the apps that have the label${words.length > 1 ? 's' : ''}.`,
      [`apps:${body}`, `labels:${body}`],
    );
  const names = words.filter(isName);
  const keys = words.filter(isKey);
  if (names.length && keys.length)
    throw invalid(
      `wave \`${entry}\` mixes app names (${names.map((w) => `\`${w}\``).join(', ')}) and label keys (${keys.map((w) => `\`${w}\``).join(', ')}): a wave is app-name globs or one label selector. ${WAVES_HELP}`,
    );
  return { kind: keys.length ? 'labels' : 'names', text: body };
}

function selectorOf(entry: string, text: string): LabelRequirement[] {
  try {
    const requirements = parseLabelSelector(text);
    if (!requirements.length) throw new LabelSelectorSyntaxError(text, 1, 'the selector is empty');
    return requirements;
  } catch (error) {
    if (!(error instanceof LabelSelectorSyntaxError)) throw error;
    throw new RollcallError(
      'invalid_selector',
      `wave \`${entry}\` is not a valid label selector: ${error.problem} (column ${error.at} of \`${text}\`). ${WAVES_HELP} Nothing was started.`,
    );
  }
}

/** One entry: what it selects, how, and its maxUpdate. Throws invalid_params / invalid_selector. */
export function parseWaveEntry(entry: string, apps: readonly WaveCandidate[]): WaveSpec {
  const { body, asked, maxUpdate } = splitMaxUpdate(entry);
  const { kind, text } = kindOf(entry, body, apps);
  if (kind === 'labels') {
    const requirements = selectorOf(entry, text);
    return {
      name: body,
      kind,
      patterns: [],
      requirements,
      ...(maxUpdate ? { maxUpdate, asked } : {}),
      matches: (a) => matchesLabels(a.labels, requirements),
    };
  }
  const patterns = globsOf(text);
  const match = patterns.length ? picomatch(patterns) : () => false;
  return {
    name: body,
    kind,
    patterns,
    requirements: [],
    ...(maxUpdate ? { maxUpdate, asked } : {}),
    matches: (a) => match(a.app),
  };
}

/** Every entry of `waves`, in order. Throws on the first malformed one, before anything is planned. */
export function parseWaves(waves: string | undefined, apps: readonly WaveCandidate[]): WaveSpec[] {
  return waveEntries(waves).map((entry) => parseWaveEntry(entry, apps));
}

/**
 * What a mistyped wave glob was probably meant to be: a name (`auth-config-prod-eu1`) is compared with
 * the apps' names, a prefix glob (`auth-confg-*`) with their dash-separated prefixes; other globs get none.
 */
function globSuggestions(pattern: string, apps: readonly WaveCandidate[]): string[] {
  const prefix = pattern.endsWith('*') ? pattern.slice(0, -1) : undefined;
  if (/[*?[\]{}!]/.test(prefix ?? pattern)) return [];
  if (prefix === undefined)
    return suggest(
      pattern,
      apps.map((a) => a.app),
      2,
    );
  const prefixes = new Set<string>();
  for (const { app } of apps)
    for (let at = app.indexOf('-'); at > 0; at = app.indexOf('-', at + 1)) prefixes.add(app.slice(0, at + 1));
  return suggest(prefix, prefixes, 2).map((p) => `${p}*`);
}

/**
 * Why a selector matches none of the apps, in terms of their labels: a key none of them has, or the values
 * its key does have; with the selector as it was probably meant.
 */
function selectorHint(spec: WaveSpec, apps: readonly WaveCandidate[]): { text: string; suggestions: string[] } {
  const keys = new Set(apps.flatMap((a) => Object.keys(a.labels ?? {})));
  const notes: string[] = [];
  const suggestions: string[] = [];
  for (const r of spec.requirements) {
    if (!keys.has(r.key)) {
      if (r.op === '!=' || r.op === 'notin' || r.op === '!') continue;
      const near = suggest(r.key, keys, 1)[0];
      notes.push(
        `no selected app has a label \`${r.key}\`${keys.size ? ` (their label keys: ${[...keys].sort().join(', ')})` : ' (they have no labels)'}`,
      );
      if (near) suggestions.push(spec.name.replace(r.key, near));
      continue;
    }
    const values = [...new Set(apps.map((a) => a.labels?.[r.key]).filter((v): v is string => v !== undefined))].sort();
    notes.push(`their \`${r.key}\` labels: ${values.join(', ')}`);
    if (r.op === '=' || r.op === 'in')
      for (const v of r.values.filter((v) => !values.includes(v))) {
        const near = suggest(v, values, 1)[0];
        if (near) suggestions.push(spec.name.replace(v, near));
      }
  }
  return { text: notes.length ? ` (${[...new Set(notes)].join('; ')})` : '', suggestions };
}

/**
 * A wave that matches none of the selected apps is a typo, not a plan: the apps it was meant for would go in
 * "(the rest)", out of the order asked for. Refused before the preview, naming it and what it was probably
 * meant to be. (A wave that matches only apps skipped as already Synced is a warning instead.)
 */
export function assertWaveSpecsMatch(selected: readonly WaveCandidate[], specs: readonly WaveSpec[]): void {
  const globs = [...new Set(specs.filter((s) => s.kind === 'names').flatMap((s) => s.patterns))];
  const unmatchedGlobs = globs.filter((p) => !selected.some((a) => picomatch(p)(a.app)));
  const unmatchedSelectors = specs.filter((s) => s.kind === 'labels' && !selected.some((a) => s.matches(a)));
  if (!unmatchedGlobs.length && !unmatchedSelectors.length) return;
  const of = `the ${plural(selected.length, 'selected app')}`;
  const sentences: string[] = [];
  const suggestions: string[] = [];
  if (unmatchedGlobs.length) {
    const one = unmatchedGlobs.length === 1;
    sentences.push(
      `wave pattern${one ? '' : 's'} ${unmatchedGlobs.map((p) => `\`${p}\``).join(', ')} match${one ? 'es' : ''} none of ${of}.`,
    );
    suggestions.push(...unmatchedGlobs.flatMap((p) => globSuggestions(p, selected)));
    // A plain word may have been meant as a label key (`tyer` for `tier`): it reads as one once it is spelled right.
    const keys = new Set(selected.flatMap((a) => Object.keys(a.labels ?? {})));
    suggestions.push(...unmatchedGlobs.filter((p) => !GLOB_CHARS.test(p)).flatMap((p) => suggest(p, keys, 1)));
  }
  for (const spec of unmatchedSelectors) {
    const hint = selectorHint(spec, selected);
    sentences.push(`wave selector \`${spec.name}\` matches none of ${of}${hint.text}.`);
    suggestions.push(...hint.suggestions);
  }
  throw invalid(`${sentences.join(' ')} ${WAVES_HELP}`, [...new Set(suggestions)]);
}
