import { blastRadius, stateAt, type healthTracks } from './metrics.js';

type Track = ReturnType<typeof healthTracks>[number];

export interface GroupTracks {
  /** "All apps in scope", "ApplicationSet auth-service" or "cluster prod-eu-west-1" (apps no ApplicationSet owns). */
  label: string;
  total: number;
  peakUnhealthy: number;
  /** When any app of the group changed health inside the window, ascending, without repeats. */
  changes: number[];
  /** Apps of the group by health at time t. */
  countsAt(t: number): Map<string, number>;
}

function group(label: string, tracks: Track[], start: number, end: number): GroupTracks {
  // Most apps of a fleet never change during an incident: count them once, not once per point.
  const steady = new Map<string, number>();
  const moving: Track[] = [];
  const changes = new Set<number>();
  for (const track of tracks) {
    if (!track.transitions.length) {
      steady.set(track.initial, (steady.get(track.initial) ?? 0) + 1);
      continue;
    }
    moving.push(track);
    for (const tr of track.transitions) if (tr.at >= start && tr.at <= end) changes.add(tr.at);
  }
  return {
    label,
    total: tracks.length,
    peakUnhealthy: blastRadius(tracks, start, end).radius.peakUnhealthy,
    changes: [...changes].sort((a, b) => a - b),
    countsAt(t) {
      const counts = new Map(steady);
      for (const track of moving) {
        const s = stateAt(track, t);
        counts.set(s, (counts.get(s) ?? 0) + 1);
      }
      return counts;
    },
  };
}

/**
 * The whole scope first, then the ApplicationSets (apps without one: their cluster) that had
 * unhealthy apps, worst first, at most `max` of them.
 */
export function healthTracksByGroup(tracks: Track[], start: number, end: number, max: number): GroupTracks[] {
  const byGroup = new Map<string, Track[]>();
  for (const t of tracks) {
    const key = t.appSet ? `ApplicationSet ${t.appSet}` : `cluster ${t.cluster ?? '?'}`;
    const list = byGroup.get(key);
    if (list) list.push(t);
    else byGroup.set(key, [t]);
  }
  const groups = [...byGroup.entries()]
    .map(([label, list]) => group(label, list, start, end))
    .filter((g) => g.peakUnhealthy > 0)
    .sort((a, b) => b.peakUnhealthy - a.peakUnhealthy || a.label.localeCompare(b.label))
    .slice(0, max);
  return [group('All apps in scope', tracks, start, end), ...groups];
}
