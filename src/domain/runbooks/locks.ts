import type { RedisClient } from '../../infra/redis.js';
import { keyBase } from '../../infra/redis.js';
import type { RunTarget } from './actions/types.js';
import { RollcallError } from '../../core/errors.js';

/**
 * Takes every lock or none: returns {} on success, else a flat list [key, holder, ...] of the locks
 * held by other runs. A run re-acquiring its own locks succeeds (idempotent after a crash).
 */
const ACQUIRE = `
local held = {}
for i, key in ipairs(KEYS) do
  local holder = redis.call('GET', key)
  if holder and holder ~= ARGV[1] then table.insert(held, key); table.insert(held, holder) end
end
if #held > 0 then return held end
for i, key in ipairs(KEYS) do redis.call('SET', key, ARGV[1]) end
return {}
`;

const RELEASE = `
local n = 0
for i, key in ipairs(KEYS) do
  if redis.call('GET', key) == ARGV[1] then redis.call('DEL', key); n = n + 1 end
end
return n
`;

export interface LockConflict {
  runId: string;
  apps: { instance: string; app: string }[];
}

export class LockConflictError extends RollcallError {
  declare readonly code: 'locked';
  constructor(readonly conflicts: LockConflict[]) {
    super(
      'locked',
      'these apps are locked by another run: ' +
        conflicts
          .map(
            (c) =>
              `${c.runId} holds ${c.apps
                .slice(0, 10)
                .map((a) => a.app)
                .join(', ')}${c.apps.length > 10 ? ` and ${c.apps.length - 10} more` : ''}`,
          )
          .join('; ') +
        ' (wait for it to finish, or `/argo runs show ID` / `/argo runs cancel ID`)',
      { data: { conflicts } },
    );
  }
}

/**
 * Locks on target apps, one Redis key per instance/app holding the run id. They are held from
 * confirmation to the end of the run, with no TTL: a run survives worker and Redis restarts, and
 * its locks must too. The run's terminal transition releases them.
 */
export class AppLocks {
  private readonly base: string;
  constructor(
    private readonly redis: RedisClient,
    prefix: string,
  ) {
    this.base = keyBase(prefix);
  }

  private key(t: { instance: string; app: string }) {
    return `${this.base}lock:app:${t.instance}/${t.app}`;
  }

  private parse(key: string): { instance: string; app: string } {
    const rest = key.slice(`${this.base}lock:app:`.length);
    const slash = rest.indexOf('/');
    return { instance: rest.slice(0, slash), app: rest.slice(slash + 1) };
  }

  /** Which runs hold any of these apps (for the preview, before anything is taken). */
  async holders(targets: RunTarget[], exceptRunId?: string): Promise<LockConflict[]> {
    if (!targets.length) return [];
    const keys = targets.map((t) => this.key(t));
    const values = await this.redis.mget(keys);
    const byRun = new Map<string, { instance: string; app: string }[]>();
    values.forEach((holder, i) => {
      if (holder && holder !== exceptRunId)
        byRun.set(holder, [...(byRun.get(holder) ?? []), { instance: targets[i].instance, app: targets[i].app }]);
    });
    return [...byRun].map(([runId, apps]) => ({ runId, apps }));
  }

  /** Takes all locks for the run or throws LockConflictError naming which run holds which apps. */
  async acquire(runId: string, targets: RunTarget[]): Promise<void> {
    if (!targets.length) return;
    const keys = targets.map((t) => this.key(t));
    const held = (await this.redis.eval(ACQUIRE, keys.length, ...keys, runId)) as string[];
    if (held.length) {
      const byRun = new Map<string, { instance: string; app: string }[]>();
      for (let i = 0; i < held.length; i += 2)
        byRun.set(held[i + 1], [...(byRun.get(held[i + 1]) ?? []), this.parse(held[i])]);
      throw new LockConflictError([...byRun].map(([id, apps]) => ({ runId: id, apps })));
    }
  }

  async release(runId: string, targets: RunTarget[]): Promise<number> {
    if (!targets.length) return 0;
    const keys = targets.map((t) => this.key(t));
    return Number(await this.redis.eval(RELEASE, keys.length, ...keys, runId));
  }
}
