import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/infra/config/load.js';
import { runSimCommand, simConfigYaml } from '../../src/sim/cli.js';
import { SIM_CHECKS } from '../../src/sim/metrics.js';
import { prometheusAvailable } from '../support/prometheus.js';
import { fixturePath, startTestSim } from '../support/sim.js';

const dir = mkdtempSync(path.join(tmpdir(), 'rollcall-sim-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('runSimCommand', () => {
  it('prints one argocd line per instance and writes a config that parses and reaches the simulator', async () => {
    const lines: string[] = [];
    const configFile = path.join(dir, 'rollcall.yaml');
    const server = await runSimCommand({
      fixture: fixturePath('sim-multi-instance.json'),
      port: 0,
      frozen: true,
      writeConfig: configFile,
      operator: 'sim-writer',
      out: (l) => lines.push(l),
      untilKilled: false,
    });
    try {
      expect(lines).toEqual([
        `argocd prod http://127.0.0.1:${server.port}/i/prod token=sim-prod-token`,
        `argocd staging http://127.0.0.1:${server.port}/i/staging token=staging-secret-token`,
      ]);
      const config = parseConfig(readFileSync(configFile, 'utf8'), configFile, { REDIS_URL: 'redis://127.0.0.1:6399' });
      expect(config.instances.map((i) => [i.name, i.url, i.token])).toEqual([
        ['prod', `${server.url}/i/prod`, 'sim-prod-token'],
        ['staging', `${server.url}/i/staging`, 'staging-secret-token'],
      ]);
      expect(config.redis.url).toBe('redis://127.0.0.1:6399');
      expect(parseConfig(readFileSync(configFile, 'utf8'), configFile, {}).redis.url).toBe('redis://127.0.0.1:6379');
      // The sandbox lets whoever runs `ask` here operate: the writer's identity, or $ROLLCALL_USER when the config is read.
      expect(config.access.operators).toEqual(['group:oncall']);
      expect(config.access.groups.oncall).toEqual(['sim-writer', 'oncall-2']);
      const asAlice = parseConfig(readFileSync(configFile, 'utf8'), configFile, {
        ROLLCALL_USER: 'alice',
        USER: 'bob',
      });
      expect(asAlice.access.groups.oncall).toEqual(['alice', 'oncall-2']);
      const res = await fetch(`${config.instances[1].url}/api/v1/applications`, {
        headers: { authorization: `Bearer ${config.instances[1].token}` },
      });
      expect(((await res.json()) as any).items).toHaveLength(2);
    } finally {
      await server.stop();
    }
  });

  it('lets a caller append its own access block without a duplicate key', async () => {
    const server = await startTestSim({ fixture: 'sim-single-no-clusters.json', frozen: true });
    try {
      const yaml = simConfigYaml(server, { redisUrl: 'redis://127.0.0.1:6379' }) + "\naccess:\n  admins: ['U1']\n";
      expect(parseConfig(yaml, 'demo', {}).access.admins).toEqual(['U1']);
    } finally {
      await server.stop();
    }
  });

  it('rejects a fixture with the path of each problem', async () => {
    const bad = path.join(dir, 'bad.json');
    const { writeFileSync } = await import('node:fs');
    writeFileSync(
      bad,
      JSON.stringify({
        instances: [
          {
            name: 'a',
            applications: [
              { metadata: {}, spec: {} },
              { metadata: { name: 'nowhere' }, spec: { destination: { namespace: 'x' } } },
            ],
            accounts: [{ name: 'bot', token: 't', allow: ['applications, sync'] }],
          },
          { name: 'a', applications: [] },
        ],
      }),
    );
    await expect(runSimCommand({ fixture: bad, untilKilled: false, out: () => {} })).rejects.toThrow(
      /instances\[0\]\.applications\[0\]\.metadata\.name: expected a non-empty string[\s\S]*instances\[0\]\.applications\[1\]\.spec\.destination: expected \{server\} or \{name\}[\s\S]*instances\[0\]\.accounts\[0\]: expected \{name, token, allow[\s\S]*instances\[1\]\.name: duplicate instance "a"/,
    );
  });
});

describe('fixture shapes the real API allows', () => {
  it('serves apps of the same name in two namespaces (apps in any namespace), and the bot counts both', async () => {
    const app = (namespace: string, health: string) => ({
      metadata: { name: 'payments', namespace },
      spec: {
        project: 'default',
        destination: { name: 'in-cluster', namespace: 'payments' },
        source: { repoURL: 'https://git.example.com/p.git', path: '.', targetRevision: 'HEAD' },
      },
      status: { sync: { status: 'Synced' }, health: { status: health } },
    });
    const server = await startTestSim({
      fixture: {
        instances: [{ name: 'main', applications: [app('team-a', 'Healthy'), app('team-b', 'Degraded')] as never }],
      },
    });
    try {
      const base = server.instances[0];
      const headers = { authorization: `Bearer ${base.token}` };
      const get = async (q: string) =>
        (await (await fetch(`${base.url}/api/v1/applications${q}`, { headers })).json()) as any;
      expect((await get('')).items.map((a: any) => a.metadata.namespace).sort()).toEqual(['team-a', 'team-b']);
      expect((await get('/payments?appNamespace=team-b')).status.health.status).toBe('Degraded');
      // A sync of one reaches that one only.
      const res = await fetch(`${base.url}/api/v1/applications/payments/sync`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ appNamespace: 'team-b', prune: true }),
      });
      expect(res.status).toBe(200);
      expect(
        (await get('/payments?appNamespace=team-b')).operation?.sync?.prune ??
          (await get('/payments?appNamespace=team-b')).status.operationState?.operation?.sync?.prune,
      ).toBe(true);
      const other = await get('/payments?appNamespace=team-a');
      expect(other.operation).toBeUndefined();
      expect(other.status.operationState).toBeUndefined();
      const { FleetMirror } = await import('../../src/fleet/mirror.js');
      const { createClients } = await import('../../src/infra/argocd/client.js');
      const { summarizeApps } = await import('../../src/fleet/status.js');
      const config = parseConfig(simConfigYaml(server), 'sim.yaml', {});
      const mirror = new FleetMirror(createClients(config), [{ name: 'main' }]);
      await mirror.start();
      try {
        expect(summarizeApps(mirror.apps()).total).toMatchObject({ apps: 2 });
        expect(
          mirror
            .apps()
            .map((a) => a.app.metadata.namespace)
            .sort(),
        ).toEqual(['team-a', 'team-b']);
      } finally {
        await mirror.stop();
      }
    } finally {
      await server.stop();
    }
  });

  it('serves an instance whose fixture leaves out applications, and lists in-cluster when apps deploy there', async () => {
    const { validateFixture, seedState } = await import('../../src/sim/fixture.js');
    const { SimState } = await import('../../src/sim/store.js');
    const fixture = validateFixture({
      instances: [
        { name: 'empty' },
        {
          name: 'mgmt',
          applications: [
            {
              metadata: { name: 'x', namespace: 'argocd' },
              spec: { project: 'default', destination: { server: 'https://kubernetes.default.svc', namespace: 'x' } },
            },
            {
              metadata: { name: 'y', namespace: 'argocd' },
              spec: { project: 'default', destination: { name: 'in-cluster', namespace: 'y' } },
            },
          ],
        },
      ],
    });
    const state = new SimState();
    seedState(state, fixture);
    expect(state.instance('empty')!.apps.size).toBe(0);
    expect([...state.instance('empty')!.clusters.values()]).toEqual([]);
    expect([...state.instance('mgmt')!.clusters.values()].map((c) => [c.name, c.server])).toEqual([
      ['in-cluster', 'https://kubernetes.default.svc'],
    ]);
  });
});

