import pino from 'pino';
import type { Services } from '../../src/commands/registry.js';
import { configSchema } from '../../src/infra/config/schema.js';
import { StaticFleet } from '../../src/fleet/model.js';
import { startSlack, type SlackHandle } from '../../src/surfaces/slack/app.js';
import { startFakeSlack, type FakeSlack } from '../support/fake-slack.js';
import { cleanPrefix, testPrefix } from '../runbooks/fake-argo.js';
import { startEngine, type EngineHandle } from '../../src/domain/runbooks/engine.js';
import { loadRunbooks, SHIPPED_RUNBOOKS_DIR } from '../../src/domain/runbooks/loader.js';
import { APPROVAL_RUNBOOK } from '../runbooks/harness.js';

export const SECRET = 'test-signing-secret-0123456789';

export interface Harness {
  fake: FakeSlack;
  slack: SlackHandle;
  services: Services;
  /** The Bolt endpoint, POST /slack/events. */
  url: string;
  stop(): Promise<void>;
}

/** Bolt's real HTTPReceiver on a free port, its Web API pointed at the fake; the fleet is static. */
export async function startHarness(opts: {
  fleet: Parameters<typeof StaticFleet.fromObjects>[0];
  channels?: string[];
  access?: Record<string, unknown>;
  /** Extra top-level config (runbooksDir, redis ...). */
  config?: Record<string, unknown>;
  /** Runs before Slack starts: attach services.runs, a live fleet, a notifier ... */
  configure?: (services: Services) => void | Promise<void>;
  notifierIntervalMs?: number;
  logger?: pino.Logger;
  /** Share a Redis prefix with another harness: two bot processes of one deployment. */
  redisPrefix?: string;
  /** Another Redis (e.g. one that is down). */
  redisUrl?: string;
}): Promise<Harness> {
  const fake = await startFakeSlack();
  // The bot remembers the requests it has seen (replays) in Redis: under a prefix of this test's own.
  const redis = { url: opts.redisUrl ?? process.env.REDIS_URL!, prefix: opts.redisPrefix ?? testPrefix() };
  const config = configSchema.parse({
    instances: opts.fleet.map((i) => ({
      name: i.name,
      url: `https://${i.name}.argocd.example`,
      token: 'argocd-token',
    })),
    slack: {
      mode: 'http',
      botToken: 'xoxb-test-token',
      signingSecret: SECRET,
      port: 0,
      apiUrl: fake.apiUrl,
      channels: opts.channels ?? [],
    },
    redis,
    ...(opts.access ? { access: opts.access } : {}),
    ...(opts.config ?? {}),
  });
  const services: Services = {
    config,
    fleet: StaticFleet.fromObjects(opts.fleet),
    argocd: new Map(),
    now: () => new Date('2026-12-02T18:00:00Z'),
  };
  await opts.configure?.(services);
  const slack = await startSlack(services, {
    logger: opts.logger ?? pino({ level: 'silent' }),
    notifierIntervalMs: opts.notifierIntervalMs ?? 100,
    redisUrl: redis.url,
  });
  return {
    fake,
    slack,
    services,
    url: `http://127.0.0.1:${slack.port}/slack/events`,
    async stop() {
      await slack.stop();
      await fake.stop();
      if (!opts.redisUrl) await cleanPrefix(redis.url, config.redis.prefix);
    },
  };
}

/**
 * A harness `configure` that starts the runbook engine in the bot role, with the shipped runbooks and the approval
 * one: no step runs here, so the runs stay where the test puts them. `started` receives the engine, to stop it.
 */
export function botRoleEngine(started: (engine: EngineHandle) => void): (services: Services) => Promise<void> {
  const runbooks = loadRunbooks(SHIPPED_RUNBOOKS_DIR);
  runbooks.set(APPROVAL_RUNBOOK.name, APPROVAL_RUNBOOK);
  return async (services) => {
    const engine = await startEngine(services, {
      role: 'bot',
      redisUrl: process.env.REDIS_URL!,
      prefix: services.config.redis.prefix,
      runbooks,
    });
    started(engine);
    services.runs = engine.runs;
    services.audit = engine.runs.audit;
  };
}
