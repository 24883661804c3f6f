import { distance } from 'fastest-levenshtein';
import type { FleetView } from '../fleet/model.js';
import { MAX_NAME_LENGTH, MAX_SUGGESTION_DISTANCE } from '../core/closest.js';
import { CommandError } from './parse.js';

/**
 * The closest candidates to a mistyped word, best first. Prefix and substring matches rank ahead of
 * edit distance because on-call types the start of a name ("payments" for payments-prod-us1).
 */
export function suggest(word: string, candidates: Iterable<string>, max = 3): string[] {
  return suggestScored(word, candidates, max).map((s) => s.name);
}

/** suggest() with the scores (lower is closer), to merge suggestions of several kinds of names. */
export function suggestScored(word: string, candidates: Iterable<string>, max = 3): { name: string; score: number }[] {
  const needle = word.toLowerCase();
  if (!needle || needle.length > MAX_NAME_LENGTH) return [];
  const limit = Math.min(MAX_SUGGESTION_DISTANCE, Math.max(2, Math.floor(needle.length / 3)));
  const scored: { name: string; score: number }[] = [];
  const seen = new Set<string>();
  for (const name of candidates) {
    if (seen.has(name)) continue;
    seen.add(name);
    const lower = name.toLowerCase();
    let score: number;
    if (lower === needle) score = 0;
    else if (lower.startsWith(needle)) score = 1 + (lower.length - needle.length) / 1000;
    else if (needle.length >= 3 && lower.includes(needle)) score = 2 + (lower.length - needle.length) / 1000;
    else {
      // Cheap bound first: names far longer or shorter cannot be within the limit.
      if (Math.abs(lower.length - needle.length) > limit) continue;
      const d = distance(needle, lower);
      if (d > limit) continue;
      score = 3 + d;
    }
    scored.push({ name, score });
  }
  scored.sort((a, b) => a.score - b.score || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return scored.slice(0, max);
}

/** Names of apps, appsets and clusters across the fleet, for "did you mean". */
export function fleetNames(fleet: FleetView): { apps: Set<string>; appSets: Set<string>; clusters: Set<string> } {
  const apps = new Set<string>();
  const clusters = new Set<string>();
  for (const a of fleet.apps()) {
    apps.add(a.app.metadata.name);
    clusters.add(a.cluster);
  }
  for (const c of fleet.clusters()) if (c.cluster.name) clusters.add(c.cluster.name);
  const appSets = new Set(fleet.appSets().map((s) => s.appSet.metadata.name));
  return { apps, appSets, clusters };
}

export type TargetKind = 'app' | 'appset' | 'cluster' | 'instance' | 'project';

/**
 * An unknown_target error with the closest app, appset and cluster names (labelled, so on-call sees
 * which kind of name it was). `prefer` puts the expected kind first.
 */
export function unknownTarget(fleet: FleetView, word: string, prefer: TargetKind, message?: string): CommandError {
  // Instances are few and named in the config: list them all rather than guess among apps and clusters.
  if (prefer === 'instance') {
    const known = fleet.instances();
    return new CommandError(
      'unknown_target',
      message ?? `No Argo CD instance named \`${word}\`. Configured instances: ${known.map((i) => `\`${i}\``).join(', ') || 'none'}.`,
      suggest(word, known, 3),
    );
  }
  const names = fleetNames(fleet);
  const groups: { kind: TargetKind; names: Iterable<string> }[] = [
    { kind: 'app', names: names.apps },
    { kind: 'appset', names: names.appSets },
    { kind: 'cluster', names: names.clusters },
  ];
  if (prefer === 'project') groups.unshift({ kind: 'project', names: new Set(fleet.apps().map((a) => a.app.spec?.project ?? '')) });
  groups.sort((a, b) => Number(b.kind === prefer) - Number(a.kind === prefer));
  // One ranking across kinds: `auth-servic` is closest to the appset auth-service, not to its apps.
  const ranked: { label: string; score: number; preferred: boolean }[] = [];
  for (const g of groups) {
    for (const { name, score } of suggestScored(word, g.names, 3)) {
      ranked.push({ label: g.kind === prefer ? name : `${name} (${g.kind})`, score, preferred: g.kind === prefer });
    }
  }
  ranked.sort((a, b) => a.score - b.score || Number(b.preferred) - Number(a.preferred));
  const suggestions = ranked.map((r) => r.label);
  let text = message ?? `No ${KIND_LABEL[prefer]} named \`${word}\` on ${fleet.instances().length > 1 ? 'any instance' : 'this Argo CD'}.`;
  // Nothing of the expected kind is close: name what exists, when that is a short list (appsets usually are).
  if (!ranked.some((r) => r.preferred) && prefer === 'appset' && names.appSets.size > 0) {
    const all = [...names.appSets].sort();
    text += ` ApplicationSets: ${all.slice(0, 10).map((n) => `\`${n}\``).join(', ')}${all.length > 10 ? ` and ${all.length - 10} more` : ''}.`;
  }
  return new CommandError('unknown_target', text, suggestions.slice(0, 6));
}

const KIND_LABEL: Record<TargetKind, string> = {
  app: 'application',
  appset: 'ApplicationSet',
  cluster: 'cluster',
  instance: 'Argo CD instance',
  project: 'project',
};
