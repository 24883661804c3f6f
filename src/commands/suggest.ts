import type { FleetView } from '../fleet/model.js';
import { suggest, suggestScored } from '../core/suggest.js';
import { CommandError } from './parse.js';

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
      message ??
        `No Argo CD instance named \`${word}\`. Configured instances: ${known.map((i) => `\`${i}\``).join(', ') || 'none'}.`,
      suggest(word, known, 3),
    );
  }
  const names = fleetNames(fleet);
  const groups: { kind: TargetKind; names: Iterable<string> }[] = [
    { kind: 'app', names: names.apps },
    { kind: 'appset', names: names.appSets },
    { kind: 'cluster', names: names.clusters },
  ];
  if (prefer === 'project')
    groups.unshift({ kind: 'project', names: new Set(fleet.apps().map((a) => a.app.spec?.project ?? '')) });
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
  let text =
    message ??
    `No ${KIND_LABEL[prefer]} named \`${word}\` on ${fleet.instances().length > 1 ? 'any instance' : 'this Argo CD'}.`;
  // Nothing of the expected kind is close: name what exists, when that is a short list (appsets usually are).
  if (!ranked.some((r) => r.preferred) && prefer === 'appset' && names.appSets.size > 0) {
    const all = [...names.appSets].sort();
    text += ` ApplicationSets: ${all
      .slice(0, 10)
      .map((n) => `\`${n}\``)
      .join(', ')}${all.length > 10 ? ` and ${all.length - 10} more` : ''}.`;
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
