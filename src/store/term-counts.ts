/**
 * One parity per deployment: how many distinct upstream entries of the stored timetables start on each date,
 * from which the deployment's term starts are inferred (timetable/terms.ts), and the term starts in force.
 *
 * Group, teacher and personal timetables hold the same upstream entries, so an entry counts once however many
 * timetables hold it: each source keeps its map entry id → start date, a reference count per `id|date` says
 * how many sources hold it, and the per-date totals move only when a reference count goes 0↔1. One Lua script
 * does all of it, so a repeated or concurrent publication never counts anything twice; a source's entries
 * replace what it had. Every key is under the service's prefix, so with a hash-tagged prefix they share one
 * Redis Cluster slot. This module owns the keys `termCounts` to `termStarts` of keys.ts.
 */
import type { ChainableCommander } from 'ioredis';
import { loadScript } from '../lib/lua-script.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import type { SourceKey } from '../timetable/source.ts';
import { resolveTermStarts, type TermStart, termStartDates } from '../timetable/terms.ts';
import type { TimetableEntry } from '../timetable/types.ts';
import type { RedisKeys } from './keys.ts';

/** Replaces a source's entries in the start-date counts (term-counts-replace.lua). */
const REPLACE_ENTRIES = loadScript(import.meta.dirname, 'term-counts-replace');

/** Stores term starts unless ones from newer counts are stored already (term-counts-store-starts.lua). */
const STORE_TERM_STARTS = loadScript(import.meta.dirname, 'term-counts-store-starts');

/** What a timetable adds to the counts. */
export type CountedEntry = Pick<TimetableEntry, 'id' | 'startDate' | 'weekType'>;

/** The term starts in force, as stored, and the version of the counts they were resolved from. */
export interface StoredTermStarts {
  version: number;
  termStarts: TermStart[];
}

/** What storing freshly resolved term starts did: `changed` when the dates in force are now different. */
export interface TermStartsUpdate {
  before: TermStart[] | undefined;
  after: TermStart[];
  version: number;
  changed: boolean;
}

function encode(entries: readonly CountedEntry[]): string {
  const byId: Record<string, string> = {};
  // An id given twice counts once, with its first start date (as countStartDates does).
  for (const entry of entries) byId[String(entry.id)] ??= entry.startDate;
  return JSON.stringify(byId);
}

function hasParity(entries: readonly CountedEntry[]): string {
  return entries.some((entry) => entry.weekType !== 0) ? '1' : '0';
}

function decode(fields: Record<string, string>): Map<string, number> {
  return new Map(Object.entries(fields).map(([date, entries]) => [date, Number(entries)]));
}

function replaceKeys(keys: RedisKeys): string[] {
  return [keys.termCounts, keys.sourceTermCounts, keys.termEntryRefs, keys.paritySources, keys.termCountsVersion];
}

/** Queues on `multi` the removal of a source's entries from the counts (a source forgotten entirely). */
export function forgetTermCounts(multi: ChainableCommander, keys: RedisKeys, source: SourceKey): ChainableCommander {
  return REPLACE_ENTRIES.queue(multi, replaceKeys(keys), [source, '{}', '0']);
}

/** Start-date counts of the stored timetables' distinct entries, and the term starts in force. */
export class TermCountStore {
  private readonly redis: RedisClient;
  private readonly keys: RedisKeys;

  constructor(redis: RedisClient, keys: RedisKeys) {
    this.redis = redis;
    this.keys = keys;
  }

  /** Queues on `multi` the replacement of `source`'s entries (in the transaction that stores its snapshot). */
  write(multi: ChainableCommander, source: SourceKey, entries: readonly CountedEntry[]): ChainableCommander {
    return REPLACE_ENTRIES.queue(multi, replaceKeys(this.keys), [source, encode(entries), hasParity(entries)]);
  }

  /** Whether `source`'s entries are counted. */
  async counts(source: SourceKey): Promise<boolean> {
    return (await this.redis.hexists(this.keys.sourceTermCounts, source)) === 1;
  }

  /** Whether no timetable is counted at all (a new deployment, one upgraded from before the counts, or lost keys). */
  async isEmpty(): Promise<boolean> {
    return (await this.redis.exists(this.keys.sourceTermCounts)) === 0;
  }

