// How src/ is bundled: by `npm run build` into dist/ (scripts/build.mjs), and by bin/rollcall.js in a clone into
// its build cache (scripts/dev-build.mjs). One file per import() boundary instead of a few thousand modules to
// resolve and read is what keeps a one-shot `rollcall ask` close to node's own start-up.
import path from 'node:path';

/**
 * Bolt's index loads every receiver it offers, and with them Socket Mode's client (with undici and ws), the
 * OAuth installer (with jsonwebtoken), and express with raw-body (and iconv-lite's tables) for ExpressReceiver.
 * A bot answering over HTTP runs none of them, yet they took about 5 MB of its heap and 1.3 MB of source text
 * held in memory. Inside Bolt, each of these packages is replaced by a stand-in that loads the real one from
 * node_modules the first time anything is read from it, which Bolt does only when it builds that receiver or
 * installer. Bolt reads them only as `require(x).Name` or through `__importStar`, which returns a module marked
 * `__esModule` as it is.
 */
const LAZY_IN_BOLT = ['@slack/socket-mode', '@slack/oauth', 'express', 'raw-body'];
const lazyInBolt = {
  name: 'lazy-in-bolt',
  setup(b) {
    const filter = new RegExp(`^(${LAZY_IN_BOLT.map((m) => m.replace(/[/.]/g, '\\$&')).join('|')})$`);
    b.onResolve({ filter }, (args) =>
      /[\\/]node_modules[\\/]@slack[\\/]bolt[\\/]/.test(args.importer)
        ? { path: args.path, namespace: 'lazy-in-bolt' }
        : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'lazy-in-bolt' }, (args) => ({
      loader: 'js',
      contents: `let real;
const load = () => (real ??= require(${JSON.stringify(args.path)}));
module.exports = new Proxy({}, {
  get: (_, key) => (key === '__esModule' ? true : key === 'default' && !load().__esModule ? load() : load()[key]),
  has: (_, key) => key in load(),
  ownKeys: () => Reflect.ownKeys(load()),
  getOwnPropertyDescriptor: (_, key) => ({ ...Reflect.getOwnPropertyDescriptor(load(), key), configurable: true }),
});`,
    }));
  },
};

/**
 * zod's namespace object re-exports all 64 of its message locales, so the bundle carried (and every process
 * compiled) 340 kB of translations for messages rollcall writes in English. zod itself uses only `en`, its default.
 */
const zodEnglishOnly = {
  name: 'zod-english-only',
  setup(b) {
    b.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
      /[\\/]node_modules[\\/]zod[\\/]/.test(args.importer)
        ? { path: path.resolve(path.dirname(args.importer), '../locales/index.js'), namespace: 'zod-english-only' }
        : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'zod-english-only' }, (args) => ({
      loader: 'js',
      resolveDir: path.dirname(args.path),
      contents: "export { default as en } from './en.js';",
    }));
  },
};

/**
 * axios' Node platform imports form-data (with mime-types and its 200 kB table) at load, to build multipart
 * bodies; rollcall sends JSON only. Inside axios, form-data becomes a class that loads the real one the first
 * time a multipart body is built, so a one-shot `ask` and a bot do not read and compile it at every start.
 */
const lazyFormData = {
  name: 'lazy-form-data',
  setup(b) {
    b.onResolve({ filter: /^form-data$/ }, (args) =>
      /[\\/]node_modules[\\/]axios[\\/]/.test(args.importer)
        ? { path: 'form-data', namespace: 'lazy-form-data' }
        : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'lazy-form-data' }, () => ({
      loader: 'js',
      contents: `let Real;
export default class FormData {
  constructor(...args) {
    Real ??= require('form-data');
    return new Real(...args);
  }
}`,
    }));
  },
};

/**
 * esbuild's options for bundling `src/main.ts` under `root` into `outdir` (entry `main.js`, the rest in `chunks/`).
 * @param {string} root
 * @param {string} outdir
 * @returns {import('esbuild').BuildOptions}
 */
export function bundleOptions(root, outdir) {
  return {
    absWorkingDir: root,
    outdir,
    entryPoints: ['src/main.ts'],
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
    // Bolt's lazily loaded parts (see lazyInBolt) are read from node_modules too: in the bundle their text would
    // be held in memory whether they ran or not. The incident chart's libraries load only for a report: resvg is
    // native code found beside its package, and Vega reaches for optional packages (canvas) it does without.
    external: [
      'bullmq',
      'ioredis',
      '@kubernetes/client-node',
      'form-data',
      ...LAZY_IN_BOLT,
      'vega',
      'vega-lite',
      '@resvg/resvg-js',
    ],
    plugins: [lazyInBolt, zodEnglishOnly, lazyFormData],
    // Bundled CommonJS packages call require() for node's built-ins; an ES module has none of its own.
    banner: {
      js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);",
    },
    // Less text for node to read and compile at every start; names stay, so stack traces still say which function.
    minifyWhitespace: true,
    minifySyntax: true,
    logLevel: 'warning',
  };
}
