/** SCAN over every key of a target, standalone or Cluster. */
import { Cluster } from 'ioredis';
import type { RedisClient } from './redis-target.ts';

/**
 * The keys matching `match`, in batches. A Cluster answers SCAN per node, so each primary is scanned in turn
 * (with our hash-tagged prefix every key of ours is on one of them, but which one the slot map decides).
 */
export async function* scanKeys(redis: RedisClient, match: string, count: number): AsyncGenerator<string[]> {
  const nodes = redis instanceof Cluster ? redis.nodes('master') : [redis];
  for (const node of nodes) {
    for await (const batch of node.scanStream({ match, count }) as AsyncIterable<string[]>) yield batch;
  }
}
