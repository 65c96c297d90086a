/**
 * The one server that holds a key. On a Redis Cluster a keyless command (INFO, WAITAOF) goes to a node of
 * ioredis' choosing, which may not be the one holding the service's slot; a check of that slot's memory or
 * persistence must ask its primary.
 */
import { Cluster, type Redis } from 'ioredis';
import { RedisUnavailableError } from './errors.ts';
import type { RedisClient } from './redis-target.ts';

/**
 * The connection to the primary serving `key`'s hash slot: on a Cluster, the node ioredis routes the key
 * to (its slot table, refreshed on MOVED); otherwise the client itself, which has one primary. Throws
 * {@link RedisUnavailableError} when the cluster knows no node for the slot (it is reconnecting).
 */
export async function primaryFor(redis: RedisClient, key: string): Promise<Redis> {
  if (!(redis instanceof Cluster)) return redis;
  const slot = Number(await redis.call('CLUSTER', 'KEYSLOT', key));
  const address = redis.slots[slot]?.[0];
  const node = redis
    .nodes('master')
    .find((candidate) => `${candidate.options.host}:${candidate.options.port}` === address);
  if (!node) throw new RedisUnavailableError(`Redis Cluster has no known primary for slot ${slot}`);
  return node;
}
