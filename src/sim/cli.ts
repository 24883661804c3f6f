import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { stringify } from 'yaml';
import type { Fixture } from './fixture-types.js';
import { loadFixture } from './fixture.js';
import { kubeconfigYaml } from './kube/kubeconfig.js';
import { SIM_CHECKS, type SimCheckName } from './metrics.js';
import { loadScenario, type ScenarioBehaviour } from './scenarios/index.js';
import { startSimServer, type SimServer } from './server.js';

export type { SimServer } from './server.js';

export interface RunSimOptions {
  scenario?: string;
  fixture?: string;
  port?: number;
  speed?: number;
  frozen?: boolean;
  writeConfig?: string;
  /** Whom the written config lets operate: the terminal identity of whoever runs `rollcall sim` (the CLI passes it). */
  operator?: string;
  /** Where the endpoint lines go. @defaultValue process.stdout */
  out?: (line: string) => void;
  /** Serve until SIGINT/SIGTERM and then exit (the CLI). Tests pass false and call stop(). @defaultValue true */
  untilKilled?: boolean;
  /**
   * A Prometheus that scrapes the simulator's /metrics, found or started once the simulator listens (the CLI
   * passes one; the simulator starts no processes itself). Undefined: metric checks are off.
   */
  prometheus?: (server: SimServer) => Promise<SimPrometheus | undefined>;
}

/** A Prometheus scraping the simulator: its URL goes in the written config and the printed lines. */
export interface SimPrometheus {
  url: string;
  /** Seconds between its scrapes, when known (a Prometheus rollcall started). */
  scrapeIntervalS?: number;
  /** Stops what was started for the simulator (nothing, for a Prometheus it did not start). */
  stop(): Promise<void>;
}

/** What `rollcall sim` serves: the simulator, and the Prometheus scraping it when there is one. */
export interface SimRun extends SimServer {
  prometheus?: SimPrometheus;
}

/** One line per endpoint, as DESIGN.md fixes them: `argocd <name> <url> token=<token>`, `kube <cluster> <url>`. */
export function endpointLines(server: SimServer): string[] {
  return [
    ...server.instances.map((i) => `argocd ${i.name} ${i.url} token=${i.token}`),
    ...server.kube.map((k) => `kube ${k.cluster} ${k.url}`),
  ];
}

/**
 * The access block of a written simulator config. The simulator is a sandbox, so whoever runs `rollcall ask`
 * against it may operate: `operator` is that person as rollcall's terminal identity rule names them when the
 * config is written (the CLI passes it), and $ROLLCALL_USER, the rule's first choice, still wins when the config
 * is read, so a config written once serves whoever sets it. `oncall-2` is the second person for approvals.
 */
