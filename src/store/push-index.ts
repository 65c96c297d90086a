/**
 * A push target's index in Redis (a HASH id → value): which events (or resources) we wrote into its calendar,
 * each with what the kind's sync needs to compare with it next time (Google: the digest of the owned fields we
 * wrote; CalDAV: the digest and the ETag), or a marker of `push-diff.ts` (an event we deleted, an id taken by
 * someone else, a version the server refused). A push compares with it instead of listing the calendar; a
 * reconcile lists the calendar and replaces it. Entries are written after every successful write, so a crash
 * loses at most the writes in flight, which the next reconcile repairs.
 *
 * Every write goes through a script that does nothing once the target is gone and answers false then, so a
 * push still running while its target is removed neither leaves an orphaned index behind nor goes on writing.
 */
import { loadScript } from '../lib/lua-script.ts';
import type { RedisClient } from '../lib/redis-target.ts';

/** Sets index entries only while the target exists (push-index-set.lua). */
const SET_IF_TARGET = loadScript(import.meta.dirname, 'push-index-set');

/** Removes index entries only while the target exists (push-index-remove.lua). */
const REMOVE_IF_TARGET = loadScript(import.meta.dirname, 'push-index-remove');

/** Replaces the whole index only while the target exists (push-index-replace.lua). */
const REPLACE_IF_TARGET = loadScript(import.meta.dirname, 'push-index-replace');

/** The index of one push target (made by its store: `PushTargetStore.index`). Writes answer false once it is gone. */
export class PushIndex {
  private readonly redis: RedisClient;
  private readonly target: string;
  private readonly key: string;

  /** `target` is the key of the target's hash (writes are guarded by it), `key` the index's own. */
  constructor(redis: RedisClient, target: string, key: string) {
    this.redis = redis;
    this.target = target;
    this.key = key;
  }

  /** Every indexed id with its value (empty when there is no index yet). */
  async read(): Promise<Map<string, string>> {
    return new Map(Object.entries(await this.redis.hgetall(this.key)));
  }

  /** Records the value of `id`. False if the target is gone. */
  async set(id: string, value: string): Promise<boolean> {
    return (await SET_IF_TARGET.run(this.redis, [this.target, this.key], [id, value])) === 1;
  }

  /** Forgets `id` (deleted from the calendar). False if the target is gone. */
  async remove(id: string): Promise<boolean> {
    return (await REMOVE_IF_TARGET.run(this.redis, [this.target, this.key], [id])) === 1;
  }

  /** Replaces the whole index in one step (after a reconcile listed the calendar). False if the target is gone. */
  async replace(entries: ReadonlyMap<string, string>): Promise<boolean> {
    const args = [...entries].flat();
    return (await REPLACE_IF_TARGET.run(this.redis, [this.target, this.key], args)) === 1;
  }

  /** How many ids are indexed. */
  async size(): Promise<number> {
    return this.redis.hlen(this.key);
  }
}
