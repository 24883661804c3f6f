import type { AppRef, ArgoApi } from '../../src/infra/argocd/api.js';
import { ArgoError } from '../../src/infra/argocd/errors.js';
import type { ReadList } from '../../src/infra/argocd/answers.js';
import type {
  Application,
  ApplicationSyncRequest,
  HealthStatusCode,
  ManagedResourcesResponse,
} from '../../src/infra/argocd/types.js';
import type { RollcallConfig } from '../../src/infra/config/schema.js';
import { configSchema } from '../../src/infra/config/schema.js';
import { FleetIndex, tagApp, type FleetApp } from '../../src/fleet/model.js';

/**
 * A small Argo CD stand-in for engine tests that do not need the HTTP simulator: sync requests
 * become an `operation`, then Running, then a result after `syncMs`, with health settling after
 * it, and every change reaches the fleet view and its typed feed like the mirror's watch does.
 */
export class LiveFleet extends FleetIndex {
  private readonly byKey = new Map<string, FleetApp>();
  put(instance: string, app: Application) {
    const tagged = tagApp(instance, app, new Map());
    const previous = this.byKey.get(`${instance}/${app.metadata.name}`);
    this.byKey.set(`${instance}/${app.metadata.name}`, tagged);
    this.load([...this.byKey.values()], [], []);
    const at = new Date().toISOString();
    this.feed.publish(
      previous
        ? { kind: 'app-changed', instance, at, app: tagged, previous }
        : { kind: 'app-added', instance, at, app: tagged },
    );
  }
}

export function makeApp(
  name: string,
  cluster: string,
  opts: {
    sync?: 'Synced' | 'OutOfSync';
    health?: HealthStatusCode;
    labels?: Record<string, string>;
    prunable?: string[];
  } = {},
): Application {
  return {
    metadata: { name, namespace: 'argocd', labels: opts.labels ?? {} },
    spec: {
      project: 'default',
      destination: { name: cluster, namespace: 'default' },
      source: { repoURL: 'https://git.example/r', path: name, targetRevision: 'main' },
    },
    status: {
      sync: { status: opts.sync ?? 'OutOfSync', revision: 'abc' },
      health: { status: opts.health ?? 'Healthy' },
      resources: (opts.prunable ?? []).map((n) => ({
        version: 'v1',
        kind: 'ConfigMap',
        namespace: 'default',
        name: n,
        status: 'OutOfSync' as const,
        requiresPruning: true,
      })),
    },
  };
}

export interface SyncCall {
  instance: string;
  app: string;
  request: ApplicationSyncRequest;
  at: number;
}

export class FakeArgo implements Partial<ArgoApi> {
  readonly calls: { method: string; app: string }[] = [];
  readonly syncs: SyncCall[] = [];
  /** Apps whose next sync fails with this message. */
  readonly failing = new Map<string, string>();
  /** Apps that stay Degraded after a successful sync. */
  readonly degraded = new Set<string>();
  /** Answer the next n sync POSTs with a 503 (after applying them when `appliedThen5xx`). */
  fail5xx = 0;
  appliedThen5xx = false;
  syncMs = 30;
  settleMs = 20;
  private timers = new Set<NodeJS.Timeout>();

  constructor(
    readonly instance: string,
    private readonly fleet: LiveFleet,
  ) {}

  app(name: string): Application {
    const found = this.fleet.appsNamed(name).find((a) => a.instance === this.instance);
    if (!found)
      throw new ArgoError(`app ${name} not found`, { kind: 'not_found', instance: this.instance, status: 404 });
    return found.app;
  }

  private later(ms: number, fn: () => void) {
    const t = setTimeout(() => {
      this.timers.delete(t);
      fn();
    }, ms);
    this.timers.add(t);
  }

  stop() {
    for (const t of this.timers) clearTimeout(t);
  }

