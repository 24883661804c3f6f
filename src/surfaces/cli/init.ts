import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { RollcallError } from '../../core/errors.js';
import { packageFile } from '../../core/package-files.js';

/** The commented example shipped at the package root (beside src/ and dist/ alike). */
export const EXAMPLE_CONFIG = packageFile('rollcall.example.yaml');

/**
 * `rollcall init [FILE]`: writes the commented example config. Never overwrites: a config holds a team's
 * choices, and losing them to a typo is worse than asking the user to move the file first.
 */
export function initConfig(file: string): string {
  const target = path.resolve(file);
  if (existsSync(target))
    throw new RollcallError(
      'config_exists',
      `${target} already exists: not overwriting it (move it away, or pass another file name)`,
    );
  // `wx` refuses a file that appears between the check and the write.
  writeFileSync(target, readFileSync(EXAMPLE_CONFIG, 'utf8'), { flag: 'wx', mode: 0o600 });
  return target;
}
