/**
 * Markers of one-time data migrations: a key that says a migration over the whole store was done, so that a
 * later start does not scan again.
 */
import type { RedisClient } from '../lib/redis-target.ts';
import type { RedisKeys } from './keys.ts';

/** Whether the retired feed forms were dropped from every stored feed. */
export async function feedFormsDropped(
  redis: RedisClient,
  keys: Pick<RedisKeys, 'feedFormsDropped'>,
): Promise<boolean> {
  return (await redis.exists(keys.feedFormsDropped)) === 1;
}

/** Records that the retired feed forms were dropped from every stored feed. */
export async function markFeedFormsDropped(
  redis: RedisClient,
  keys: Pick<RedisKeys, 'feedFormsDropped'>,
): Promise<void> {
  await redis.set(keys.feedFormsDropped, '1');
}
