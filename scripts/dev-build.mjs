// A clone's build cache: bin/rollcall.js runs src/ bundled by the same options as `npm run build`, so a clone
// starts as fast as an install, and rebuilds (esbuild, under a second) whenever a file that went into the bundle
// changed since. Stale code is never served: a build is reused only while every one of its inputs has the size and
// modification time it had when the build finished.
//
// Layout under `<root>/.rollcall/build/`: one directory per build (`b-<time>-<pid>/main.js, chunks/`) and
// `current.json` naming the build to run and its inputs. A build stays on disk while a process that runs it is
// alive (`.in-use-<pid>` markers): its chunks are loaded on demand, long after start.
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/** Read by esbuild or shaping its output without being an input of the bundle. */
const BUILD_FILES = ['tsconfig.json', 'package.json', 'scripts/build-options.mjs', 'scripts/dev-build.mjs'];

/** @param {string} root @param {string} file @returns {[string, number, number]} path, mtime (ms), size; -1 when absent */
function stamp(root, file) {
  const s = statSync(path.resolve(root, file), { throwIfNoEntry: false });
  return s ? [file, s.mtimeMs, s.size] : [file, -1, -1];
}

/** @param {string} cache @returns {{ build: string, inputs: [string, number, number][] } | undefined} */
function readCurrent(cache) {
  try {
    return JSON.parse(readFileSync(path.join(cache, 'current.json'), 'utf8'));
  } catch {
    return undefined;
  }
}

/** @param {string} root @param {{ build: string, inputs: [string, number, number][] }} current */
function upToDate(root, current) {
  for (const [file, mtime, size] of current.inputs) {
    const [, m, s] = stamp(root, file);
    if (m !== mtime || s !== size || m < 0) return false;
  }
  return true;
}

/** Marks build `dir` as run by this process until it exits. */
function holdWhileRunning(dir) {
  const marker = path.join(dir, `.in-use-${process.pid}`);
  writeFileSync(marker, '');
  process.once('exit', () => {
    try {
      unlinkSync(marker);
    } catch {}
  });
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}

/** Removes the builds no live process runs (or is writing), except `keep`. */
function removeUnused(cache, keep) {
  for (const entry of readdirSync(cache, { withFileTypes: true })) {
    if (!entry.isDirectory() || entry.name === keep) continue;
    const dir = path.join(cache, entry.name);
    const users = readdirSync(dir).filter((f) => f.startsWith('.in-use-'));
    if (users.some((f) => alive(Number(f.slice('.in-use-'.length))))) continue;
    rmSync(dir, { recursive: true, force: true });
  }
}

/** @param {string} root @param {string} cache @returns {Promise<string>} the new build's directory name */
async function rebuild(root, cache) {
  const { build } = await import('esbuild');
  const { bundleOptions } = await import('./build-options.mjs');
  const started = Date.now();
  const name = `b-${started.toString(36)}-${process.pid}`;
  const dir = path.join(cache, name);
  mkdirSync(dir, { recursive: true });
  // Before building, so a process cleaning up meanwhile leaves this directory alone.
  holdWhileRunning(dir);
  const result = await build({ ...bundleOptions(root, dir), metafile: true, logLevel: 'silent' });
  // Files only: the plugins' stand-ins are keyed `<namespace>:<path>` and come from BUILD_FILES.
  const files = Object.keys(result.metafile.inputs).filter((input) => !/^[a-z-]+:/.test(input));
  const inputs = [...files, ...BUILD_FILES].map((file) => stamp(root, file));
  // A file saved while esbuild was reading it may be in the bundle in its old version: recorded as changed, the next
  // start builds again. On a file system that keeps whole seconds (FAT, some network mounts), a second save in the
  // same second would keep the recorded time, so a file saved in the two seconds before the build counts as changed.
  for (const input of inputs) {
    const coarse = input[1] % 1000 === 0;
    if (input[1] >= started || (coarse && input[1] >= started - 2000)) input[1] = -1;
  }
  const next = path.join(cache, `current.json.${process.pid}`);
  writeFileSync(next, JSON.stringify({ build: name, inputs }));
  renameSync(next, path.join(cache, 'current.json'));
  removeUnused(cache, name);
  return name;
}

/**
 * The `file:` URL of `main.js` of an up-to-date build of `root`'s src/, built first when there is none; undefined
 * when it cannot be built (esbuild absent, a read-only clone, a syntax error), so the caller runs the sources
 * another way, which reports such an error its own way.
 * @param {string} root
 * @returns {Promise<string | undefined>}
 */
export async function devBuild(root) {
  const cache = path.join(root, '.rollcall', 'build');
  try {
    const current = readCurrent(cache);
    if (current && upToDate(root, current)) {
      const dir = path.join(cache, current.build);
      try {
        holdWhileRunning(dir);
        return pathToFileURL(path.join(dir, 'main.js')).href;
      } catch {
        // Its directory is gone (removed by hand): build again.
      }
    }
    const name = await rebuild(root, cache);
    return pathToFileURL(path.join(cache, name, 'main.js')).href;
  } catch {
    return undefined;
  }
}
