// `npm run build`: src/ bundled into dist/ (entry dist/main.js, code loaded on demand in dist/chunks/).
// One file per import() boundary instead of a few thousand modules to resolve and read is what keeps a
// one-shot `rollcall ask` close to node's own start-up. `--outDir DIR` writes the build elsewhere.
import { rmSync } from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';

const root = path.resolve(import.meta.dirname, '..');
const at = process.argv.indexOf('--outDir');
const outdir = at > 0 ? path.resolve(process.argv[at + 1]) : path.join(root, 'dist');

rmSync(outdir, { recursive: true, force: true });
await build({
  absWorkingDir: root,
  entryPoints: ['src/main.ts'],
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20.19',
  sourcemap: true,
  // As tsc's maps did: lines point into src/, which the image does not ship; the text is not repeated in the maps.
  sourcesContent: false,
  chunkNames: 'chunks/[name]-[hash]',
  // Loaded from node_modules at run time, as installed: BullMQ starts processes and loads native code from files
  // next to its own, ioredis must be the very instance BullMQ uses, and the Kubernetes client is loaded only by
  // the runbooks that talk to clusters.
  external: ['bullmq', 'ioredis', '@kubernetes/client-node'],
  // Bundled CommonJS packages call require() for node's built-ins; an ES module has none of its own.
  banner: { js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);" },
  // Less text for node to read and compile at every start; names stay, so stack traces still say which function.
  minifyWhitespace: true,
  minifySyntax: true,
  logLevel: 'warning',
});
