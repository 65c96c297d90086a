/**
 * A push target's index: which events we wrote into its calendar, and the digest of the owned fields we
 * wrote (`googleIndex(id)`, a HASH event id → hash, or the markers of `push-diff.ts` for an event we deleted,
 * an id taken by someone else and a version Google refused). A push compares with it instead of listing the calendar;
 * a reconcile lists the calendar and replaces it. Writes are applied after every successful Google write, so
 * a crash loses at most the writes in flight, which the next reconcile repairs.
 *
 * Writes go through a script that does nothing once the target is gone, so a push still running while its
 * target is removed cannot leave an orphaned index behind.
 */

import { luaScript } from '../lib/lua-script.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import type { RedisKeys } from './keys.ts';

/** Sets index entries only while the target exists (push-index-set.lua; the CalDAV index uses it too). */
export const SET_IF_TARGET = luaScript(import.meta.dirname, 'push-index-set');

/** Replaces the whole index only while the target exists (push-index-replace.lua; the CalDAV index too). */
export const REPLACE_IF_TARGET = luaScript(import.meta.dirname, 'push-index-replace');

/** The per-target index of events we wrote and their digests. */
export class PushIndex {
  private readonly redis: RedisClient;
  private readonly keys: RedisKeys;

  constructor(redis: RedisClient, keys: RedisKeys) {
    this.redis = redis;
    this.keys = keys;
  }

  /** Every indexed event id with its digest (empty when there is no index yet). */
  async read(id: string): Promise<Map<string, string>> {
    return new Map(Object.entries(await this.redis.hgetall(this.keys.googleIndex(id))));
  }

  /** Records that event `eventId` now holds fields with digest `hash`. False if the target is gone. */
  async set(id: string, eventId: string, hash: string): Promise<boolean> {
    return (
      (await this.redis.eval(
        SET_IF_TARGET,
        2,
        this.keys.googleTarget(id),
        this.keys.googleIndex(id),
        eventId,
        hash,
      )) === 1
    );
  }

  /** Replaces the whole index in one step (after a reconcile listed the calendar). False if the target is gone. */
  async replace(id: string, entries: ReadonlyMap<string, string>): Promise<boolean> {
    const args = [...entries].flat();
    return (
      (await this.redis.eval(REPLACE_IF_TARGET, 2, this.keys.googleTarget(id), this.keys.googleIndex(id), ...args)) ===
      1
    );
  }

  /** How many events are indexed. */
  async size(id: string): Promise<number> {
    return this.redis.hlen(this.keys.googleIndex(id));
  }
}
