import type { FleetApp } from './app.js';

/**
 * What a pass over the fleet's apps finds, kept per run of consecutive apps (a chunk) so the next pass redoes only
 * the chunks where an app changed. The mirror replaces an app's FleetApp (and its Application) on every change and
 * keeps each app at its place in `apps()`, telling each place it writes (`written`) on a list it tracks
 * (`trackWrites`): a chunk that was not written since it was built holds the same apps in the same state. Checking a
 * chunk is then one number, not one lookup per app: mid-incident most chunks have a changed app on every answer, and
 * looking up 50,000 apps cost a third of the answer. A chunk keeps no FleetApp, so none replaced since is kept alive.
 * A builder must read nothing but the apps it is given (no clock, no other object) and keep no FleetApp: it names an
 * app by its place in the chunk, `from` + place in the list. A list that is not tracked (a selection, made anew for
 * each answer) is passed over whole, once.
 */

/** Below this many apps a pass is cheap enough as it is. */
export const MIN_CHUNKED = 4096;
const CHUNK = 1024;

interface Chunk {
  /** How often the chunk had been written when it was built, and how many apps it held. */
  writes: number;
  length: number;
  value: unknown;
}

/** Per tracked list: how often each chunk of it was written in place. */
const writes = new WeakMap<readonly FleetApp[], number[]>();

/** Makes `apps` a list whose every write in place its owner tells through `written`, from now on. */
export function trackWrites(apps: readonly FleetApp[]): void {
  writes.set(apps, []);
}

/** Tells that the app at `position` of a tracked list was replaced, or appended there. */
export function written(apps: readonly FleetApp[], position: number): void {
  const counts = writes.get(apps);
  if (!counts) return;
  const c = Math.floor(position / CHUNK);
  counts[c] = (counts[c] ?? 0) + 1;
}

interface Memo {
  chunks: Chunk[];
  /** The fleet's version when every chunk was last checked, and what they were then. */
  version?: number;
  checked?: { from: number; value: unknown }[];
}

// Per tracked list, per builder.
const memos = new WeakMap<readonly FleetApp[], Map<(apps: readonly FleetApp[]) => unknown, Memo>>();

/** How many chunks a pass over `apps` is made of. */
export function chunkCount(apps: readonly FleetApp[]): number {
  return apps.length >= MIN_CHUNKED ? Math.ceil(apps.length / CHUNK) : 1;
}

/** The kept chunks of `apps` for `build`; undefined for a list that is not tracked. */
function memoOf(apps: readonly FleetApp[], build: (apps: readonly FleetApp[]) => unknown): Memo | undefined {
  if (!writes.has(apps)) return undefined;
  let byBuilder = memos.get(apps);
  if (!byBuilder) memos.set(apps, (byBuilder = new Map()));
  let memo = byBuilder.get(build);
  if (!memo) byBuilder.set(build, (memo = { chunks: [] }));
  return memo;
}

/** Chunk `c` of `apps` as kept, built anew when it was written since or never built. */
function chunkAt(memo: Memo, apps: readonly FleetApp[], build: (apps: readonly FleetApp[]) => unknown, c: number) {
  const from = c * CHUNK;
  const to = Math.min(apps.length, from + CHUNK);
  const times = writes.get(apps)![c] ?? 0;
  const kept = memo.chunks[c];
  if (kept && kept.writes === times && kept.length === to - from) return { from, value: kept.value, built: false };
  const value = build(apps.slice(from, to));
  memo.chunks[c] = { writes: times, length: to - from, value };
  return { from, value, built: true };
}

/**
 * `build` of each chunk of `apps`, in order, with where the chunk starts: kept from the last call where the chunk
 * was not written since. `version`, given when `apps` is the fleet's own list, is the fleet's version(): at the
 * version of the last check nothing changed, and no chunk is checked again. A list that is not tracked is one chunk.
 */
export function chunked<T>(
  apps: readonly FleetApp[],
  build: (apps: readonly FleetApp[]) => T,
  version?: number,
): { from: number; value: T }[] {
  const memo = memoOf(apps, build);
  if (!memo) return [{ from: 0, value: build(apps) }];
  if (version !== undefined && memo.version === version && memo.checked)
    return memo.checked as { from: number; value: T }[];
  const count = Math.ceil(apps.length / CHUNK);
  memo.chunks.length = Math.min(memo.chunks.length, count);
  const out: { from: number; value: T }[] = [];
  for (let c = 0; c < count; c++) {
    const { from, value } = chunkAt(memo, apps, build, c);
    out.push({ from, value: value as T });
  }
  memo.version = version;
  memo.checked = out;
  return out;
}

/**
 * Builds, as `chunked` would, the first chunk of the tracked list `apps` written since it was built (or never built),
 * and returns it; undefined when every chunk is as built, or the list is not tracked. A pass over a large list can
 * so go a chunk at a time with other work between, and the `chunked` that follows finds the chunks built.
 */
export function buildNextChunk<T>(
  apps: readonly FleetApp[],
  build: (apps: readonly FleetApp[]) => T,
): { from: number; value: T } | undefined {
  const memo = memoOf(apps, build);
  if (!memo) return undefined;
  const count = Math.ceil(apps.length / CHUNK);
  for (let c = 0; c < count; c++) {
    const chunk = chunkAt(memo, apps, build, c);
    if (chunk.built) return { from: chunk.from, value: chunk.value as T };
  }
  return undefined;
}
