#!/usr/bin/env node
// Three ways in, one program:
// - a production install (`npm run build`, then `npm ci --omit=dev`: the image) runs the compiled dist/main.js;
// - a clone (`npm ci`) runs src/ bundled into its build cache by scripts/dev-build.mjs, rebuilt whenever a file
//   that went into it changed, so it starts as fast as an install and never runs code older than src/;
// - a clone that cannot build (a read-only checkout, a syntax error) runs the sources through tsx, a devDependency.
// NODE_ENV=production picks dist/ even when src/ is present, so a server never compiles at start.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const compiled = new URL('../dist/main.js', import.meta.url);
const source = new URL('../src/main.ts', import.meta.url);
const clone = process.env.NODE_ENV !== 'production' && existsSync(source);

/** The clone's up-to-date build; undefined in an install (no scripts/) or when it cannot be built. */
async function cloneBuild() {
  try {
    const { devBuild } = await import('../scripts/dev-build.mjs');
    return await devBuild(fileURLToPath(new URL('..', import.meta.url)));
  } catch {
    return undefined;
  }
}

async function tsx() {
  try {
    return await import('tsx/esm/api');
  } catch {
    return undefined;
  }
}

const built = clone ? await cloneBuild() : undefined;
const runner = clone && !built ? await tsx() : undefined;
if (built) {
  // Stack traces name the bundle's functions; `NODE_OPTIONS=--enable-source-maps` turns them into src/ lines. Not by
  // default: reading the maps of every chunk loaded costs about 80 ms a start, the time the cache saves.
  await import(built);
} else if (runner) {
  runner.register();
  await import(source.href);
} else if (existsSync(compiled)) {
  await import(compiled.href);
} else {
  process.stderr.write(
    'rollcall: dist/main.js is missing: run `npm run build` (or `npm ci` with dev dependencies to run the sources)\n',
  );
  process.exit(2);
}
