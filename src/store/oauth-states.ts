/**
 * Pending OAuth consents, each kept under the SHA-256 of its `state` for a short while and taken at most once
 * (GETDEL), so that a replayed callback finds nothing. The record is the caller's JSON.
 */
import type { RedisClient } from '../lib/redis-target.ts';
import type { RedisKeys } from './keys.ts';

/** Stores `record` for the consent whose state hashes to `stateHash`, for `seconds`. */
export async function savePendingConsent(
  redis: RedisClient,
  keys: Pick<RedisKeys, 'googleOAuthState'>,
  stateHash: string,
  record: string,
  seconds: number,
): Promise<void> {
  await redis.set(keys.googleOAuthState(stateHash), record, 'EX', seconds);
}

/** Takes (reads and deletes) the record of `stateHash`; undefined when unknown, expired or taken before. */
export async function takePendingConsent(
  redis: RedisClient,
  keys: Pick<RedisKeys, 'googleOAuthState'>,
  stateHash: string,
): Promise<string | undefined> {
  return (await redis.getdel(keys.googleOAuthState(stateHash))) ?? undefined;
}
