/**
 * Where the MAX poller keeps its place in MAX's update queue: the `marker` MAX answered with the last page of
 * updates, stored once that page was handled. The next poll passes it, which commits (MAX drops) the updates
 * before it; after a restart or a takeover the poller goes on from there: nothing handled is asked for again,
 * nothing unhandled is committed. Per bot (a digest of its token): a new token's bot starts without one.
 */
import { loadScript } from '../lib/lua-script.ts';
import type { RedisClient } from '../lib/redis-target.ts';

const SET_MARKER = loadScript(import.meta.dirname, 'max-poll-marker-set');

/** The stored marker, if any. */
export async function readPollMarker(redis: RedisClient, markerKey: string): Promise<string | undefined> {
  return (await redis.get(markerKey)) ?? undefined;
}

/** Stores `marker` if `owner` still holds the poll lock; false when it does not (nothing stored). */
export async function storePollMarker(
  redis: RedisClient,
  keys: { lock: string; marker: string },
  owner: string,
  marker: string,
): Promise<boolean> {
  return (await SET_MARKER.run(redis, [keys.lock, keys.marker], [owner, marker])) === 1;
}
