// `npm run build`: src/ bundled into dist/ (entry dist/main.js, code loaded on demand in dist/chunks/).
// `--outDir DIR` writes the build elsewhere.
import { rmSync } from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';
import { bundleOptions } from './build-options.mjs';

const root = path.resolve(import.meta.dirname, '..');
const at = process.argv.indexOf('--outDir');
const outdir = at > 0 ? path.resolve(process.argv[at + 1]) : path.join(root, 'dist');

rmSync(outdir, { recursive: true, force: true });
await build(bundleOptions(root, outdir));
