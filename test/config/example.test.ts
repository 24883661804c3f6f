import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { EXAMPLE_CONFIG, initConfig } from '../../src/surfaces/cli/init.js';
import { parseConfig } from '../../src/infra/config/load.js';
import { configSchema } from '../../src/infra/config/schema.js';
import { runSimCommand } from '../../src/sim/cli.js';
import { SCENARIOS } from '../../src/sim/scenarios/index.js';

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

// Every config rollcall writes or ships is read by the strict file schema: no unknown key, every duration with a unit.
describe('configs rollcall writes and ships, under the strict schema', () => {
  it('rollcall init writes one that is accepted as it is', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'rollcall-init-'));
    try {
      const file = initConfig(path.join(dir, 'rollcall.yaml'));
      expect(parseConfig(readFileSync(file, 'utf8'), file, { ARGOCD_TOKEN: 'token' }).alerts.stuckAfter).toBe(
        15 * 60_000,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.each(Object.keys(SCENARIOS))(
    'rollcall sim --scenario %s --write-config writes one that is accepted as it is',
    async (scenario) => {
      const dir = mkdtempSync(path.join(tmpdir(), 'rollcall-sim-config-'));
      const file = path.join(dir, 'sim.yaml');
      const server = await runSimCommand({
        scenario,
        port: 0,
        frozen: true,
        writeConfig: file,
        operator: 'U0WRITER',
        out: () => {},
        untilKilled: false,
      });
      try {
        const config = parseConfig(readFileSync(file, 'utf8'), file, {});
        expect(config.instances.length).toBeGreaterThan(0);
        expect(config.access.groups.oncall).toEqual(['U0WRITER', 'oncall-2']);
        expect(config.kube.clusters.length).toBe(server.kube.length);
      } finally {
        await server.stop();
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  it("the Helm chart's config values are accepted as the chart renders them into rollcall.yaml", () => {
    const values = parse(
      readFileSync(path.resolve(import.meta.dirname, '../../deploy/helm/rollcall/values.yaml'), 'utf8'),
    );
    const env = {
      ARGOCD_TOKEN: 't',
      SLACK_BOT_TOKEN: 'xoxb',
      SLACK_SIGNING_SECRET: 's',
      REDIS_URL: 'redis://redis:6379',
    };
    expect(parseConfig(stringify(values.config), 'values.yaml', env).shutdown.grace).toBe(20_000);
  });
});
