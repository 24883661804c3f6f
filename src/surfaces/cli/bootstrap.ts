import type { ArgoApi } from '../../infra/argocd/api.js';
import { createClients } from '../../infra/argocd/client.js';
import { setDisplayTimeZone } from '../../core/format.js';
import type { RollcallConfig } from '../../infra/config/schema.js';
import { FleetMirror } from '../../fleet/mirror.js';
import type { Services } from '../../commands/registry.js';
import type { Notifier } from '../../core/notifier.js';
import type { startEngine } from '../../domain/runbooks/engine.js';
import type { RedisClient } from '../../infra/redis.js';
import type { Schedules } from '../workers/schedules.js';
import type { ChangeRecorder } from '../../domain/incidents/recorder.js';
import { incidentSink } from './incident-sink.js';
import type { Logger } from '../../infra/log.js';
import type { AlertManager, AlertOutput, IncidentSink } from '../../domain/alerts/manager.js';
import type { GuardWatcher } from '../../domain/guards/index.js';
import type { FreezeSweeper } from '../../domain/runbooks/freeze-sweep.js';
import type { Reply } from '../../core/reply.js';
import type { AlertRecord } from '../../domain/alerts/lifecycle.js';
import type { DigestSchedules } from '../workers/digests.js';

export interface Runtime {
  services: Services;
  mirror: FleetMirror;
  clients: Map<string, ArgoApi>;
  /** The change recorder, where this process runs one. */
  recorder?: ChangeRecorder;
  /**
   * Starts the runbook engine, the change log and incidents (Redis) on demand; read-only use never
   * needs Redis. `schedules` and `recorder` (default: any role but bot) run the schedules of
   * rollcall.yaml and the change recorder here; a one-shot `ask` runs neither. `alerts` (default: as
   * `schedules`) evaluates the alert rules here. `exclusive`: this process executes only the runs given to
   * `adoptRun` (ask --wait).
   */
  enableRuns(opts: {
    role: 'all' | 'bot' | 'worker';
    redisUrl: string;
    schedules?: boolean;
    recorder?: boolean;
    alerts?: boolean;
    exclusive?: boolean;
  }): Promise<void>;
  /** Lets an exclusive engine execute this run's steps. */
  adoptRun(runId: string): void;
  /** The alert rules' evaluator of this process (workers), once runs are enabled. */
  alerts?: AlertManager;
  /** The guards' sweeper (workers), once runs are enabled and checks are configured. */
  guards?: GuardWatcher;
  /** Removes the windows of spent for= freezes (workers), once runs are enabled. */
  freezeSweep?: FreezeSweeper;
  /** The digest job schedulers (workers), once runs are enabled. */
  digests?: DigestSchedules;
  /**
   * Where alerts and digests are posted when services.notifier is not set: a worker without Bolt still
   * posts them through the Slack Web API.
   */
  outputNotifier?: Notifier;
  stop(): Promise<void>;
}

/** Alert messages through whichever notifier the process has (Slack's is attached after the runtime starts). */
function alertOutput(
  find: () => Notifier | undefined,
  {
    alertReply,
    alertWorseReply,
  }: { alertReply: (a: AlertRecord) => Reply; alertWorseReply: (a: AlertRecord) => Reply },
): AlertOutput {
  const notifier = () => {
    const found = find();
    if (!found)
      throw new Error(
        'no Slack notifier in this process: alerts cannot be posted (is the `slack` section configured?)',
      );
    return found;
  };
  return {
    post: (target, alert) => notifier().post(target, alertReply(alert)),
    update: (message, alert) => notifier().update(message, alertReply(alert)),
    followUp: async (message, alert) => {
      await notifier().post({ channel: message.channel, threadTs: message.ts }, alertWorseReply(alert));
    },
  };
}

interface RuntimeOptions {
  logger: Logger;
  notifier?: Notifier;
  incidents?: IncidentSink;
  /** FleetMirrorOptions.follow */ follow?: boolean;
}

type EnableRunsOptions = Parameters<Runtime['enableRuns']>[0];

/** What enableRuns started, each set as soon as it exists so that stop ends whatever did start. */
interface Started {
  engine?: Awaited<ReturnType<typeof startEngine>>;
  pausesRedis?: RedisClient;
  schedules?: Schedules;
  alertsRedis?: RedisClient;
}

interface RuntimeContext {
  config: RollcallConfig;
  opts: RuntimeOptions;
  runtime: Runtime;
  started: Started;
}

