/**
 * A CalDAV target's index in Redis (`caldavIndex(id)`, a HASH resource id → value): which resources we wrote
 * into its calendar, each with the digest of the fields we own and the ETag the server gave (`<hash> <etag>`),
 * or a marker for a name taken by someone else or a version the server refused (the encoding is the sync
 * engine's, `caldav/resource-index.ts`; this store keeps strings). A push compares with it instead of listing
 * the calendar; a reconcile lists the calendar and replaces it. Entries are written after every successful
 * write, so a crash loses at most the writes in flight, which the next reconcile repairs.
 *
 * Every write goes through a script that does nothing once the target is gone and answers false then, so a
 * push still running while its target is removed neither leaves an orphaned index behind nor goes on writing.
 */
import { luaScript } from '../lib/lua-script.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import type { RedisKeys } from './keys.ts';
import { REPLACE_IF_TARGET, SET_IF_TARGET } from './push-index.ts';

/** Removes index entries only while the target exists (caldav-index-remove.lua). */
const REMOVE_IF_TARGET = luaScript(import.meta.dirname, 'caldav-index-remove');

/** The index of one CalDAV target. Writes answer false when the target is gone. */
export class CalDavIndexStore {
  private readonly redis: RedisClient;
  private readonly target: string;
  private readonly index: string;

  constructor(redis: RedisClient, keys: RedisKeys, targetId: string) {
    this.redis = redis;
    this.target = keys.caldavTarget(targetId);
    this.index = keys.caldavIndex(targetId);
  }

  /** Every indexed resource id with its value (empty when there is no index yet). */
  async read(): Promise<Map<string, string>> {
    return new Map(Object.entries(await this.redis.hgetall(this.index)));
  }

  /** Records the value of resource `id`. False if the target is gone. */
  async set(id: string, value: string): Promise<boolean> {
    return (await this.redis.eval(SET_IF_TARGET, 2, this.target, this.index, id, value)) === 1;
  }

  /** Forgets resource `id` (deleted from the calendar). False if the target is gone. */
  async remove(id: string): Promise<boolean> {
    return (await this.redis.eval(REMOVE_IF_TARGET, 2, this.target, this.index, id)) === 1;
  }

  /** Replaces the whole index in one step (after a reconcile listed the calendar). False if the target is gone. */
  async replace(entries: ReadonlyMap<string, string>): Promise<boolean> {
    const args = [...entries].flat();
    return (await this.redis.eval(REPLACE_IF_TARGET, 2, this.target, this.index, ...args)) === 1;
  }

  /** How many resources are indexed. */
  async size(): Promise<number> {
    return this.redis.hlen(this.index);
  }
}
