import type { FleetApp } from './app.js';

/**
 * What a pass over the fleet's apps finds, kept per run of consecutive apps (a chunk) so the next pass redoes only
 * the chunks where an app changed. The mirror replaces an app's FleetApp (and its Application) on every change and
 * keeps each app at its place in `apps()`, so a chunk whose FleetApp objects are the same ones, at the same places,
 * holds the same apps in the same state: comparing references is the whole check, and is far cheaper than the pass.
 * A builder must read nothing but the apps it is given: no clock, no other object.
 */

/** Below this many apps a pass is cheap enough as it is. */
export const MIN_CHUNKED = 4096;
const CHUNK = 1024;

interface Chunk {
  refs: FleetApp[];
  value: unknown;
}

// Per apps array (the fleet's own list, which the mirror edits in place), per builder.
const memos = new WeakMap<readonly FleetApp[], Map<(apps: readonly FleetApp[]) => unknown, Chunk[]>>();

function sameRefs(refs: readonly FleetApp[], apps: readonly FleetApp[], from: number): boolean {
  for (let i = 0; i < refs.length; i++) if (refs[i] !== apps[from + i]) return false;
  return true;
}

/** `build` of each chunk of `apps`, in order: kept from the last call where the chunk's apps are the same objects. */
export function chunked<T>(apps: readonly FleetApp[], build: (apps: readonly FleetApp[]) => T): T[] {
  let byBuilder = memos.get(apps);
  if (!byBuilder) memos.set(apps, (byBuilder = new Map()));
  let chunks = byBuilder.get(build);
  if (!chunks) byBuilder.set(build, (chunks = []));
  const count = Math.ceil(apps.length / CHUNK);
  chunks.length = Math.min(chunks.length, count);
  const out: T[] = [];
  for (let c = 0; c < count; c++) {
    const from = c * CHUNK;
    const to = Math.min(apps.length, from + CHUNK);
    const kept = chunks[c];
    if (!kept || kept.refs.length !== to - from || !sameRefs(kept.refs, apps, from)) {
      const refs = apps.slice(from, to);
      chunks[c] = { refs, value: build(refs) };
    }
    out.push(chunks[c].value as T);
  }
  return out;
}
