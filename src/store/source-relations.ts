/**
 * How sources explain each other, as refreshes learn it, kept in a few bytes per source (digests, never copies
 * of entries) in a handful of Redis hashes, so that per-key overhead does not grow with the sources:
 *
 * - `group-names` (HASH): a group's name as its timetable gives it → the group's id. Entries name their groups
 *   (`group_list`), not their ids: this is how a changed class finds the other groups of a shared lecture.
 * - `group-views` (HASH): group id → its view digests, whole then subgroup 1 then 2 (36 bytes).
 * - `group-entries` (HASH): group id → the sorted 8-byte digests of its entries (8 bytes an entry).
 * - `group-members` (HASH): group id → the subscription ids of its students, concatenated (22 bytes each).
 * - `member-of:<bucket>` (HASH): personal subscription id → its group's id.
 * - `electives-of:<bucket>` (HASH): personal subscription id → the ids of the classes it has of its own (an
 *   elective: in its timetable, not in its group's), comma-joined; only for students who have some.
 * - `elective-students` (HASH): such a class's id → the subscription ids of its students (22 bytes each). A
 *   change of the class found by its teacher's refresh reaches them this way: no group names them.
 *
 * What parks a source is not kept here: the planner's state of the source holds it (freshness-store.ts).
 *
 * Per-source records are spread over {@link BUCKETS} small hashes, which Redis keeps as compact listpacks (a
 * field costs its bytes and a few more) where one big hash would cost some 70 bytes of overhead a field.
 * Measured (Redis 7.0, `used_memory`) with 1,500 groups of 40 entries, 15,000 students and 3,500 teachers, all
 * parked: 2.9 MB in all, about 146 bytes a source (a group ~640 with its entry digests, a student ~125, a teacher
 * ~30), when what parked a source was kept here too (some 45 bytes a parked source, since left to the planner);
 * one hash per source kind instead of buckets took 5.8 MB.
 */
import { loadScript } from '../lib/lua-script.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import { entryDigestSet, groupViewDigests, rememberingEntryDigest } from '../timetable/entry-digest.ts';
import { type SourceKey, sourceOf } from '../timetable/source.ts';
import type { TimetableEntry } from '../timetable/types.ts';
import type { RedisKeys } from './keys.ts';

/** Hashes each per-source record is spread over: ~20 fields each at 20,000 sources, listpacks up to 128. */
export const BUCKETS = 1024;

/** Moves a subscription between groups' students (source-relations-member.lua). */
const MOVE_MEMBER = loadScript(import.meta.dirname, 'source-relations-member', ['packed-ids']);

/** Replaces the classes a student has of their own (source-relations-electives.lua). */
const SET_ELECTIVES = loadScript(import.meta.dirname, 'source-relations-electives', ['packed-ids']);

/** Forgets a group's views, entries and names (source-relations-forget-group.lua). */
const FORGET_GROUP = loadScript(import.meta.dirname, 'source-relations-forget-group');

/** Length of a subscription id (16 random bytes in base64url), the unit of a packed member list. */
const SUBSCRIPTION_ID_LENGTH = 22;

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
    // The views and the entry set digest the same entries: each once.
    const digestOf = rememberingEntryDigest();
    const multi = this.redis
      .multi()
      .hset(this.key('group-views'), id, groupViewDigests(entries, digestOf))
      .hset(this.key('group-entries'), id, entryDigestSet(entries, digestOf));
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
    if (subscriptionId.length !== SUBSCRIPTION_ID_LENGTH) return;
    const memberOf = this.bucket('member-of', subscriptionId);
    const next = groupId === undefined ? '' : String(groupId);
    if (((await this.redis.hget(memberOf, subscriptionId)) ?? '') === next) return;
    await MOVE_MEMBER.run(this.redis, [memberOf, this.key('group-members')], [subscriptionId, next]);
  }

  /** The personal sources of the students of `groupIds`. */
  async members(groupIds: readonly number[]): Promise<SourceKey[]> {
    if (groupIds.length === 0) return [];
    return personalSources(await this.redis.hmget(this.key('group-members'), ...groupIds.map(String)));
  }

  /**
   * Records the classes a personal subscription has of its own, by entry id (none: it has none, or is explained
   * by its group). One read when nothing changed, which is every refresh of nearly every student.
   */
  async recordElectives(subscriptionId: string, entryIds: readonly number[]): Promise<void> {
    if (subscriptionId.length !== SUBSCRIPTION_ID_LENGTH) return;
    const electivesOf = this.bucket('electives-of', subscriptionId);
    const next = [...new Set(entryIds)].sort((a, b) => a - b).join(',');
    if (((await this.redis.hget(electivesOf, subscriptionId)) ?? '') === next) return;
    await SET_ELECTIVES.run(this.redis, [electivesOf, this.key('elective-students')], [subscriptionId, next]);
  }

  /** The personal sources that have any of `entryIds` as a class of their own. */
  async electiveStudents(entryIds: readonly number[]): Promise<SourceKey[]> {
    const unique = [...new Set(entryIds)];
    if (unique.length === 0) return [];
    return personalSources(await this.redis.hmget(this.key('elective-students'), ...unique.map(String)));
  }

  /**
   * Forgets what refreshes taught about a source that is gone (a deleted subscription, a source the upstream
   * does not know): a student leaves their group's students and their classes' (electives'), a group loses its
   * views, entries and names. A
   * forgotten group keeps its students: each is the record of a subscription that still names the group, and
   * goes with it (or moves, when the subscription's group does); a group the upstream knows again finds them.
   * A teacher has nothing here.
   */
  async forget(source: SourceKey): Promise<void> {
    const ref = sourceOf(source);
    if (ref.kind === 'personal') {
      if (ref.id.length !== SUBSCRIPTION_ID_LENGTH) return;
      await MOVE_MEMBER.run(this.redis, [this.bucket('member-of', ref.id), this.key('group-members')], [ref.id, '']);
      const electives = [this.bucket('electives-of', ref.id), this.key('elective-students')];
      await SET_ELECTIVES.run(this.redis, electives, [ref.id, '']);
    } else if (ref.kind === 'group') {
      const keys = [this.key('group-views'), this.key('group-entries'), this.key('group-names')];
      await FORGET_GROUP.run(this.redis, keys, [ref.id]);
    }
  }

  /** The bucket of `part` that holds `field` (FNV-1a of its characters). */
  private bucket(part: string, field: string): string {
    let hash = 0x811c9dc5;
    for (let index = 0; index < field.length; index += 1) hash = Math.imul(hash ^ field.charCodeAt(index), 0x01000193);
    return this.key(`${part}:${(hash >>> 0) % BUCKETS}`);
  }
}

/** The personal sources of packed subscription id lists (22 characters each; a missing list names none). */
function personalSources(lists: readonly (string | null)[]): SourceKey[] {
  const sources: SourceKey[] = [];
  for (const list of lists)
    for (let at = 0; list !== null && at + SUBSCRIPTION_ID_LENGTH <= list.length; at += SUBSCRIPTION_ID_LENGTH)
      sources.push(`personal:${list.slice(at, at + SUBSCRIPTION_ID_LENGTH)}`);
  return sources;
}