/** Loaded only when runs are enabled: read-only use pays for neither BullMQ nor Redis. */
async function loadRunModules() {
  const [
    { startEngine },
    { createRedis },
    { PauseStore },
    { FreezeStore },
    { ChangeLog },
    { ChangeRecorder },
    { IncidentService },
    { IncidentStore },
    { AlertStore },
    { FleetRecords },
    { GuardStore, GuardWatcher },
    { RegressionStore },
    { FreezeSweeper },
  ] = await Promise.all([
    import('../../domain/runbooks/engine.js'),
    import('../../infra/redis.js'),
    import('../../domain/runbooks/rollout-pause.js'),
    import('../../domain/runbooks/freeze.js'),
    import('../../domain/incidents/change-log.js'),
    import('../../domain/incidents/recorder.js'),
    import('../../domain/incidents/service.js'),
    import('../../domain/incidents/store.js'),
    import('../../domain/alerts/store.js'),
    import('../../domain/alerts/records.js'),
    import('../../domain/guards/index.js'),
    import('../../domain/checks/regressions.js'),
    import('../../domain/runbooks/freeze-sweep.js'),
  ]);
  return {
    startEngine,
    createRedis,
    PauseStore,
    FreezeStore,
    ChangeLog,
    ChangeRecorder,
    IncidentService,
    IncidentStore,
    AlertStore,
    FleetRecords,
    GuardStore,
    GuardWatcher,
    RegressionStore,
    FreezeSweeper,
  };
}

type RunModules = Awaited<ReturnType<typeof loadRunModules>>;

/** The runbook engine, rollout pauses, the change log and incidents, all on Redis. */
async function startRunStores(
  { config, opts, runtime, started }: RuntimeContext,
  mods: RunModules,
  { role, redisUrl, exclusive }: EnableRunsOptions,
) {
  const { services, mirror } = runtime;
  const engine = await mods.startEngine(services, {
    role,
    redisUrl,
    prefix: config.redis.prefix,
    logger: opts.logger,
    exclusive,
  });
  started.engine = engine;
  services.runs = engine.runs;
  services.audit = engine.runs.audit;
  const pausesRedis = mods.createRedis(redisUrl);
  started.pausesRedis = pausesRedis;
  services.pauses = new mods.PauseStore(pausesRedis, config.redis.prefix);
  services.freezes = new mods.FreezeStore(pausesRedis, config.redis.prefix);
  services.guards = new mods.GuardStore(pausesRedis, config.redis.prefix);
  services.regressions = new mods.RegressionStore(pausesRedis, config.redis.prefix);
  const changes = new mods.ChangeLog(pausesRedis, config.redis.prefix, config.changes.retention, opts.logger);
  services.changes = changes;
  const incidents = new mods.IncidentService(
    new mods.IncidentStore(pausesRedis, config.redis.prefix, opts.logger),
    changes,
    mirror,
    {
      lookbackMs: config.incidents.lookback,
      mitigatedAfterMs: config.incidents.mitigatedAfter,
    },
  );
  services.incidents = incidents;
  return { changes, incidents };
}

async function startConfiguredSchedules({ config, opts, runtime, started }: RuntimeContext, redisUrl: string) {
  const { configuredSchedules, startSchedules } = await import('../workers/schedules.js');
  const wanted = configuredSchedules(config);
  if (!wanted.length) return;
  const schedules = await startSchedules({
    services: runtime.services,
    redisUrl,
    prefix: config.redis.prefix,
    logger: opts.logger,
  });
  started.schedules = schedules;
  await schedules.upsertSchedules(wanted);
}

/** The alert store and the fleet records (backups of keys), on their own Redis connection. */
function startAlertStores({ config, runtime, started }: RuntimeContext, mods: RunModules, redisUrl: string) {
  const alertsRedis = mods.createRedis(redisUrl);
  started.alertsRedis = alertsRedis;
  const alerts = new mods.AlertStore(alertsRedis, config.redis.prefix);
  const records = new mods.FleetRecords(alertsRedis, config);
  runtime.services.alerts = alerts;
  runtime.services.records = records;
  return { alerts, records };
}

async function startAlerts(
  { config, opts, runtime }: RuntimeContext,
  {
    alerts,
    records,
    incidents,
  }: ReturnType<typeof startAlertStores> & Pick<Awaited<ReturnType<typeof startRunStores>>, 'incidents'>,
) {
  const { services, mirror } = runtime;
  const [{ AlertManager }, replies] = await Promise.all([
    import('../../domain/alerts/manager.js'),
    import('../../commands/alerts.js'),
  ]);
  runtime.alerts = new AlertManager({
    fleet: mirror,
    config,
    store: alerts,
    output: alertOutput(() => services.notifier ?? runtime.outputNotifier, replies),
    incidents: opts.incidents ?? incidentSink(incidents),
    keyBackups: () => records.keyBackups(),
    regressions: async () => services.regressions?.list(Date.now()),
    freezes: async () => services.freezes?.list(),
    logger: opts.logger.child({ component: 'alerts' }),
  });
  runtime.alerts.start();
}

/** Guards are swept where alerts run: one process per interval takes the sweep (see GuardWatcher). */
function startGuards({ config, opts, runtime, started }: RuntimeContext, mods: RunModules): void {
  const { services } = runtime;
  if (!services.checks || !services.guards || !started.pausesRedis) return;
  runtime.guards = new mods.GuardWatcher({
    redis: started.pausesRedis,
    prefix: config.redis.prefix,
    store: services.guards,
    fleet: runtime.mirror,
    checks: services.checks,
    regressions: services.regressions,
    runs: services.runs,
    audit: services.audit,
    notifier: () => services.notifier ?? runtime.outputNotifier,
    alertsChannel: config.alerts.channel,
    everyMs: config.guards.every,
    logger: opts.logger.child({ component: 'guards' }),
  });
  runtime.guards.start();
}

