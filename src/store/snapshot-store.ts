import { createHash } from 'node:crypto';
import type { ChainableCommander } from 'ioredis';
import { loadScript } from '../lib/lua-script.ts';
import { packJson, unpackJson } from '../lib/packed-json.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import { mergeOptionValues, type OptionValues, optionValuesOf } from '../timetable/event-text.ts';
import type { ChangeRecord, PublishedState } from '../timetable/publication.ts';
import type { SourceKey } from '../timetable/source.ts';
import type { EntryProblem, TimetableEntry } from '../timetable/types.ts';
import { packChange } from './change-bounds.ts';
import type { RedisKeys } from './keys.ts';

/** The last good fetch of a source, normalised: entries sorted by id, and its digest. */
export interface Snapshot {
  /** Digest of the normalised entries: equal digests mean an unchanged timetable. */
  hash: string;
  fetchedAt: number;
  /** The calendar's display name. */
  name: string;
  entries: TimetableEntry[];
  problems: EntryProblem[];
}

/** Completes the option values of a source last published before the mark (snapshot-option-values-fill.lua). */
const FILL_OPTION_VALUES = loadScript(import.meta.dirname, 'snapshot-option-values-fill');

/**
 * The member of a source's option values set that says it holds its current snapshot's values too: added with
 * every snapshot since, so a set without it was last written before (or never, for an empty timetable).
 */
const VALUES_COMPLETE = 'complete';

/** How many changes a source's log keeps. */
export const CHANGE_LOG_LENGTH = 20;

/** Sorts entries by id (then content, for repeated ids) and digests them: the same timetable, the same digest. */
export function normaliseEntries(entries: readonly TimetableEntry[]): { entries: TimetableEntry[]; hash: string } {
  const keyed = entries.map((entry) => ({ entry, text: JSON.stringify(entry) }));
  keyed.sort((a, b) => a.entry.id - b.entry.id || (a.text < b.text ? -1 : a.text > b.text ? 1 : 0));
  const digest = createHash('sha256');
  for (const { text } of keyed) digest.update(text).update('\n');
  return { entries: keyed.map(({ entry }) => entry), hash: digest.digest('base64url').slice(0, 22) };
}

/**
 * Snapshots, published states and change logs of sources in Redis, each value packed (compressed JSON,
 * lib/packed-json.ts); values stored as plain JSON text by earlier releases are read as well.
 */
export class SnapshotStore {
  private readonly redis: RedisClient;
  private readonly keys: RedisKeys;

  constructor(redis: RedisClient, keys: RedisKeys) {
    this.redis = redis;
    this.keys = keys;
  }

  /** The snapshot and what was published from it, read together. */
  async load(source: SourceKey): Promise<{ snapshot: Snapshot | undefined; published: PublishedState | undefined }> {
    const [snapshot, published] = await this.redis.mgetBuffer(this.keys.snapshot(source), this.keys.published(source));
    return { snapshot: unpack<Snapshot>(snapshot), published: unpack<PublishedState>(published) };
  }

  /** The last good fetch of a source. */
  async snapshot(source: SourceKey): Promise<Snapshot | undefined> {
    return unpack<Snapshot>(await this.redis.getBuffer(this.keys.snapshot(source)));
  }

  /**
   * Queues the store of a snapshot on `multi`, and adds its subgroups and kinds to those the source ever had:
   * a subscribed URL with `?subgroup=2` or `?exclude=лекция` must stay valid through holidays and exams. The set
   * is marked complete in the same transaction, so {@link timetableOptionValues} need not read the snapshot.
   * `packed`: the snapshot's packed form, made beforehand (lib/packed-json.ts).
   */
  writeSnapshot(
    multi: ChainableCommander,
    source: SourceKey,
    snapshot: Snapshot,
    packed: Buffer = packJson(snapshot),
  ): ChainableCommander {
    multi.set(this.keys.snapshot(source), packed);
    return multi.sadd(
      this.keys.optionValues(source),
      VALUES_COMPLETE,
      ...optionValueMembers(optionValuesOf(snapshot.entries)),
    );
  }

