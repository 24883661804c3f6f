import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { inflateSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimProcess } from '../support/sim-process.js';
import { cleanPrefix, testPrefix } from '../runbooks/fake-argo.js';

const root = path.resolve(import.meta.dirname, '../..');
const bin = path.join(root, 'bin/rollcall.js');
const exec = promisify(execFile);

interface Started {
  child: ChildProcess;
  log: () => string;
}

async function startRollcall(config: string): Promise<Started> {
  let log = '';
  const child = spawn(process.execPath, [bin, 'start', '--config', config], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, LOG_LEVEL: 'info' },
  });
  child.stderr!.on('data', (chunk) => (log += chunk));
  const deadline = Date.now() + 30_000;
  while (!log.includes('rollcall started')) {
    if (Date.now() > deadline || child.exitCode !== null) {
      child.kill('SIGKILL');
      throw new Error(`rollcall start did not start: ${log}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { child, log: () => log };
}

/** PNG signature, an 8-bit RGB(A) IHDR, and IDAT that inflates to height × (1 + width × bytes a pixel) bytes. */
function decodePngSize(png: Buffer): { width: number; height: number } {
  expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
  let at = 8;
  let width = 0;
  let height = 0;
  let channels = 0;
  const idat: Buffer[] = [];
  while (at < png.length) {
    const length = png.readUInt32BE(at);
    const type = png.toString('ascii', at + 4, at + 8);
    const data = png.subarray(at + 8, at + 8 + length);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      expect(data[8]).toBe(8);
      expect([2, 6]).toContain(data[9]);
      channels = data[9] === 6 ? 4 : 3;
    }
    if (type === 'IDAT') idat.push(data);
    at += 12 + length;
  }
  expect(inflateSync(Buffer.concat(idat)).length).toBe(height * (1 + width * channels));
  return { width, height };
}

describe('an incident against the seed-outage simulator, two rollcall start processes on one Redis', () => {
  let sim: ChildProcess;
  let dir: string;
  let config: string;
  const workers: Started[] = [];
  const prefix = testPrefix();

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'rollcall-incident-'));
    const simConfig = path.join(dir, 'sim.yaml');
    sim = (
      await startSimProcess(
        ['--scenario', 'seed-outage', '--port', '0', '--speed', '2', '--write-config', simConfig],
        (out) => /^argocd prod /m.test(out),
      )
    ).child;
    config = path.join(dir, 'rollcall.yaml');
    writeFileSync(
      config,
      `${readFileSync(simConfig, 'utf8').replace(/prefix: \S+/, `prefix: ${prefix}`)}\nhttp: { port: 0 }\n`,
    );
    workers.push(await startRollcall(config), await startRollcall(config));
  }, 60_000);

  afterAll(async () => {
    for (const w of workers) w.child.kill('SIGKILL');
    sim?.kill('SIGTERM');
    await cleanPrefix(process.env.REDIS_URL!, prefix);
  });

  async function ask(text: string, ...flags: string[]) {
    const { stdout } = await exec(process.execPath, [bin, 'ask', text, '--json', '--config', config, ...flags], {
      env: { ...process.env, ROLLCALL_USER: 'oncall-2', LOG_LEVEL: 'error' },
    }).catch((e) => e);
    return JSON.parse(stdout) as {
      ok: boolean;
      command: string;
      data: Record<string, any>;
      error?: { code: string; message: string };
    };
  }

  it('lists the auth-service deploys on 12 clusters as one group in `changes since=1h`, first: the apps went Degraded after it', async () => {
    const changes = await ask('changes since=1h');
    expect(changes.ok, JSON.stringify(changes.error)).toBe(true);
    const deploys = changes.data.changes.filter((c: any) => c.kind === 'deploy' && c.appSet === 'auth-service');
    expect(deploys).toHaveLength(12);
    expect(new Set(deploys.map((c: any) => c.cluster)).size).toBe(12);
    expect(deploys[0]).toMatchObject({
      instance: 'prod',
      revision: 'v2.15.0',
      previousRevision: 'v2.14.3',
      by: 'applicationset-controller',
    });
    const groups = changes.data.groups.filter((g: any) => g.kind === 'deploy' && g.subject === 'auth-service');
    expect(groups).toHaveLength(1);
    expect(groups[0].text).toMatch(
      /^auth-service: v2\.14\.3 → v2\.15\.0 on 12 clusters, \d\d:\d\d(–\d\d:\d\d)?, by applicationset-controller — then 12 apps went unhealthy$/,
    );
    // The cause first, the trouble it preceded next, though 44 other ApplicationSets deployed in the same minute.
    expect(changes.data.groups[0]).toMatchObject({ kind: 'deploy', subject: 'auth-service', troubleAfter: 12 });
    expect(changes.data.groups[1]).toMatchObject({ kind: 'health', subject: 'auth-service', bad: true });
    expect(changes.data.groups[1].text).toMatch(/^auth-service: 12 apps went Degraded on 12 clusters, /);
    expect(changes.data.groups.filter((g: any) => g.kind === 'deploy').length).toBeGreaterThan(40);
    // Newest first.
    const times = changes.data.changes.map((c: any) => Date.parse(c.at));
    expect(times).toEqual([...times].sort((a, b) => b - a));
  });

  it('records the whole response once: declare, bulk sync, note, mitigated, close, then the report with its files', async () => {
    const started = await ask('incident start auth-service crash-looping sev=1 scope=auth-service-*');
    expect(started.ok, JSON.stringify(started.error)).toBe(true);
    const id = started.data.id as string;
    expect(id).toMatch(/^INC-\d+$/);

    const sync = await ask('sync auth-config-* prune=true', '--yes', '--wait');
    expect(sync.ok, JSON.stringify(sync)).toBe(true);
    expect((await ask(`incident note ${id} synced auth-config with prune everywhere`)).ok).toBe(true);
    // Argo CD names rollcall's account; the change log credits the person who asked rollcall.
    const askedAt = Date.now();
    const fix = (await ask('changes since=10m kind=deploy auth-config-*')).data;
    // The simulator runs at --speed 2, yet stamps the time of day: the deploy is not later than the question.
    expect(fix.changes.length).toBe(12);
    for (const c of fix.changes) expect(Date.parse(c.at)).toBeLessThanOrEqual(askedAt);
    expect(fix.groups).toEqual([
      expect.objectContaining({ subject: 'auth-config', by: 'oncall-2', text: expect.stringContaining('by oncall-2') }),
    ]);
    // The two workers record auth-service going Healthy again.
    await expect
      .poll(
        async () =>
          (await ask(`incident timeline ${id} kind=health`)).data.timeline.filter((e: any) =>
            / → Healthy$/.test(e.text),
          ).length,
        { timeout: 45_000, interval: 1000 },
      )
      .toBe(12);
    expect((await ask(`incident status ${id} mitigated`)).ok).toBe(true);
    expect((await ask(`incident close ${id} bad session flags in auth-config`)).ok).toBe(true);

    const out = path.join(dir, 'report');
    const report = await ask(`incident report ${id}`, '--out', out);
    expect(report.ok, JSON.stringify(report.error)).toBe(true);
    const { metrics, blastRadius, timeline, changes, files } = report.data;

    const deploys = timeline.filter((e: any) => e.kind === 'deploy' && e.appSet === 'auth-service');
    expect(deploys).toHaveLength(12);
    expect(deploys.every((e: any) => Date.parse(e.at) < Date.parse(metrics.impactStart))).toBe(true);
    // Each change once, though two recorders saw it.
    const healed = timeline.filter(
      (e: any) => e.kind === 'health' && e.app?.startsWith('auth-service-') && / → Healthy$/.test(e.text),
    );
    expect(healed).toHaveLength(12);
    expect(new Set(healed.map((e: any) => e.app)).size).toBe(12);
    const synced = timeline.filter((e: any) => e.kind === 'run' && e.app?.startsWith('auth-config-'));
    expect(synced).toHaveLength(12);
    expect(
      timeline.filter((e: any) => e.kind === 'run' && /requested by oncall-2/.test(e.text) && !e.app),
    ).toHaveLength(1);
    expect(timeline.filter((e: any) => e.kind === 'note')).toEqual([
      expect.objectContaining({ source: 'human', text: 'synced auth-config with prune everywhere' }),
    ]);
    expect(timeline.filter((e: any) => e.kind === 'status').map((e: any) => e.text)).toEqual([
      expect.stringContaining('investigating → mitigated'),
    ]);
    expect(timeline.filter((e: any) => e.kind === 'declared')).toHaveLength(1);
    expect(timeline.filter((e: any) => e.kind === 'closed')).toHaveLength(1);

    const order = ['impactStart', 'detected', 'acknowledged', 'mitigated', 'resolved'].map((k) =>
      Date.parse(metrics[k]),
    );
    expect(order.every((t) => Number.isFinite(t))).toBe(true);
    expect(order).toEqual([...order].sort((a, b) => a - b));
    expect(metrics.warnings).toEqual([]);
    expect(metrics.ttm).toBe(Math.round((order[3] - order[0]) / 1000));
    expect(blastRadius).toMatchObject({ instances: 1, clusters: 12, appSets: 1, apps: 12, peakUnhealthy: 12 });
    expect(blastRadius.unhealthyAppMinutes).toBeGreaterThan(12 * 40);
    expect(changes.filter((c: any) => c.kind === 'deploy')).toHaveLength(12);

    expect(files).toEqual({ markdown: path.join(out, `${id}.md`), png: path.join(out, `${id}.png`) });
    const markdown = readFileSync(files.markdown, 'utf8');
    expect(markdown).toContain(`# ${id}: auth-service crash-looping`);
    const beforeImpact = markdown
      .split('## Changes before impact')[1]
      .split('\n')
      .filter((l) => l.startsWith('- '));
    expect(beforeImpact[0]).toMatch(
      /^- auth-service: v2\.14\.3 → v2\.15\.0 on 12 clusters, .* — then 12 apps went unhealthy$/,
    );
    expect(markdown).toContain('## Contributing factors');
    expect(existsSync(files.png)).toBe(true);
    expect(decodePngSize(readFileSync(files.png))).toMatchObject({ width: 1600 });

    // Both workers offered the same changes; the log kept one of each.
    const stats = await Promise.all(
      workers.map(async (w) => {
        const port = Number(/"http":(\d+)/.exec(w.log())![1]);
        const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
        const read = (name: string) => Number(new RegExp(`^${name} (\\d+)`, 'm').exec(text)![1]);
        return {
          recorded: read('rollcall_changes_recorded_total'),
          duplicates: read('rollcall_changes_duplicate_total'),
        };
      }),
    );
    // The second started after the first had backfilled: everything it backfilled was a duplicate.
    expect(stats[1].duplicates, JSON.stringify(stats)).toBeGreaterThan(0);
    expect(stats[0].recorded + stats[1].recorded, JSON.stringify(stats)).toBeGreaterThan(0);
  }, 120_000);
});