  /** Deletes the retired per-timetable counts (kept before entries were counted once): seeding replaces them. */
  async dropRetiredCounts(): Promise<void> {
    await this.redis.del(...this.keys.retiredTermCounts);
  }

  /** The deployment's counts: distinct entries of every stored timetable by start date. */
  async totals(): Promise<Map<string, number>> {
    return decode(await this.redis.hgetall(this.keys.termCounts));
  }

  /** The deployment's counts as they will be once `source` holds `entries` instead of what it had (read only). */
  async totalsWith(source: SourceKey, entries: readonly CountedEntry[]): Promise<Map<string, number>> {
    const [totals, stored] = await Promise.all([this.totals(), this.redis.hget(this.keys.sourceTermCounts, source)]);
    const before = stored === null ? {} : (JSON.parse(stored) as Record<string, string>);
    const after = JSON.parse(encode(entries)) as Record<string, string>;
    const leaving = Object.entries(before).filter(([id, date]) => after[id] !== date);
    const arriving = Object.entries(after).filter(([id, date]) => before[id] !== date);
    const pairs = [...leaving, ...arriving].map(([id, date]) => `${id}|${date}`);
    const refs = pairs.length === 0 ? [] : await this.redis.hmget(this.keys.termEntryRefs, ...pairs);
    const holders = (index: number) => Number(refs[index] ?? 0);
    leaving.forEach(([, date], index) => {
      if (holders(index) <= 1) totals.set(date, (totals.get(date) ?? 0) - 1);
    });
    arriving.forEach(([, date], index) => {
      if (holders(leaving.length + index) === 0) totals.set(date, (totals.get(date) ?? 0) + 1);
    });
    return totals;
  }

  /** The term starts a publication of `source` with `entries` is rendered with. */
  async termStartsWith(
    configured: readonly string[],
    source: SourceKey,
    entries: readonly CountedEntry[],
  ): Promise<TermStart[]> {
    return resolveTermStarts(configured, configured.length > 0 ? new Map() : await this.totalsWith(source, entries));
  }

  /** The term starts last stored, if any. */
  async stored(): Promise<StoredTermStarts | undefined> {
    const text = await this.redis.get(this.keys.termStarts);
    return text === null ? undefined : (JSON.parse(text) as StoredTermStarts);
  }

  /** The term starts in force: those stored, else resolved from the counts as they are now. */
  async termStarts(configured: readonly string[]): Promise<TermStart[]> {
    return (await this.stored())?.termStarts ?? resolveTermStarts(configured, await this.totals());
  }

  /** Sources with odd- or even-week entries: the feeds whose parity a change of term starts moves. */
  async paritySources(): Promise<SourceKey[]> {
    return this.redis.smembers(this.keys.paritySources);
  }

  /**
   * Resolves the term starts from the counts as they are now and stores them, unless term starts from newer
   * counts were stored meanwhile (compare-and-set on the counts' version, so concurrent publications end on
   * the newest). `changed` is true for exactly one caller per change of the dates in force.
   */
  async refresh(configured: readonly string[]): Promise<TermStartsUpdate> {
    const results = await this.redis.multi().hgetall(this.keys.termCounts).get(this.keys.termCountsVersion).exec();
    const [[, totals], [, version]] = (results ?? [
      [null, {}],
      [null, null],
    ]) as [[unknown, Record<string, string>], [unknown, string | null]];
    const next: StoredTermStarts = {
      version: Number(version ?? 0),
      termStarts: resolveTermStarts(configured, configured.length > 0 ? new Map() : decode(totals)),
    };
    const [written, previous] = (await STORE_TERM_STARTS.run(
      this.redis,
      [this.keys.termStarts],
      [String(next.version), JSON.stringify(next)],
    )) as [number, string];
    const before = previous === '' ? undefined : (JSON.parse(previous) as StoredTermStarts).termStarts;
    const changed = written === 1 && termStartDates(before ?? []).join() !== termStartDates(next.termStarts).join();
    return { before, after: next.termStarts, version: next.version, changed };
  }
}