function simAccess(operator: string): string[] {
  // Single-quoted YAML: a quote inside is written twice.
  const self = `\${ROLLCALL_USER:-${operator}}`.replace(/'/g, "''");
  return [
    '# The simulator is a sandbox: you may run runbooks against it (`rollcall ask` acts as $ROLLCALL_USER,',
    `# else $USER, else your OS account: ${operator} when this was written). \`--as someone-else\` shows a refusal;`,
    '# `--as oncall-2` is a second person to approve runs that need one (`rollcall ask "runs approve ID" --as oncall-2`).',
    '# A real config lists Slack user ids.',
    'access:',
    '  groups:',
    `    oncall: ['${self}', oncall-2]`,
    "  operators: ['group:oncall']",
    '  # A sandbox: `--as` may pick any user here. A real config leaves this off (one person, one identity).',
    '  terminal: { allowActAs: true }',
  ];
}

/**
 * A complete rollcall.yaml pointing at the simulator. With `operator`, a sandbox access block lets that person
 * operate; without, `access` is left out: its defaults apply (read-only for everyone), and callers such as
 * `rollcall demo` append their own.
 */
export function simConfigYaml(
  server: SimServer,
  extra: {
    redisUrl?: string;
    redisPrefix?: string;
    kubeconfig?: string;
    operator?: string;
    /** A Prometheus scraping the simulator, and the checks over the simulator's metrics to write (SIM_CHECKS). */
    prometheus?: { url: string; scrapeIntervalS?: number; checks: SimCheckName[] };
  } = {},
): string {
  const config: Record<string, unknown> = {
    instances: server.instances.map((i) => ({ name: i.name, url: i.url, token: i.token, uiUrl: i.url })),
    ...(extra.kubeconfig && server.kube.length
      ? {
          kube: {
            clusters: server.kube.map((k) => ({ name: k.cluster, kubeconfig: extra.kubeconfig, context: k.cluster })),
          },
        }
      : {}),
    // The simulated `ops` cluster (sealed-secrets-migration) is where key backups go.
    ...(extra.kubeconfig && server.kube.some((k) => k.cluster === 'ops')
      ? { sealedSecrets: { backup: { cluster: 'ops', namespace: 'sealed-secrets-backup' } } }
      : {}),
    // Read at load time, so the same file works with the private Redis of tests or demo.
    redis: { url: extra.redisUrl ?? '${REDIS_URL:-redis://127.0.0.1:6379}', prefix: extra.redisPrefix ?? 'rollcall' },
    diagnose: { stuckAfter: '15m' },
    ...(extra.prometheus
      ? {
          prometheus: {
            url: extra.prometheus.url,
            ...(extra.prometheus.scrapeIntervalS ? { scrapeInterval: `${extra.prometheus.scrapeIntervalS}s` } : {}),
          },
          checks: Object.fromEntries(extra.prometheus.checks.map((name) => [name, { ...SIM_CHECKS[name] }])),
        }
      : {}),
  };
  return [
    `# rollcall.yaml for the fleet simulator at ${server.url} (written by \`rollcall sim --write-config\`).`,
    "# Tokens are the simulator's own; a real config reads them from the environment: token: ${ARGOCD_PROD_TOKEN}",
    // PromQL reads best on one line: no folding.
    stringify(config, { lineWidth: 0 }).trimEnd(),
    ...(extra.operator
      ? simAccess(extra.operator)
      : [
          '# access: defaults apply (read-only commands for everyone). To allow runbooks and syncs:',
          '# access:',
          "#   operators: ['U012ABCDEF']",
        ]),
    '',
  ].join('\n');
}

/** `rollcall sim`: load a scenario or fixture, serve it, print the endpoints, optionally write a config. */
export async function runSimCommand(opts: RunSimOptions): Promise<SimRun> {
  const out = opts.out ?? ((line: string) => process.stdout.write(`${line}\n`));
  let fixture: Fixture;
  let behaviour: ScenarioBehaviour | undefined;
  if (opts.fixture) fixture = loadFixture(path.resolve(opts.fixture));
  else ({ fixture, behaviour } = loadScenario(opts.scenario ?? 'seed-outage'));
  const server = await startSimServer({
    fixture,
    adoptFixture: true,
    port: opts.port ?? 0,
    speed: opts.speed,
    frozen: opts.frozen,
    scenarioBehaviour: behaviour,
  });
  let prometheus: SimPrometheus | undefined;
  const stop = async () => {
    await prometheus?.stop();
    await server.stop();
  };
  try {
    prometheus = await opts.prometheus?.(server);
    if (opts.writeConfig)
      writeSimConfig(server, path.resolve(opts.writeConfig), { operator: opts.operator, prometheus });
  } catch (error) {
    await stop();
    throw error;
  }
  for (const line of endpointLines(server)) out(line);
  if (prometheus) out(`prometheus ${prometheus.url}`);
  if (opts.untilKilled !== false) {
    const shutdown = () => {
      void stop().finally(() => process.exit(0));
    };
    process.once('SIGINT', shutdown);
    process.once('SIGTERM', shutdown);
  }
  return { ...server, prometheus, stop };
}

/** The config (and, with simulated clusters, the kubeconfig next to it) of `--write-config FILE`. */
function writeSimConfig(
  server: SimServer,
  file: string,
  opts: { operator?: string; prometheus?: SimPrometheus },
): void {
  let kubeconfig: string | undefined;
  if (server.kube.length) {
    kubeconfig = `${file.replace(/\.ya?ml$/, '')}.kubeconfig`;
    writeFileSync(
      kubeconfig,
      kubeconfigYaml(
        server.kube.map((k) => ({ name: k.cluster, server: k.url, token: k.token })),
        server.kubeCaPem,
      ),
      { mode: 0o600 },
    );
  }
  const prometheus = opts.prometheus && {
    url: opts.prometheus.url,
    scrapeIntervalS: opts.prometheus.scrapeIntervalS,
    checks: ['error-rate' as const],
  };
  writeFileSync(file, simConfigYaml(server, { kubeconfig, operator: opts.operator, prometheus }), { mode: 0o600 });
}
