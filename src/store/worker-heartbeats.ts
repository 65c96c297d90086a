/**
 * Worker heartbeats in Redis: `keys.workers`, a ZSET of worker ids scored by the epoch ms of their last beat.
 * The jobs stage decides how often to beat and how old a beat may be (jobs/heartbeats.ts).
 */
import type { RedisClient } from '../lib/redis-target.ts';
import type { RedisKeys } from './keys.ts';

/** Records that worker `id` beat at `at` (epoch ms). */
export async function recordHeartbeat(
  redis: RedisClient,
  keys: Pick<RedisKeys, 'workers'>,
  id: string,
  at: number,
): Promise<void> {
  await redis.zadd(keys.workers, at, id);
}

/** Forgets worker `id`'s heartbeat. */
export async function removeHeartbeat(redis: RedisClient, keys: Pick<RedisKeys, 'workers'>, id: string): Promise<void> {
  await redis.zrem(keys.workers, id);
}

/** How many workers beat at or after `since` (epoch ms). */
export function countHeartbeatsSince(
  redis: RedisClient,
  keys: Pick<RedisKeys, 'workers'>,
  since: number,
): Promise<number> {
  return redis.zcount(keys.workers, since, '+inf');
}
