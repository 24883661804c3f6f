import path from 'node:path';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');

/**
 * `npm test` lints the whole checkout. What tools write into it (the build `bin/rollcall.js` makes when there is no
 * dist/, as after `npm ci` and `npm run demo`) is not rollcall's code: linting it fails `npm test` on a user's
 * machine for thousands of bundled lines.
 */
describe('what npm test lints', () => {
  it('leaves out the builds tools write, and keeps every source, test and script', async () => {
    const eslint = new ESLint({ cwd: root });
    for (const written of ['.rollcall/build/b-1-2/main.js', '.rollcall/build/b-1-2/chunks/app-X.js', 'dist/main.js'])
      expect(await eslint.isPathIgnored(path.join(root, written)), written).toBe(true);
    for (const ours of ['src/main.ts', 'test/dev/lint-scope.test.ts', 'bench/scale.ts', 'scripts/dev-build.mjs'])
      expect(await eslint.isPathIgnored(path.join(root, ours)), ours).toBe(false);
  });
});
