/** Redis locks: `SET key owner NX PX ms` to take one, and a release that cannot delete someone else's. */
import type { Redis } from 'ioredis';

/** KEYS: 1 a lock. ARGV: 1 its owner. Deletes the lock only while this owner holds it (it may have expired and been taken). */
const RELEASE_LOCK = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";

/** Takes `key` for `owner` for `ms` unless someone holds it; true when taken. */
export async function tryLock(redis: Redis, key: string, owner: string, ms: number): Promise<boolean> {
  return (await redis.set(key, owner, 'PX', ms, 'NX')) !== null;
}

/** Releases `key` if `owner` still holds it. */
export async function releaseLock(redis: Redis, key: string, owner: string): Promise<void> {
  await redis.eval(RELEASE_LOCK, 1, key, owner);
}
