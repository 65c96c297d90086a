import { Redis } from 'ioredis';
import { describe, expect, inject, it } from 'vitest';

describe("the test run's own redis-server", () => {
  it('is a real Redis on loopback, reachable through the provided URL', async () => {
    const url = inject('redisUrl');
    expect(url).toMatch(/^redis:\/\/:[0-9a-f]{64}@127\.0\.0\.1:\d+$/);
    const redis = new Redis(url);
    const key = `test:${process.pid}:${Date.now()}`;
    await redis.set(key, 'ok', 'EX', 10);
    expect(await redis.get(key)).toBe('ok');
    expect((await redis.info('server')).match(/redis_version:(\d+)/)?.[1]).toMatch(/^[6-9]$/);
    await redis.del(key);
    await redis.quit();
  });
});