/** `rollcall sim ARGS` as a user starts it, with `env`; its stdout and stderr so far, and its exit. */
function spawnSim(args: string[], env: NodeJS.ProcessEnv) {
  const child = spawn(process.execPath, ['bin/rollcall.js', 'sim', ...args], {
    cwd: path.resolve(import.meta.dirname, '../..'),
    stdio: ['ignore', 'pipe', 'pipe'],
    env,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, stdout: () => stdout, stderr: () => stderr, lines: () => stdout.split('\n').filter(Boolean), exited };
}

/** This environment without PROMETHEUS_URL, with `PATH` as given. */
function envWith(pathDirs: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, PATH: pathDirs };
  delete env.PROMETHEUS_URL;
  return env;
}

/** `rollcall config check FILE`: its exit code and output. */
function configCheck(file: string): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ['bin/rollcall.js', 'config', 'check', file], {
    cwd: path.resolve(import.meta.dirname, '../..'),
    encoding: 'utf8',
    env: { ...process.env, REDIS_URL: 'redis://127.0.0.1:6379' },
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('rollcall sim', () => {
  it('serves a fixture on a free port until killed, printing its endpoints; without prometheus on PATH it says what to install and writes no checks', async () => {
    const configFile = path.join(dir, 'cli.yaml');
    // A PATH with no prometheus on it (and no PROMETHEUS_URL): node is started by its absolute path.
    const sim = spawnSim(
      ['--fixture', fixturePath('sim-multi-instance.json'), '--port', '0', '--frozen', '--write-config', configFile],
      envWith(mkdtempSync(path.join(dir, 'empty-path-'))),
    );
    try {
      await expect.poll(() => sim.lines().length, { timeout: 20_000 }).toBe(2);
      const [first] = sim.lines();
      const m = /^argocd prod (http:\/\/127\.0\.0\.1:\d+\/i\/prod) token=sim-prod-token$/.exec(first);
      expect(m).not.toBeNull();
      const res = await fetch(`${m![1]}/api/v1/applications?fields=items.metadata.name`, {
        headers: { authorization: 'Bearer sim-prod-token' },
      });
      expect(((await res.json()) as any).items).toHaveLength(6);
      const config = parseConfig(readFileSync(configFile, 'utf8'), configFile, {});
      expect(config.instances).toHaveLength(2);
      expect(config.prometheus).toBeUndefined();
      expect(config.checks).toEqual({});
      expect(sim.stderr()).toContain(
        'metric checks are off: no `prometheus` binary found and PROMETHEUS_URL is not set.',
      );
      expect(sim.stderr()).toContain('apt-get install --no-install-recommends prometheus');
      expect(sim.stdout()).not.toContain('prometheus');
    } finally {
      sim.child.kill('SIGTERM');
    }
  }, 30_000);

  it.skipIf(!prometheusAvailable)(
    'with prometheus on PATH, --write-config starts a private one scraping the simulator, writes prometheus.url and the error-rate check, and stops it on SIGTERM leaving no temp dir',
    async () => {
      const configFile = path.join(dir, 'canary.yaml');
      const sim = spawnSim(
        ['--scenario', 'canary-regression', '--port', '0', '--write-config', configFile],
        envWith(process.env.PATH ?? ''),
      );
      let exited = false;
      try {
        await expect.poll(() => sim.lines().length, { timeout: 25_000 }).toBe(2);
        const [argocd, prom] = sim.lines();
        const simUrl = /^argocd prod (http:\/\/127\.0\.0\.1:\d+)\/i\/prod token=/.exec(argocd)![1];
        const prometheusUrl = /^prometheus (http:\/\/127\.0\.0\.1:\d+)$/.exec(prom)?.[1];
        expect(prometheusUrl, prom).toBeDefined();

        const config = parseConfig(readFileSync(configFile, 'utf8'), configFile, {});
        expect(config.prometheus?.url).toBe(prometheusUrl);
        expect(config.checks['error-rate']).toMatchObject({
          query: SIM_CHECKS['error-rate'].query,
          failAbove: 0.05,
          window: 60_000,
          noData: 'fail',
        });
        expect(Object.keys(config.checks)).toEqual(['error-rate']);
        const check = configCheck(configFile);
        expect(check.stderr).toBe('');
        expect(check.status).toBe(0);
        expect(check.stdout).toContain(`prometheus ${prometheusUrl} scrapeInterval=5s`);
        expect(check.stdout).toContain('check error-rate failAbove 0.05 window=1m noData=fail');

        // It is a real Prometheus, scraping the simulator's /metrics.
        const targets = async () =>
          ((await (await fetch(`${prometheusUrl}/api/v1/targets`)).json()) as any).data.activeTargets.map(
            (t: any) => `${t.scrapeUrl} ${t.health}`,
          );
        await expect.poll(targets, { timeout: 15_000, interval: 500 }).toEqual([`${simUrl}/metrics up`]);
        const flags = ((await (await fetch(`${prometheusUrl}/api/v1/status/flags`)).json()) as any).data;
        const dataDir = path.dirname(flags['storage.tsdb.path']);
        expect(existsSync(dataDir)).toBe(true);

        sim.child.kill('SIGTERM');
        expect(await sim.exited).toBe(0);
        exited = true;
        expect(existsSync(dataDir)).toBe(false);
        await expect(fetch(`${prometheusUrl}/-/ready`)).rejects.toThrow();
      } finally {
        if (!exited) sim.child.kill('SIGTERM');
      }
    },
    45_000,
  );

  it('uses PROMETHEUS_URL when set, starting nothing, and refuses one that is not a URL', async () => {
    const configFile = path.join(dir, 'given.yaml');
    const given = spawnSim(
      ['--fixture', fixturePath('sim-single-no-clusters.json'), '--frozen', '--write-config', configFile],
      {
        ...envWith(mkdtempSync(path.join(dir, 'empty-path-'))),
        PROMETHEUS_URL: 'http://prometheus.monitoring.svc:9090/',
      },
    );
    try {
      await expect.poll(() => given.lines().length, { timeout: 20_000 }).toBe(2);
      expect(given.lines()[1]).toBe('prometheus http://prometheus.monitoring.svc:9090');
      const config = parseConfig(readFileSync(configFile, 'utf8'), configFile, {});
      expect(config.prometheus?.url).toBe('http://prometheus.monitoring.svc:9090');
      expect(Object.keys(config.checks)).toEqual(['error-rate']);
      expect(given.stderr()).toBe('');
    } finally {
      given.child.kill('SIGTERM');
    }
    const bad = spawnSim(['--fixture', fixturePath('sim-single-no-clusters.json'), '--write-config', configFile], {
      ...envWith(process.env.PATH ?? ''),
      PROMETHEUS_URL: 'prometheus:9090',
    });
    expect(await bad.exited).toBe(2);
    expect(bad.stderr()).toContain('PROMETHEUS_URL must be an http or https URL (got "prometheus:9090")');
    expect(bad.stdout()).toBe('');
  }, 45_000);
});