  async sync(request: ApplicationSyncRequest): Promise<Application> {
    this.calls.push({ method: 'sync', app: request.name });
    const app = structuredClone(this.app(request.name));
    if (this.fail5xx > 0 && !this.appliedThen5xx) {
      this.fail5xx--;
      throw new ArgoError('Argo CD answered 503', { kind: 'unavailable', instance: this.instance, status: 503 });
    }
    if (app.operation || app.status?.operationState?.phase === 'Running') {
      throw new ArgoError('another operation is already in progress', {
        kind: 'operation_in_progress',
        instance: this.instance,
        status: 400,
      });
    }
    this.syncs.push({ instance: this.instance, app: request.name, request, at: Date.now() });
    const operation = {
      sync: { prune: request.prune, dryRun: request.dryRun, revision: request.revision },
      initiatedBy: { username: 'rollcall-bot' },
      info: request.infos,
    };
    app.operation = operation;
    this.fleet.put(this.instance, app);
    this.later(5, () => {
      const running = structuredClone(this.app(request.name));
      delete running.operation;
      running.status = {
        ...running.status,
        operationState: { operation, phase: 'Running', startedAt: new Date().toISOString() },
      };
      this.fleet.put(this.instance, running);
      this.later(this.syncMs, () => {
        const done = structuredClone(this.app(request.name));
        const failMessage = this.failing.get(request.name);
        done.status = {
          ...done.status,
          operationState: {
            operation,
            phase: failMessage ? 'Failed' : 'Succeeded',
            message: failMessage ?? 'successfully synced (all tasks run)',
            startedAt: running.status!.operationState!.startedAt,
            finishedAt: new Date().toISOString(),
            syncResult: failMessage
              ? {
                  revision: 'abc',
                  resources: [
                    {
                      group: 'apps',
                      version: 'v1',
                      kind: 'Deployment',
                      namespace: 'default',
                      name: request.name,
                      status: 'SyncFailed',
                      message: failMessage,
                    },
                  ],
                }
              : { revision: 'abc', resources: [] },
          },
          sync: { status: failMessage ? 'OutOfSync' : 'Synced', revision: 'abc' },
          health: { status: 'Progressing' },
        };
        this.fleet.put(this.instance, done);
        if (!failMessage)
          this.later(this.settleMs, () => {
            const settled = structuredClone(this.app(request.name));
            settled.status = {
              ...settled.status,
              health: { status: this.degraded.has(request.name) ? 'Degraded' : 'Healthy' },
            };
            this.fleet.put(this.instance, settled);
          });
      });
    });
    if (this.fail5xx > 0 && this.appliedThen5xx) {
      this.fail5xx--;
      throw new ArgoError('Argo CD answered 502 after the request', {
        kind: 'unavailable',
        instance: this.instance,
        status: 502,
        maybeApplied: true,
      });
    }
    return app;
  }

  async listApplications(): Promise<ReadList<Application>> {
    this.calls.push({ method: 'list', app: '*' });
    return {
      metadata: {},
      items: this.fleet
        .apps()
        .filter((a) => a.instance === this.instance)
        .map((a) => structuredClone(a.app)),
    };
  }

  async getApplication(ref: AppRef): Promise<Application> {
    this.calls.push({ method: 'get', app: ref.name });
    return structuredClone(this.app(ref.name));
  }

  async managedResources(ref: AppRef): Promise<ManagedResourcesResponse> {
    this.calls.push({ method: 'managed-resources', app: ref.name });
    return { items: [] };
  }
}

export function testConfig(access: Partial<RollcallConfig['access']> = {}, instances = ['argo-test']): RollcallConfig {
  return configSchema.parse({
    instances: instances.map((name) => ({
      name,
      url: 'http://127.0.0.1:1',
      token: 't',
      timeout: 1000,
      rateLimit: { max: 1000, per: 1000 },
    })),
    access: { operators: ['U_OP'], admins: ['U_ADMIN'], ...access },
  });
}

export function testPrefix(): string {
  return `rollcall-test-${Math.random().toString(36).slice(2, 8)}`;
}

export async function cleanPrefix(redisUrl: string, prefix: string) {
  const { Redis } = await import('ioredis');
  const redis = new Redis(redisUrl);
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length) await redis.del(...keys);
  } while (cursor !== '0');
  await redis.quit();
}
