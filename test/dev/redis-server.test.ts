import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import {
  onTheMachineClock,
  pingRedis,
  RedisUnavailableError,
  startPrivateRedis,
} from '../../src/infra/redis-server.js';

describe('private redis-server', () => {
  it('starts on a free port, keeps data across a restart when persistent, and stops', async () => {
    const first = await startPrivateRedis({ persistent: true });
    const client = new Redis(first.url, { lazyConnect: true, maxRetriesPerRequest: 0 });
    await client.connect();
    await client.set('survives', 'yes');
    client.disconnect();
    const dir = first.dir;
    const port = first.port;
    first.process.kill('SIGKILL');
    await new Promise((r) => first.process.once('exit', r));
    expect(await pingRedis('127.0.0.1', port, 200)).toBe(false);

    const second = await startPrivateRedis({ persistent: true, port, dir });
    const again = new Redis(second.url, { maxRetriesPerRequest: 0 });
    expect(await again.get('survives')).toBe('yes');
    again.disconnect();
    await second.stop();
    expect(await pingRedis('127.0.0.1', port, 200)).toBe(false);
  });

  it("runs on the machine's clock: libfaketime and its settings are left out, other preloads and variables kept", () => {
    const env = onTheMachineClock({
      PATH: '/usr/bin',
      FAKETIME: '+400d',
      FAKETIME_NO_CACHE: '1',
      LD_PRELOAD: '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 /opt/lib/libtrace.so',
    });
    expect(env).toEqual({ PATH: '/usr/bin', LD_PRELOAD: '/opt/lib/libtrace.so' });
    expect(onTheMachineClock({ LD_PRELOAD: '/usr/lib/faketime/libfaketimeMT.so.1', HOME: '/root' })).toEqual({
      HOME: '/root',
    });
  });

  it('says what to install when there is no redis-server binary', async () => {
    const error = await startPrivateRedis({ searchPath: ['/nonexistent'] }).catch((e) => e);
    expect(error).toBeInstanceOf(RedisUnavailableError);
    expect(error.message).toContain('apt-get install redis-server');
    expect(error.message).toContain('brew install redis');
    expect(error.message).toContain('docker compose up -d redis');
  });
});
