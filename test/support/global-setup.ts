import { ensureRedis, type RedisHandle } from '../../src/infra/redis-server.js';

let handle: RedisHandle | undefined;

// Tests use real Redis: the machine's, or a private redis-server started here and stopped after the run.
export async function setup() {
  handle = await ensureRedis();
  process.env.REDIS_URL = handle.url;
  if (handle.owned) console.log(`[tests] started a private redis-server at ${handle.url}`);
}

export async function teardown() {
  await handle?.stop();
}
