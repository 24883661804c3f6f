import type { ArgoApi } from '../../src/infra/argocd/api.js';
import type { Application } from '../../src/infra/argocd/types.js';
import type { Services } from '../../src/commands/registry.js';
import type { MessageRef, Notifier } from '../../src/core/notifier.js';
import type { Reply } from '../../src/core/reply.js';
import type { RollcallConfig } from '../../src/infra/config/schema.js';
import { startEngine, type EngineHandle, type EngineOptions } from '../../src/domain/runbooks/engine.js';
import { loadRunbooks, parseRunbook, SHIPPED_RUNBOOKS_DIR } from '../../src/domain/runbooks/loader.js';
import type { Runbook } from '../../src/domain/runbooks/schema.js';
import { cleanPrefix, FakeArgo, LiveFleet, testConfig, testPrefix } from './fake-argo.js';

/** Records posts and updates like a Slack channel would show them. */
export class RecordingNotifier implements Notifier {
  readonly posts: { target: { channel: string; threadTs?: string }; reply: Reply; at: number }[] = [];
  readonly updates: { ref: MessageRef; reply: Reply; at: number }[] = [];
  async post(target: { channel: string; threadTs?: string }, reply: Reply): Promise<MessageRef> {
    this.posts.push({ target, reply, at: Date.now() });
    return {
      channel: target.channel,
      ts: `1700000000.${String(this.posts.length).padStart(6, '0')}`,
      threadTs: target.threadTs,
    };
  }
  async update(ref: MessageRef, reply: Reply): Promise<void> {
    this.updates.push({ ref, reply, at: Date.now() });
  }
}

export const APPROVAL_RUNBOOK = parseRunbook(
  `name: guarded-sync
title: Guarded sync
params:
  selector: { type: selector, required: true }
access:
  runners: [U_REQ, group:oncall]
  approval: { required: 2, approvers: [U_AP1, U_AP2, U_REQ, group:leads] }
steps:
  - id: sync
    action: bulk-sync
    with: { selector: "\${{ params.selector }}", gate: none }
`,
  'guarded-sync.yaml',
).runbook!;

export interface Harness {
  engine: EngineHandle;
  fleet: LiveFleet;
  argo: FakeArgo;
  notifier: RecordingNotifier;
  services: Services;
  prefix: string;
  redisUrl: string;
  /** Another engine process on the same Redis and fleet (a second worker). */
  startAnother(opts?: Partial<EngineOptions>): Promise<EngineHandle>;
  close(): Promise<void>;
}

export const FAST: Partial<EngineOptions> = {
  timing: { lockDurationMs: 1500, stalledIntervalMs: 500, maxStalledCount: 10 },
  progressIntervalMs: 150,
  controlPollMs: 40,
  retryBackoffMs: 50,
};

export async function harness(
  apps: Application[],
  opts: { config?: RollcallConfig; engine?: Partial<EngineOptions>; runbooks?: Runbook[] } = {},
): Promise<Harness> {
  const redisUrl = process.env.REDIS_URL!;
  const prefix = testPrefix();
  const fleet = new LiveFleet(['argo-test']);
  for (const a of apps) fleet.put('argo-test', a);
  const argo = new FakeArgo('argo-test', fleet);
  const notifier = new RecordingNotifier();
  const services: Services = {
    config: opts.config ?? testConfig(),
    fleet,
    argocd: new Map([['argo-test', argo as unknown as ArgoApi]]),
    notifier,
  };
  const runbooks = loadRunbooks(SHIPPED_RUNBOOKS_DIR);
  for (const r of opts.runbooks ?? []) runbooks.set(r.name, r);
  const base: EngineOptions = { role: 'all', redisUrl, prefix, runbooks, ...FAST, ...opts.engine };
  const engine = await startEngine(services, base);
  services.runs = engine.runs;
  services.audit = engine.runs.audit;
  const others: EngineHandle[] = [];
  return {
    engine,
    fleet,
    argo,
    notifier,
    services,
    prefix,
    redisUrl,
    async startAnother(extra = {}) {
      const e = await startEngine(services, { ...base, ...extra });
      others.push(e);
      return e;
    },
    async close() {
      argo.stop();
      await engine.stop().catch(() => {});
      for (const o of others) await o.stop().catch(() => {});
      await cleanPrefix(redisUrl, prefix);
    },
  };
}
