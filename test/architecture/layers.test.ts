import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');
const DEPCRUISE = path.join(ROOT, 'node_modules/.bin/depcruise');
const CONFIG = path.join(ROOT, '.dependency-cruiser.cjs');

const trees: string[] = [];
afterAll(() => {
  for (const t of trees) rmSync(t, { recursive: true, force: true });
});

/** A throwaway project with these files under src/, checked by the project's own dependency rules. */
async function check(files: Record<string, string>): Promise<{ failed: boolean; output: string }> {
  const dir = mkdtempSync(path.join(tmpdir(), 'rollcall-layers-'));
  trees.push(dir);
  writeFileSync(
    path.join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', strict: true },
      include: ['src'],
    }),
  );
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, 'src', file)), { recursive: true });
    writeFileSync(path.join(dir, 'src', file), text);
  }
  try {
    const { stdout } = await run(DEPCRUISE, ['src', '--config', CONFIG], { cwd: dir });
    return { failed: false, output: stdout };
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string };
    return { failed: true, output: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}

// Each case spawns dependency-cruiser over the tree: seconds on a quiet machine, far more on a loaded one.
describe('the import rule (npm run lint:deps)', { timeout: 120_000 }, () => {
  it('passes on the real tree', async () => {
    const { stdout } = await run(DEPCRUISE, ['src', '--config', CONFIG], { cwd: ROOT });
    expect(stdout).toContain('no dependency violations found');
  });

  it('fails on an upward import: the fleet layer reaching into commands', async () => {
    const result = await check({
      'commands/status.ts': 'export const summary = 1;\n',
      'fleet/model.ts': "import { summary } from '../commands/status.js';\nexport const x = summary;\n",
    });
    expect(result.failed).toBe(true);
    expect(result.output).toMatch(/no-upward-from-fleet: src\/fleet\/model\.ts → src\/commands\/status\.ts/);
  });

  it('fails on a type-only upward import too: core naming a fleet type', async () => {
    const result = await check({
      'fleet/model.ts': 'export interface FleetApp { app: string }\n',
      'core/reply.ts': "import type { FleetApp } from '../fleet/model.js';\nexport type R = FleetApp;\n",
    });
    expect(result.failed).toBe(true);
    expect(result.output).toContain('no-upward-from-core');
  });

  it('fails on a cycle between siblings, and on domain code importing Slack or the simulator', async () => {
    const result = await check({
      'domain/runbooks/a.ts': "import { b } from '../incidents/b.js';\nexport const a = () => b;\n",
      'domain/incidents/b.ts': "import { a } from '../runbooks/a.js';\nexport const b = () => a;\n",
      'commands/post.ts':
        "import '@slack/bolt';\nimport { fixture } from '../sim/fixture.js';\nexport const f = fixture;\n",
      'sim/fixture.ts': 'export const fixture = {};\n',
    });
    expect(result.failed).toBe(true);
    expect(result.output).toContain('no-circular');
    expect(result.output).toContain('domain-without-slack');
    expect(result.output).toContain('only-cli-imports-sim');
  });

  it('fails on a cycle closed only by type imports', async () => {
    const result = await check({
      'fleet/model.ts':
        "import type { FleetEvent } from './events.js';\nexport interface FleetApp { app: string; last?: FleetEvent }\n",
      'fleet/events.ts': "import type { FleetApp } from './model.js';\nexport interface FleetEvent { app: FleetApp }\n",
    });
    expect(result.failed).toBe(true);
    expect(result.output).toMatch(/no-circular: src\/fleet\/(model|events)\.ts/);
  });

  it('fails when the audit stream imports a domain service above it, or surfaces code leaks into the domain', async () => {
    const result = await check({
      'domain/runbooks/engine.ts': 'export const engine = 1;\n',
      'domain/audit/audit-log.ts': "import { engine } from '../runbooks/engine.js';\nexport const a = engine;\n",
      'surfaces/slack/app.ts': 'export const app = 1;\n',
      'domain/alerts/post.ts': "import { app } from '../../surfaces/slack/app.js';\nexport const p = app;\n",
    });
    expect(result.failed).toBe(true);
    expect(result.output).toContain('audit-below-the-domain');
    expect(result.output).toContain('no-upward-from-domain');
  });
});
