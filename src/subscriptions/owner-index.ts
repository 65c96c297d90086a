/**
 * Subscriptions made before one person had one subscription: a person may have several, and none is indexed
 * by its owner. They all keep working (their feed tokens and credentials are untouched); indexing leads each
 * owner to their newest, so that signing up again issues a token to it instead of making one more.
 */
import type { Redis } from 'ioredis';
import type { RedisKeys } from '../sources/keys.ts';

/** Subscriptions read per SCAN step. */
const SCAN_COUNT = 500;

/** The newest subscription seen so far of one owner. */
interface Newest {
  id: string;
  createdAt: number;
}

/**
 * The owner a stored subscription is indexed under, from its hash fields: `user:<id>`, `credential:<digest>`
 * for a profile without a user id, undefined for neither.
 */
export function storedOwner(userId: string | null | undefined, digest: string | null | undefined): string | undefined {
  if (userId) return `user:${userId}`;
  return digest ? `credential:${digest}` : undefined;
}

/**
 * Indexes the owners of the subscriptions made before owners were indexed, once per deployment (a marker
 * key remembers it). An owner already indexed (someone signed up meanwhile) keeps their index. Resolves to how
 * many owners it indexed. Idempotent, so processes starting together may all run it.
 */
export async function indexLegacyOwners(redis: Redis, keys: RedisKeys): Promise<number> {
  if ((await redis.exists(keys.subscriptionOwnersIndexed)) === 1) return 0;
  const newest = new Map<string, Newest>();
  const stream = redis.scanStream({ match: keys.subscription('*'), count: SCAN_COUNT });
  for await (const batch of stream as AsyncIterable<string[]>) {
    for (const found of await readOwners(redis, batch)) {
      const seen = newest.get(found.owner);
      if (seen === undefined || found.createdAt > seen.createdAt) newest.set(found.owner, found);
    }
  }
  let indexed = 0;
  for (const [owner, { id }] of newest) {
    if ((await redis.set(keys.subscriptionOwner(owner), id, 'NX')) !== null) indexed += 1;
  }
  await redis.set(keys.subscriptionOwnersIndexed, '1');
  return indexed;
}

/** The owner and creation time of each subscription hash in `batch` (hashes without an owner are left out). */
async function readOwners(redis: Redis, batch: readonly string[]): Promise<(Newest & { owner: string })[]> {
  const pipeline = redis.pipeline();
  for (const key of batch) pipeline.hmget(key, 'id', 'upstreamUserId', 'credentialDigest', 'createdAt');
  const results = (await pipeline.exec()) ?? [];
  const owners: (Newest & { owner: string })[] = [];
  for (const [error, value] of results) {
    if (error !== null) throw error;
    const [id, userId, digest, createdAt] = value as (string | null)[];
    const owner = storedOwner(userId, digest);
    if (!id || owner === undefined) continue;
    owners.push({ id, owner, createdAt: Number(createdAt) || 0 });
  }
  return owners;
}
