/**
 * Redis locks: `SET key owner NX PX ms` to take one, and an extension and a release that cannot touch a lock
 * someone else took after ours expired.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadScript } from './lua-script.ts';
import type { RedisClient } from './redis-target.ts';

/** Deletes a lock only while its owner holds it (release-lock.lua). */
const RELEASE_LOCK = loadScript(import.meta.dirname, 'release-lock');

/** Extends a lock only while its owner holds it (extend-lock.lua). */
const EXTEND_LOCK = loadScript(import.meta.dirname, 'extend-lock');

/** How often {@link withLock} asks again for a lock someone else holds. */
const RETRY_MS = 50;

/** A random owner name, so that one holder's release or extension never touches another's lock. */
export function lockOwner(): string {
  return randomBytes(8).toString('hex');
}

/** Takes `key` for `owner` for `ms` unless someone holds it; true when taken. */
export async function tryLock(redis: RedisClient, key: string, owner: string, ms: number): Promise<boolean> {
  return (await redis.set(key, owner, 'PX', ms, 'NX')) !== null;
}

/** Gives `owner`'s lock another `ms` from now; false when it is no longer `owner`'s. */
export async function extendLock(redis: RedisClient, key: string, owner: string, ms: number): Promise<boolean> {
  return (await EXTEND_LOCK.run(redis, [key], [owner, ms])) === 1;
}

/** Releases `key` if `owner` still holds it. */
export async function releaseLock(redis: RedisClient, key: string, owner: string): Promise<void> {
  await RELEASE_LOCK.run(redis, [key], [owner]);
}

/**
 * Runs `work` holding `key`, waiting while someone else holds it. The lock expires after `ms` on its own, so a
 * holder that died delays the next one by `ms` at most.
 */
export async function withLock<T>(redis: RedisClient, key: string, ms: number, work: () => Promise<T>): Promise<T> {
  const owner = lockOwner();
  while (!(await tryLock(redis, key, owner, ms))) await sleep(RETRY_MS);
  try {
    return await work();
  } finally {
    await releaseLock(redis, key, owner);
  }
}

/**
 * Runs `work` holding `key` unless someone else holds it: then it resolves to undefined at once, `work` not run.
 * `work` gets `renew`, which gives the lock another `ms` from now and says whether it is still held (for work
 * longer than `ms`).
 */
export async function tryWithLock<T>(
  redis: RedisClient,
  key: string,
  ms: number,
  work: (renew: () => Promise<boolean>) => Promise<T>,
): Promise<T | undefined> {
  const owner = lockOwner();
  if (!(await tryLock(redis, key, owner, ms))) return undefined;
  try {
    return await work(() => extendLock(redis, key, owner, ms));
  } finally {
    await releaseLock(redis, key, owner);
  }
}
