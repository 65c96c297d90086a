/** Key prefixes on a Redis that many tests and benchmarks share: one each, deleted afterwards. */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';

/** A unique REDIS_PREFIX, so that tests sharing the run's Redis never see each other's keys or queues. */
export function uniquePrefix(name = 't'): string {
  return `${name}-${randomBytes(5).toString('hex')}`;
}

/** Deletes every key under `prefix:`. */
export async function deletePrefix(redisUrl: string, prefix: string): Promise<void> {
  const redis = new Redis(redisUrl);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await redis.unlink(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}