  /**
   * The subgroups and kinds the source's stored snapshots have had. Sources stored before this was kept
   * start from their next publication: callers add the current snapshot's own, or read
   * {@link timetableOptionValues}.
   */
  async optionValues(source: SourceKey): Promise<OptionValues> {
    return optionValuesFrom(await this.redis.smembers(this.keys.optionValues(source)));
  }

  /**
   * The subgroups and kinds the timetable of `source` has had, its current snapshot's included; undefined before
   * its first snapshot. One small set is read (under 100 bytes for the simulator's timetables, where the packed
   * snapshot is about 1.4 KB and 13 KB of JSON once decoded): every publication keeps it complete. For a source last published before the set was marked complete, the
   * snapshot is decoded once and the set filled with its values and the mark.
   */
  async timetableOptionValues(source: SourceKey): Promise<OptionValues | undefined> {
    const key = this.keys.optionValues(source);
    const members = await this.redis.smembers(key);
    if (members.includes(VALUES_COMPLETE)) return optionValuesFrom(members);
    const snapshot = await this.snapshot(source);
    if (snapshot === undefined) return undefined;
    const values = mergeOptionValues(optionValuesFrom(members), optionValuesOf(snapshot.entries));
    await FILL_OPTION_VALUES.run(
      this.redis,
      [this.keys.snapshot(source), key],
      [VALUES_COMPLETE, ...optionValueMembers(values)],
    );
    return values;
  }

  /** Queues the store of a published state on `multi` (`packed`: its packed form, made beforehand). */
  writePublished(
    multi: ChainableCommander,
    source: SourceKey,
    published: PublishedState,
    packed: Buffer = packJson(published),
  ): ChainableCommander {
    return multi.set(this.keys.published(source), packed);
  }

  /**
   * Queues a change record on `multi`, keeping the newest {@link CHANGE_LOG_LENGTH}; its lists are shortened
   * when it would take more than `CHANGE_RECORD_BYTES` (change-bounds.ts).
   */
  appendChange(multi: ChainableCommander, source: SourceKey, change: ChangeRecord): ChainableCommander {
    const key = this.keys.changes(source);
    return multi.lpush(key, packChange(change)).ltrim(key, 0, CHANGE_LOG_LENGTH - 1);
  }

  /**
   * Queues on `multi` the note that the targets of `source` are owed a push: set in the transaction that
   * publishes a change, cleared once the push jobs are queued, so that a crash in between is repaired by the
   * next refresh.
   */
  markPushOwed(multi: ChainableCommander, source: SourceKey): ChainableCommander {
    return multi.sadd(this.keys.pushOwed, source);
  }

  /** Whether a published change of `source` has not been pushed to its targets yet. */
  async isPushOwed(source: SourceKey): Promise<boolean> {
    return (await this.redis.sismember(this.keys.pushOwed, source)) === 1;
  }

  /** The push jobs of `source`'s last change are queued. */
  async clearPushOwed(source: SourceKey): Promise<void> {
    await this.redis.srem(this.keys.pushOwed, source);
  }

  /** The newest changes first. */
  async changes(source: SourceKey): Promise<ChangeRecord[]> {
    const items = await this.redis.lrangeBuffer(this.keys.changes(source), 0, CHANGE_LOG_LENGTH - 1);
    return items.map((item) => unpackJson<ChangeRecord>(item));
  }
}

/** The members of an option values set that stand for `values`. */
function optionValueMembers({ subgroups, kinds }: OptionValues): string[] {
  return [...subgroups.map((subgroup) => `s:${subgroup}`), ...kinds.map((kind) => `k:${kind}`)];
}

/** The values an option values set's members stand for (the mark is none of them), sorted. */
function optionValuesFrom(members: readonly string[]): OptionValues {
  const subgroups = members.filter((member) => member.startsWith('s:')).map((member) => Number(member.slice(2)));
  const kinds = members.filter((member) => member.startsWith('k:')).map((member) => member.slice(2));
  return { subgroups: subgroups.sort((a, b) => a - b), kinds: kinds.sort() };
}

function unpack<T>(bytes: Buffer | null | undefined): T | undefined {
  return bytes === null || bytes === undefined ? undefined : unpackJson<T>(bytes);
}
