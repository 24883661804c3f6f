import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const root = path.resolve(import.meta.dirname, '../..');
const read = (p: string) => readFileSync(path.join(root, p), 'utf8');

describe('docker-compose.yml', () => {
  const compose = parse(read('docker-compose.yml'));

  it('runs Redis with persistence so runs survive a restart', () => {
    const redis = compose.services.redis;
    expect(redis.command).toEqual(expect.arrayContaining(['--appendonly', 'yes']));
    expect(redis.command).toEqual(expect.arrayContaining(['--maxmemory-policy', 'noeviction']));
    expect(redis.volumes.some((v: string) => v.endsWith(':/data'))).toBe(true);
    expect(compose.volumes).toHaveProperty('redis-data');
  });

  it('starts rollcall against that Redis once it is healthy', () => {
    const bot = compose.services.rollcall;
    expect(bot.command[0]).toBe('start');
    expect(bot.environment.REDIS_URL).toBe('redis://redis:6379');
    expect(bot.depends_on.redis.condition).toBe('service_healthy');
    expect(compose.services.redis.healthcheck.test).toContain('ping');
  });
});
