/**
 * How sources explain each other, as refreshes learn it, kept in a few bytes per source (digests, never copies
 * of entries) in a handful of Redis hashes, so that per-key overhead does not grow with the sources:
 *
 * - `group-names` (HASH): a group's name as its timetable gives it → the group's id. Entries name their groups
 *   (`group_list`), not their ids: this is how a changed class finds the other groups of a shared lecture.
 * - `group-views` (HASH): group id → its view digests, whole then subgroup 1 then 2 (36 bytes).
 * - `group-entries` (HASH): group id → the sorted 8-byte digests of its entries (8 bytes an entry).
 * - `member-of` (HASH): personal subscription id → its group's id; `members:<group id>` (SET) the other way.
 * - `parked` (HASH): a parked source → what explains it (`group:<id>` or `groups`).
 *
 * At university scale (1,500 groups of ~40 entries, 15,000 personal, 3,500 teachers) that is about 3.3 MB in
 * all, ~170 bytes a source on average (Redis's own per-field overhead included; see docs/design.md#freshness).
 */
import type { RedisClient } from '../lib/redis-target.ts';
import { entryDigestSet, groupViewDigests } from '../timetable/entry-digest.ts';
import type { SourceKey } from '../timetable/source.ts';
import type { TimetableEntry } from '../timetable/types.ts';
import type { RedisKeys } from './keys.ts';

/** What explains a parked source: its group (`group:<id>`) or, for a teacher, the groups refreshed anyway. */
export type ParkedBy = SourceKey | 'groups';

/** The relations between sources that refreshes taught (see the module comment for the layout). */
export class SourceRelations {
  private readonly redis: RedisClient;
  private readonly key: (part: string) => string;

  constructor(redis: RedisClient, keys: RedisKeys) {
    this.redis = redis;
    this.key = (part) => keys.relations(part);
  }

  /** Records a group's refresh: its name (when its entries tell it), its view digests and its entry digests. */
  async recordGroup(groupId: number, name: string | undefined, entries: readonly TimetableEntry[]): Promise<void> {
    const id = String(groupId);
    const multi = this.redis
      .multi()
      .hset(this.key('group-views'), id, groupViewDigests(entries))
      .hset(this.key('group-entries'), id, entryDigestSet(entries));
    if (name !== undefined) multi.hset(this.key('group-names'), name, id);
    await multi.exec();
  }

  /**
   * Records a group's name as a profile gives it, unless a name is recorded already (the group's own timetable,
   * recorded by {@link recordGroup}, is the better witness of how its classes spell it).
   */
  async learnGroupName(name: string, groupId: number): Promise<void> {
    await this.redis.hsetnx(this.key('group-names'), name, String(groupId));
  }

  /** The ids of the groups named `names` that a group refresh has taught, by name (unknown names left out). */
  async groupsNamed(names: readonly string[]): Promise<Map<string, number>> {
    const unique = [...new Set(names)];
    if (unique.length === 0) return new Map();
    const ids = await this.redis.hmget(this.key('group-names'), ...unique);
    const found = new Map<string, number>();
    unique.forEach((name, index) => {
      const id = Number(ids[index]);
      if (ids[index] !== null && Number.isSafeInteger(id)) found.set(name, id);
    });
    return found;
  }

  /** A group's packed view digests (entry-digest.ts `groupViewDigests`), if a refresh of it recorded them. */
  async groupViews(groupId: number): Promise<Buffer | undefined> {
    return (await this.redis.hgetBuffer(this.key('group-views'), String(groupId))) ?? undefined;
  }

  /** The packed entry digest sets of `groupIds`, in order (undefined where none is recorded). */
  async groupEntrySets(groupIds: readonly number[]): Promise<(Buffer | undefined)[]> {
    if (groupIds.length === 0) return [];
    const sets = await this.redis.hmgetBuffer(this.key('group-entries'), ...groupIds.map(String));
    return sets.map((set) => set ?? undefined);
  }

  /**
   * Records the group of a personal subscription (none: it has no group any more). One read when nothing
   * changed, which is every refresh but the first.
   */
  async recordMember(subscriptionId: string, groupId: number | undefined): Promise<void> {
    const memberOf = this.key('member-of');
    const stored = await this.redis.hget(memberOf, subscriptionId);
    const next = groupId === undefined ? null : String(groupId);
    if (stored === next) return;
    const multi = this.redis.multi();
    if (stored !== null) multi.srem(this.key(`members:${stored}`), subscriptionId);
    if (next === null) multi.hdel(memberOf, subscriptionId);
    else multi.hset(memberOf, subscriptionId, next).sadd(this.key(`members:${next}`), subscriptionId);
    await multi.exec();
  }

  /** The personal sources of the students of `groupIds`. */
  async members(groupIds: readonly number[]): Promise<SourceKey[]> {
    if (groupIds.length === 0) return [];
    const ids = await this.redis.sunion(...groupIds.map((id) => this.key(`members:${id}`)));
    return ids.map((id) => `personal:${id}`);
  }

  /** Records what explains `source` now (undefined: nothing, it keeps its own place in the rotation). */
  async setParked(source: SourceKey, by: ParkedBy | undefined): Promise<void> {
    if (by === undefined) await this.redis.hdel(this.key('parked'), source);
    else await this.redis.hset(this.key('parked'), source, by);
  }

  /** What explained `source` when it was last refreshed, if it was parked. */
  async parkedBy(source: SourceKey): Promise<ParkedBy | undefined> {
    return (await this.redis.hget(this.key('parked'), source)) ?? undefined;
  }
}
