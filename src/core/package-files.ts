import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * A file shipped next to the code (runbooks/, rollcall.example.yaml), found by walking up from this module to the
 * package root (the directory holding package.json): the sources run from src/<layer>/, the bundled build from
 * dist/ or dist/chunks/, whichever chunk this code landed in.
 */
export function packageFile(name: string): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`no package.json above ${fileURLToPath(import.meta.url)}: cannot find ${name}`);
    dir = parent;
  }
  return path.join(dir, name);
}
