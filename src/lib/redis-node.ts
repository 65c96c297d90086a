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
  return primaryOfSlot(redis, await slotOf(redis, key));
}

/** The hash slot of `key`, as the cluster computes it (a key's slot never changes: callers may keep it). */
export async function slotOf(cluster: Cluster, key: string): Promise<number> {
  return Number(await cluster.call('CLUSTER', 'KEYSLOT', key));
}

/** The connection to the primary serving `slot` now; {@link RedisUnavailableError} when none is known. */
export function primaryOfSlot(cluster: Cluster, slot: number): Redis {
  const address = cluster.slots[slot]?.[0];
  const node = cluster
    .nodes('master')
    .find((candidate) => `${candidate.options.host}:${candidate.options.port}` === address);
  if (!node) throw new RedisUnavailableError(`Redis Cluster has no known primary for slot ${slot}`);
  return node;
}
