import type { FleetApp } from './app.js';

/**
 * What a pass over the fleet's apps finds, kept per run of consecutive apps (a chunk) so the next pass redoes only
 * the chunks where an app changed. The mirror replaces an app's FleetApp (and its Application) on every change and
 * keeps each app at its place in `apps()`, so a chunk whose FleetApp objects are the same ones, at the same places,
 * holds the same apps in the same state. A chunk knows its apps by a number given to each FleetApp object, not by
 * the object: an app replaced since is not kept alive by it.
 * A builder must read nothing but the apps it is given (no clock, no other object) and keep no FleetApp: it names an
 * app by its place in the chunk, `from` + place in the list.
 */

/** Below this many apps a pass is cheap enough as it is. */
export const MIN_CHUNKED = 4096;
const CHUNK = 1024;

interface Chunk {
  ids: Float64Array;
  value: unknown;
}

let nextId = 1;
const ids = new WeakMap<FleetApp, number>();
function idOf(app: FleetApp): number {
  let id = ids.get(app);
  if (id === undefined) ids.set(app, (id = nextId++));
  return id;
}

interface Memo {
  chunks: Chunk[];
  /** The fleet's version when every chunk was last checked, and what they were then. */
  version?: number;
  checked?: { from: number; value: unknown }[];
}

// Per apps array (the fleet's own list, which the mirror edits in place), per builder.
const memos = new WeakMap<readonly FleetApp[], Map<(apps: readonly FleetApp[]) => unknown, Memo>>();

function same(kept: Float64Array, apps: readonly FleetApp[], from: number, to: number): boolean {
  if (kept.length !== to - from) return false;
  for (let i = from; i < to; i++) if (kept[i - from] !== idOf(apps[i])) return false;
  return true;
}

/**
 * `build` of each chunk of `apps`, in order, with where the chunk starts: kept from the last call where its apps are
 * the same objects. `version`, given when `apps` is the fleet's own list, is the fleet's version(): at the version of
 * the last check nothing changed, and no chunk is checked again.
 */
export function chunked<T>(
  apps: readonly FleetApp[],
  build: (apps: readonly FleetApp[]) => T,
  version?: number,
): { from: number; value: T }[] {
  let byBuilder = memos.get(apps);
  if (!byBuilder) memos.set(apps, (byBuilder = new Map()));
  let memo = byBuilder.get(build);
  if (!memo) byBuilder.set(build, (memo = { chunks: [] }));
  if (version !== undefined && memo.version === version && memo.checked)
    return memo.checked as { from: number; value: T }[];
  const chunks = memo.chunks;
  const count = Math.ceil(apps.length / CHUNK);
  chunks.length = Math.min(chunks.length, count);
  const out: { from: number; value: T }[] = [];
  for (let c = 0; c < count; c++) {
    const from = c * CHUNK;
    const to = Math.min(apps.length, from + CHUNK);
    const kept = chunks[c];
    if (!kept || !same(kept.ids, apps, from, to)) {
      const chunk = apps.slice(from, to);
      chunks[c] = { ids: Float64Array.from(chunk, idOf), value: build(chunk) };
    }
    out.push({ from, value: chunks[c].value as T });
  }
  memo.version = version;
  memo.checked = out;
  return out;
}
