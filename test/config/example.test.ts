import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXAMPLE_CONFIG, initConfig } from '../../src/cli/init.js';
import { parseConfig } from '../../src/config/load.js';
import { configSchema } from '../../src/config/schema.js';

const example = readFileSync(EXAMPLE_CONFIG, 'utf8');

describe('rollcall.example.yaml and rollcall init', () => {
  it('is accepted as it is, given its one secret', () => {
    const config = parseConfig(example, 'rollcall.example.yaml', { ARGOCD_TOKEN: 'token' });
    expect(config.instances.map((i) => i.name)).toEqual(['prod']);
    expect(config.slack).toBeUndefined();
  });

  it('names every top-level section of the config, each with a comment', () => {
    const lines = example.split('\n');
    for (const key of Object.keys(configSchema.shape)) {
      const at = lines.findIndex((l) => l.startsWith(`${key}:`) || l.startsWith(`# ${key}:`));
      expect(at, key).toBeGreaterThan(0);
      expect(lines[at - 1].startsWith('#') || lines[at].includes('#'), `${key} has a comment`).toBe(true);
    }
  });

  it('init writes the example and refuses to overwrite a file', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'rollcall-init-'));
    try {
      const file = path.join(dir, 'rollcall.yaml');
      expect(initConfig(file)).toBe(file);
      expect(readFileSync(file, 'utf8')).toBe(example);
      writeFileSync(file, 'mine: true\n');
      expect(() => initConfig(file)).toThrow(/already exists: not overwriting it/);
      expect(readFileSync(file, 'utf8')).toBe('mine: true\n');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