/** Spent freezes are swept where alerts run: one process per interval takes the sweep (see FreezeSweeper). */
function startFreezeSweep({ config, opts, runtime, started }: RuntimeContext, mods: RunModules): void {
  const { services } = runtime;
  if (!services.freezes || !started.pausesRedis) return;
  runtime.freezeSweep = new mods.FreezeSweeper({
    redis: started.pausesRedis,
    prefix: config.redis.prefix,
    store: services.freezes,
    argocd: services.argocd,
    audit: services.audit,
    logger: opts.logger.child({ component: 'freezes' }),
  });
  runtime.freezeSweep.start();
}

async function startDigests({ config, opts, runtime }: RuntimeContext, redisUrl: string) {
  const { services } = runtime;
  const { startDigestSchedules } = await import('../workers/digests.js');
  runtime.digests = await startDigestSchedules({
    services,
    notifier: () => services.notifier ?? runtime.outputNotifier,
    redisUrl,
    prefix: config.redis.prefix,
    logger: opts.logger.child({ component: 'digests' }),
  });
}

async function enableRuns(ctx: RuntimeContext, runOpts: EnableRunsOptions): Promise<void> {
  const {
    role,
    schedules: withSchedules = role !== 'bot',
    recorder: withRecorder = role !== 'bot',
    alerts: withAlerts = withSchedules,
  } = runOpts;
  if (ctx.started.engine) return;
  const mods = await loadRunModules();
  const { changes, incidents } = await startRunStores(ctx, mods, runOpts);
  // Always on wherever steps run: every worker records, the change log keeps each change once.
  if (withRecorder) {
    ctx.runtime.recorder = new mods.ChangeRecorder(ctx.runtime.mirror, changes, { logger: ctx.opts.logger });
    await ctx.runtime.recorder.start();
  }
  // Schedules tick where steps run; BullMQ makes one job of each tick however many workers there are.
  if (withSchedules) await startConfiguredSchedules(ctx, runOpts.redisUrl);
  const stores = startAlertStores(ctx, mods, runOpts.redisUrl);
  // Alert rules and digests run where steps run; every such process may, and each alert and tick posts once.
  if (withAlerts) await startAlerts(ctx, { ...stores, incidents });
  if (withAlerts) startGuards(ctx, mods);
  if (withAlerts) startFreezeSweep(ctx, mods);
  if (withSchedules) await startDigests(ctx, runOpts.redisUrl);
}

async function stopRuntime(runtime: Runtime, started: Started): Promise<void> {
  const { pausesRedis, alertsRedis } = started;
  await runtime.recorder?.stop().catch(() => undefined);
  await runtime.alerts?.stop();
  await runtime.guards?.stop();
  await runtime.freezeSweep?.stop();
  await runtime.digests?.stop();
  await started.schedules?.stop();
  await started.engine?.stop();
  if (pausesRedis || alertsRedis) {
    const { closeRedis } = await import('../../infra/redis.js');
    if (pausesRedis) await closeRedis(pausesRedis);
    if (alertsRedis) await closeRedis(alertsRedis);
  }
  await runtime.mirror.stop();
}

/**
 * Builds what every surface shares: one Argo CD client per instance, the live mirror of the
 * fleet (list + watch), and — when asked — the runbook engine. Slack, the terminal, schedules and
 * workers all go through these same objects.
 */
export async function startRuntime(config: RollcallConfig, opts: RuntimeOptions): Promise<Runtime> {
  setDisplayTimeZone(config.display.timeZone);
  const clients = createClients(config) as Map<string, ArgoApi>;
  const mirror = new FleetMirror(
    clients,
    config.instances.map((i) => ({ name: i.name, uiUrl: i.uiUrl ?? i.url })),
    { logger: opts.logger, follow: opts.follow },
  );
  await mirror.start();
  const services: Services = { config, fleet: mirror, argocd: clients, notifier: opts.notifier, now: () => new Date() };
  // Loaded only where used: a one-shot `ask status` pays for neither the Kubernetes client nor BullMQ.
  if (config.kube.clusters.length)
    services.kube = await (await import('../../infra/kube/clients.js')).createKubeClients(config);
  if (Object.keys(config.checks).length)
    services.checks = new (await import('../../domain/checks/index.js')).CheckService(config);
  const started: Started = {};
  const runtime: Runtime = {
    services,
    mirror,
    clients,
    adoptRun(runId) {
      started.engine?.adopt(runId);
    },
    enableRuns: (runOpts) => enableRuns({ config, opts, runtime, started }, runOpts),
    stop: () => stopRuntime(runtime, started),
  };
  return runtime;
}
