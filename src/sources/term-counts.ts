/**
 * One parity per deployment: how many entries of every stored timetable start on each date, from which the
 * deployment's term starts are inferred (timetable/terms.ts). Each source's counts replace its previous ones,
 * atomically, so a repeated or concurrent publication never counts a timetable twice. This module owns the
 * keys `termCounts` and `sourceTermCounts`.
 */
import type { ChainableCommander, Redis } from 'ioredis';
import { resolveTermStarts, type StartDateCounts, type TermStart } from '../timetable/terms.ts';
import type { RedisKeys } from './keys.ts';
import type { SourceKey } from './source.ts';

/**
 * KEYS: totals, per-source counts. ARGV: source, its new counts as a JSON object (`{}` forgets it).
 * Subtracts the source's previous counts from the totals, adds the new ones, and keeps them for next time.
 */
const REPLACE_COUNTS = `
local previous = redis.call('HGET', KEYS[2], ARGV[1])
if previous then
  for date, entries in pairs(cjson.decode(previous)) do
    if redis.call('HINCRBY', KEYS[1], date, -entries) <= 0 then redis.call('HDEL', KEYS[1], date) end
  end
end
local any = false
for date, entries in pairs(cjson.decode(ARGV[2])) do
  redis.call('HINCRBY', KEYS[1], date, entries)
  any = true
end
if any then redis.call('HSET', KEYS[2], ARGV[1], ARGV[2]) else redis.call('HDEL', KEYS[2], ARGV[1]) end
return 1
`;

function encode(counts: StartDateCounts): string {
  return JSON.stringify(Object.fromEntries([...counts].filter(([, entries]) => entries > 0)));
}

function decode(fields: Record<string, string>): Map<string, number> {
  return new Map(Object.entries(fields).map(([date, entries]) => [date, Number(entries)]));
}

/** Queues on `multi` the removal of a source's counts (a source forgotten entirely). */
export function forgetTermCounts(multi: ChainableCommander, keys: RedisKeys, source: SourceKey): ChainableCommander {
  return multi.eval(REPLACE_COUNTS, 2, keys.termCounts, keys.sourceTermCounts, source, '{}');
}

/** Start-date counts of every stored timetable, and the term starts they give. */
export class TermCountStore {
  private readonly redis: Redis;
  private readonly keys: RedisKeys;

  constructor(redis: Redis, keys: RedisKeys) {
    this.redis = redis;
    this.keys = keys;
  }

  /** Queues on `multi` the replacement of `source`'s counts (in the transaction that stores its snapshot). */
  write(multi: ChainableCommander, source: SourceKey, counts: StartDateCounts): ChainableCommander {
    return multi.eval(REPLACE_COUNTS, 2, this.keys.termCounts, this.keys.sourceTermCounts, source, encode(counts));
  }

  /** The deployment's counts: every stored timetable's entries by start date. */
  async totals(): Promise<Map<string, number>> {
    return decode(await this.redis.hgetall(this.keys.termCounts));
  }

  /** The deployment's counts as they will be once `source` has `counts` instead of what it had (read only). */
  async totalsWith(source: SourceKey, counts: StartDateCounts): Promise<Map<string, number>> {
    const [totals, previous] = await Promise.all([this.totals(), this.redis.hget(this.keys.sourceTermCounts, source)]);
    const before = previous === null ? {} : (JSON.parse(previous) as Record<string, number>);
    for (const [date, entries] of Object.entries(before)) totals.set(date, (totals.get(date) ?? 0) - entries);
    for (const [date, entries] of counts) totals.set(date, (totals.get(date) ?? 0) + entries);
    return totals;
  }

  /** The term starts in force now: `WEEK_PARITY_ANCHORS` when set, else inferred from every stored timetable. */
  async termStarts(configured: readonly string[]): Promise<TermStart[]> {
    return resolveTermStarts(configured, configured.length > 0 ? new Map() : await this.totals());
  }

  /** The term starts a publication of `source` with `counts` is rendered with. */
  async termStartsWith(
    configured: readonly string[],
    source: SourceKey,
    counts: StartDateCounts,
  ): Promise<TermStart[]> {
    return resolveTermStarts(configured, configured.length > 0 ? new Map() : await this.totalsWith(source, counts));
  }
}
