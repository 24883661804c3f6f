import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { demo } from '../../src/surfaces/cli/demo.js';
import { prometheusAvailable } from '../support/prometheus.js';

async function waitFor(out: () => string, pattern: RegExp, timeoutMs = 30_000): Promise<RegExpMatchArray> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const m = pattern.exec(out());
    if (m) return m;
    if (Date.now() > deadline) throw new Error(`no ${pattern} in:\n${out()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('rollcall demo', () => {
  let redis: Redis | undefined;
  afterEach(() => redis?.disconnect());

  it('restores sealed-secrets keys end to end (sealed-secrets-migration): backup location set, a second person approves, and its Redis keys are gone after exit', async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    let text = '';
    output.on('data', (c) => (text += c));
    let prefix = '';
    const finished = demo({
      scenario: 'sealed-secrets-migration',
      speed: 50,
      input,
      output,
      prometheus: false,
      onReady: (info) => (prefix = info.prefix),
    });
    await waitFor(() => text, /argo> /);
    expect(text).toMatch(/own key prefix "rollcall-demo-/);
    expect(text).toContain('Key backups go to namespace sealed-secrets-backup on cluster ops.');
    expect(text).toContain('run restore-sealed-secrets-keys to=prod-new from=prod-old');

    input.write('run restore-sealed-secrets-keys to=prod-new from=prod-old\n');
    const runId = (await waitFor(() => text, /preview \((r-[a-z0-9]+)\)/))[1];
    input.write('1\n');
    await waitFor(() => text, /Waiting for approval: 0\/1/);
    // The requester may not approve their own restore; the second person may.
    const before = text.length;
    input.write(`runs approve ${runId}\n`);
    await waitFor(
      () => text.slice(before),
      /may not approve it: restore-sealed-secrets-keys needs approval from someone else/,
    );
    input.write(`as oncall-2 runs approve ${runId}\n`);
    await waitFor(() => text, new RegExp(`Restore sealed-secrets keys ${runId}: succeeded`));
    expect(text).toMatch(/SealedSecrets on prod-new: 0 of 5 Synced before, 5 of 5 after/);
    expect(text).toMatch(/approved by oncall-2/);

    redis = new Redis(process.env.REDIS_URL!);
    expect((await redis.keys(`${prefix}:*`)).length).toBeGreaterThan(0);
    input.end('exit\n');
    await finished;
    expect(text).toMatch(/bye\n$/);
    expect(await redis.keys(`${prefix}:*`)).toEqual([]);
  }, 90_000);

  it('has evaluated the alert rules by its first prompt: `alerts` on seed-outage lists the Degraded auth-service', async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    let text = '';
    output.on('data', (c) => (text += c));
    const finished = demo({ scenario: 'seed-outage', speed: 50, input, output, prometheus: false });
    try {
      await waitFor(() => text, /argo> /);
      // It fired in the terminal, the demo's notifier, before the prompt.
      expect(text.slice(0, text.indexOf('argo> '))).toMatch(
        /Degraded after sync: auth-service \(prod\): .*Firing since/,
      );
      const before = text.length;
      input.write('alerts\n');
      const answer = await waitFor(() => text.slice(before), /active alerts?[\s\S]*argo> /);
      expect(answer[0]).not.toContain('Nothing is firing');
      expect(answer[0]).toMatch(/a-[a-z0-9]+ Degraded after sync: auth-service \(prod\) — firing, 12 apps/);
      expect(answer[0]).toContain('12 apps of appset auth-service Degraded after a successful sync');
    } finally {
      input.end('exit\n');
      await finished;
    }
  }, 90_000);

  it('writes an incident report where it said, or where `--out DIR` typed after the command says, and prints the paths', async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    let text = '';
    output.on('data', (c) => (text += c));
    const dir = mkdtempSync(path.join(tmpdir(), 'rollcall-demo-report-'));
    const given = path.join(dir, 'default');
    const typed = path.join(dir, 'typed');
    const finished = demo({ scenario: 'seed-outage', speed: 50, input, output, prometheus: false, out: given });
    try {
      await waitFor(() => text, /argo> /);
      expect(text).toContain(`are written to ${given}.`);
      let before = text.length;
      input.write('incident start auth-service crash-looping sev=1 scope=auth-service-*\n');
      const id = (await waitFor(() => text.slice(before), /(INC-\d+)/))[1];
      await waitFor(() => text.slice(before), /argo> /);

      before = text.length;
      input.write(`incident report ${id}\n`);
      await waitFor(() => text.slice(before), /Wrote [\s\S]*argo> /);
      expect(text.slice(before).replace(/\s+/g, ' ')).toContain(
        `Wrote ${path.join(given, `${id}.md`)} and ${path.join(given, `${id}.png`)}.`,
      );

      before = text.length;
      input.write(`incident report ${id} --out ${typed}\n`);
      await waitFor(() => text.slice(before), /Wrote [\s\S]*argo> /);
      expect(text.slice(before).replace(/\s+/g, ' ')).toContain(
        `Wrote ${path.join(typed, `${id}.md`)} and ${path.join(typed, `${id}.png`)}.`,
      );
      expect(readFileSync(path.join(typed, `${id}.md`), 'utf8')).toContain(`# ${id}: auth-service crash-looping`);
      // A real PNG, 1600 px wide (IHDR), drawn from the seed-outage's Degraded auth-service apps.
      const png = readFileSync(path.join(typed, `${id}.png`));
      expect(png.toString('ascii', 1, 4)).toBe('PNG');
      expect(png.readUInt32BE(16)).toBe(1600);
    } finally {
      input.end('exit\n');
      await finished;
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);

  it('`alerts` on progressive-infra lists the stuck RollingSync step at once', async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    let text = '';
    output.on('data', (c) => (text += c));
    const finished = demo({ scenario: 'progressive-infra', speed: 50, input, output, prometheus: false });
    try {
      await waitFor(() => text, /argo> /);
      const before = text.length;
      input.write('alerts\n');
      const answer = await waitFor(() => text.slice(before), /active alerts?[\s\S]*argo> /);
      expect(answer[0]).not.toContain('Nothing is firing');
      expect(answer[0]).toMatch(/a-[a-z0-9]+ Stuck rollout step: progressive-infra step 3 \(infra\) — firing, 3 apps/);
      // The summary says what is wrong; how long it has been is said where the alert is drawn.
      expect(answer[0]).toMatch(
        /Step 3 of progressive-infra is stuck: 3 apps Pending\/Progressing longer than 15m\. Began 1h \d+m ago \(/,
      );
    } finally {
      input.end('exit\n');
      await finished;
    }
  }, 90_000);

  it('draws the prompt again after a run summary that arrives while it waits for input', async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    let text = '';
    output.on('data', (c) => (text += c));
    const finished = demo({ scenario: 'sealed-secrets-migration', speed: 50, input, output, prometheus: false });
    try {
      await waitFor(() => text, /argo> /);
      input.write('run backup-sealed-secrets-keys cluster=prod-old\n');
      const runId = (await waitFor(() => text, /preview \((r-[a-z0-9]+)\)/))[1];
      input.write('1\n');
      // The summary is printed by the notifier when the run ends, after the Confirm's answer and its prompt.
      await waitFor(() => text, new RegExp(`${runId}: succeeded[\\s\\S]*Steps`));
      await waitFor(() => text, new RegExp(`${runId}: succeeded[\\s\\S]*argo> $`), 5_000);
    } finally {
      input.end('exit\n');
      await finished;
    }
  }, 90_000);

  it.skipIf(!prometheusAvailable)(
    'canary-regression: a private Prometheus scrapes the simulator for the checks, and is gone with its data dir after exit',
    async () => {
      const input = new PassThrough();
      const output = new PassThrough();
      let text = '';
      output.on('data', (c) => (text += c));
      let ready: { simUrl: string; prometheusUrl?: string } | undefined;
      const finished = demo({
        scenario: 'canary-regression',
        speed: 50,
        input,
        output,
        onReady: (info) => (ready = info),
      });
      let dataDir = '';
      try {
        await waitFor(() => text, /argo> /);
        const url = ready?.prometheusUrl;
        expect(text).toContain(
          `prometheus ${url} (a private one scraping the simulator every 5 s, stopped on exit; checks error-rate and latency-p99)`,
        );
        expect(text).toContain('sync -l tier=canary');
        const targets = async () =>
          ((await (await fetch(`${url}/api/v1/targets`)).json()) as any).data.activeTargets.map(
            (t: any) => `${t.scrapeUrl} ${t.health}`,
          );
        await expect.poll(targets, { timeout: 15_000, interval: 500 }).toEqual([`${ready!.simUrl}/metrics up`]);
        dataDir = path.dirname(
          ((await (await fetch(`${url}/api/v1/status/flags`)).json()) as any).data['storage.tsdb.path'],
        );
        const before = text.length;
        input.write('status -l tier=canary\n');
        await waitFor(() => text.slice(before), /2 apps[\s\S]*argo> /);
      } finally {
        input.end('exit\n');
        await finished;
      }
      expect(dataDir).not.toBe('');
      expect(existsSync(dataDir)).toBe(false);
    },
    90_000,
  );

  it('runs without Prometheus (`npm run demo` on a bare machine): says metric checks are off and what to install', async () => {
    const emptyPath = mkdtempSync(path.join(tmpdir(), 'rollcall-demo-path-'));
    try {
      const env: NodeJS.ProcessEnv = { ...process.env, PATH: emptyPath };
      delete env.PROMETHEUS_URL;
      const child = spawn(process.execPath, ['bin/rollcall.js', 'demo', '--scenario', 'canary-regression'], {
        cwd: path.resolve(import.meta.dirname, '../..'),
        stdio: ['pipe', 'pipe', 'pipe'],
        env,
      });
      let stdout = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stdout += d.toString()));
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      await waitFor(() => stdout, /argo> /, 40_000);
      child.stdin.end('status\nexit\n');
      expect(await exited).toBe(0);
      expect(stdout).toContain('metric checks are off: no `prometheus` binary found and PROMETHEUS_URL is not set.');
      expect(stdout).toContain('sudo apt-get install --no-install-recommends prometheus');
      expect(stdout).toMatch(/24 apps/);
      expect(stdout).toMatch(/bye\n$/);
    } finally {
      rmSync(emptyPath, { recursive: true, force: true });
    }
  }, 60_000);
});
