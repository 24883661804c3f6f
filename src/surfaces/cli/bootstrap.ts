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
  /** The digest job schedulers (workers), once runs are enabled. */
  digests?: DigestSchedules;
  /**
   * Where alerts and digests are posted when services.notifier is not set: a worker without Bolt still
   * posts them through the Slack Web API.
   */
  outputNotifier?: Notifier;
  stop(): Promise<void>;
}

/**
 * Builds what every surface shares: one Argo CD client per instance, the live mirror of the
 * fleet (list + watch), and — when asked — the runbook engine. Slack, the terminal, schedules and
 * workers all go through these same objects.
 */
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

export async function startRuntime(
  config: RollcallConfig,
  opts: {
    logger: Logger;
    notifier?: Notifier;
    incidents?: IncidentSink;
    /** FleetMirrorOptions.follow */ follow?: boolean;
  },
): Promise<Runtime> {
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
  let engine: Awaited<ReturnType<typeof startEngine>> | undefined;
  let pausesRedis: RedisClient | undefined;
  let schedules: Schedules | undefined;
  let alertsRedis: RedisClient | undefined;
  const runtime: Runtime = {
    services,
    mirror,
    clients,
    adoptRun(runId) {
      engine?.adopt(runId);
    },
    async enableRuns({
      role,
      redisUrl,
      schedules: withSchedules = role !== 'bot',
      recorder: withRecorder = role !== 'bot',
      alerts: withAlerts = withSchedules,
      exclusive,
    }) {
      if (engine) return;
      const [
        { startEngine },
        { createRedis },
        { PauseStore },
        { ChangeLog },
        { ChangeRecorder },
        { IncidentService },
        { IncidentStore },
        { AlertStore },
        { FleetRecords },
      ] = await Promise.all([
        import('../../domain/runbooks/engine.js'),
        import('../../infra/redis.js'),
        import('../../domain/runbooks/rollout-pause.js'),
        import('../../domain/incidents/change-log.js'),
        import('../../domain/incidents/recorder.js'),
        import('../../domain/incidents/service.js'),
        import('../../domain/incidents/store.js'),
        import('../../domain/alerts/store.js'),
        import('../../domain/alerts/records.js'),
      ]);
      engine = await startEngine(services, {
        role,
        redisUrl,
        prefix: config.redis.prefix,
        logger: opts.logger,
        exclusive,
      });
      services.runs = engine.runs;
      services.audit = engine.runs.audit;
      pausesRedis = createRedis(redisUrl);
      services.pauses = new PauseStore(pausesRedis, config.redis.prefix);
      services.changes = new ChangeLog(pausesRedis, config.redis.prefix, config.changes.retention, opts.logger);
      services.incidents = new IncidentService(
        new IncidentStore(pausesRedis, config.redis.prefix, opts.logger),
        services.changes,
        mirror,
        {
          lookbackMs: config.incidents.lookback,
          mitigatedAfterMs: config.incidents.mitigatedAfter,
        },
      );
      // Always on wherever steps run: every worker records, the change log keeps each change once.
      if (withRecorder) {
        runtime.recorder = new ChangeRecorder(mirror, services.changes, { logger: opts.logger });
        await runtime.recorder.start();
      }
      // Schedules tick where steps run; BullMQ makes one job of each tick however many workers there are.
      if (withSchedules) {
        const { configuredSchedules, startSchedules } = await import('../workers/schedules.js');
        const wanted = configuredSchedules(config);
        if (wanted.length) {
          schedules = await startSchedules({ services, redisUrl, prefix: config.redis.prefix, logger: opts.logger });
          await schedules.upsertSchedules(wanted);
        }
      }
      alertsRedis = createRedis(redisUrl);
      services.alerts = new AlertStore(alertsRedis, config.redis.prefix);
      services.records = new FleetRecords(alertsRedis, config);
      // Alert rules and digests run where steps run; every such process may, and each alert and tick posts once.
      if (withAlerts) {
        const records = services.records;
        const [{ AlertManager }, replies] = await Promise.all([
          import('../../domain/alerts/manager.js'),
          import('../../commands/alerts.js'),
        ]);
        runtime.alerts = new AlertManager({
          fleet: mirror,
          config,
          store: services.alerts,
          output: alertOutput(() => services.notifier ?? runtime.outputNotifier, replies),
          incidents: opts.incidents ?? incidentSink(services.incidents),
          keyBackups: () => records.keyBackups(),
          logger: opts.logger.child({ component: 'alerts' }),
        });
        runtime.alerts.start();
      }
      if (withSchedules) {
        const { startDigestSchedules } = await import('../workers/digests.js');
        runtime.digests = await startDigestSchedules({
          services,
          notifier: () => services.notifier ?? runtime.outputNotifier,
          redisUrl,
          prefix: config.redis.prefix,
          logger: opts.logger.child({ component: 'digests' }),
        });
      }
    },
    async stop() {
      await runtime.recorder?.stop().catch(() => undefined);
      await runtime.alerts?.stop();
      await runtime.digests?.stop();
      await schedules?.stop();
      await engine?.stop();
      if (pausesRedis || alertsRedis) {
        const { closeRedis } = await import('../../infra/redis.js');
        if (pausesRedis) await closeRedis(pausesRedis);
        if (alertsRedis) await closeRedis(alertsRedis);
      }
      await mirror.stop();
    },
  };
  return runtime;
}
