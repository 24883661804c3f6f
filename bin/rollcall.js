#!/usr/bin/env node
// Two ways in, one program:
// - a clone (`npm ci`) runs the TypeScript sources through tsx, a devDependency, so nothing needs building first;
// - a production install (`npm run build`, then `npm ci --omit=dev`: the image) runs the compiled dist/main.js.
// NODE_ENV=production picks dist/ even when both are present, so a server never compiles at start.
import { existsSync } from 'node:fs';

const compiled = new URL('../dist/main.js', import.meta.url);
const source = new URL('../src/main.ts', import.meta.url);

async function tsx() {
  if (process.env.NODE_ENV === 'production' || !existsSync(source)) return undefined;
  try {
    return await import('tsx/esm/api');
  } catch {
    return undefined;
  }
}

const runner = await tsx();
if (runner) {
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
