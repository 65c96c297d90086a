/**
 * The freshness planner's state (docs/design.md#freshness): for each active source, when the background should
 * refresh it next (`next`), when it must be queued at the latest (`deadline`, the wait guarantee), and what
 * the planner learnt of it, packed in a few bytes. The pacer takes the sources to queue from here atomically.
 */
import { createHash } from 'node:crypto';
import { loadScript } from '../lib/lua-script.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import type { SourceKey } from '../timetable/source.ts';
import type { RedisKeys } from './keys.ts';

/** Takes the sources to queue and marks them taken (freshness-take.lua). */
const TAKE = loadScript(import.meta.dirname, 'freshness-take');

/** What explains a parked source: its group's source, or `groups` for a teacher whose classes all show in groups. */
export type ParkedBy = SourceKey | 'groups';

/** What the planner knows of one source. */
export interface FreshnessState {
  /** When it was last refreshed successfully (epoch ms, kept to the second). */
  lastRefresh: number;
  /** Changes seen over {@link observedMs} (decayed, so that old behaviour fades). */
  changes: number;
  /** Time it has been observed over (ms, kept to the second). */
  observedMs: number;
  /** How much a change of it matters (1 = nobody in particular; more: pushed, told, classes soon). */
  weight: number;
  /** What explains it, when parked. */
  parkedBy?: ParkedBy | undefined;
}

/** One planned source, as the admin table shows it. */
export interface PlannedSource {
  next: number;
  deadline: number;
  state: FreshnessState | undefined;
}

/** A source the pacer took. */
export interface TakenSource {
  source: SourceKey;
  /** It was past its deadline. */
  overdue: boolean;
  state: FreshnessState | undefined;
}

/** The plan of one source after a refresh. */
export interface SourcePlan {
  next: number;
  deadline: number;
  state: FreshnessState;
}

/**
 * Packs a state into a few bytes: `<last s, base 36>|<changes>|<observed s, base 36>|<weight>|<parked by>`,
 * e.g. `t3b9kw|1.25|9ix|2|group:12` (about 25 bytes).
 */
export function packFreshness(state: FreshnessState): string {
  const seconds = (ms: number) => Math.max(0, Math.round(ms / 1000)).toString(36);
  const changes = Math.round(state.changes * 100) / 100;
  const weight = Math.round(state.weight * 100) / 100;
  return [seconds(state.lastRefresh), changes, seconds(state.observedMs), weight, state.parkedBy ?? ''].join('|');
}

/** Reads a packed state; undefined for anything else (a future layout is planned afresh, never misread). */
export function unpackFreshness(packed: string | null | undefined): FreshnessState | undefined {
  if (!packed) return undefined;
  const [last, changes, observed, weight, parkedBy, ...extra] = packed.split('|');
  if (last === undefined || changes === undefined || observed === undefined || weight === undefined) return undefined;
  if (parkedBy === undefined || extra.length > 0) return undefined;
  const state: FreshnessState = {
    lastRefresh: Number.parseInt(last, 36) * 1000,
    changes: Number(changes),
    observedMs: Number.parseInt(observed, 36) * 1000,
    weight: Number(weight),
    ...(parkedBy === '' ? {} : { parkedBy: parkedBy as ParkedBy }),
  };
  const numbers = [state.lastRefresh, state.changes, state.observedMs, state.weight];
  return numbers.every((value) => Number.isFinite(value) && value >= 0) ? state : undefined;
}

/**
 * Where in one interval a source new to the planner comes first, from its key (0 ≤ unit < 1): new sources
 * spread evenly instead of coming all at once, and the same source always lands at the same place.
 */
export function spreadUnit(source: SourceKey): number {
  return createHash('sha1').update(`freshness:${source}`).digest().readUInt32BE(0) / 0x1_0000_0000;
}

/** Members handled per command when syncing. */
const BATCH = 500;

/** The planner's keys in Redis. */
export class FreshnessStore {
  private readonly redis: RedisClient;
  private readonly keys: RedisKeys;

  constructor(redis: RedisClient, keys: RedisKeys) {
    this.redis = redis;
    this.keys = keys;
  }

  /**
   * Makes the planned sources equal to `active`: a new one gets its first next refresh spread over one
   * `intervalMs` from `now` and its deadline one interval away; a planned one keeps its plan; one not in
   * `active` is forgotten. Answers how many were added and removed.
   */
  async sync(
    active: readonly SourceKey[],
    now: number,
    intervalMs: number,
  ): Promise<{ added: number; removed: number }> {
    const planned = new Set(await this.redis.zrange(this.keys.freshnessDeadline, '0', '-1'));
    const wanted = new Set(active);
    const added = active.filter((source) => !planned.has(source));
    const removed = [...planned].filter((source) => !wanted.has(source));
    for (let start = 0; start < added.length; start += BATCH) {
      const batch = added.slice(start, start + BATCH);
      const next = batch.flatMap((source) => [String(Math.round(now + spreadUnit(source) * intervalMs)), source]);
      const deadline = batch.flatMap((source) => [String(now + intervalMs), source]);
      // NX: a source planned by its first refresh meanwhile keeps that plan.
      await this.redis
        .multi()
        .zadd(this.keys.freshnessNext, 'NX', ...next)
        .zadd(this.keys.freshnessDeadline, 'NX', ...deadline)
        .exec();
    }
    for (let start = 0; start < removed.length; start += BATCH) await this.forget(removed.slice(start, start + BATCH));
    return { added: added.length, removed: removed.length };
  }

  /** Forgets the plans of `sources`. */
  async forget(sources: readonly SourceKey[]): Promise<void> {
    if (sources.length === 0) return;
    await this.redis
      .multi()
      .zrem(this.keys.freshnessNext, ...sources)
      .zrem(this.keys.freshnessDeadline, ...sources)
      .hdel(this.keys.freshnessState, ...sources)
      .srem(this.keys.freshnessParked, ...sources)
      .exec();
  }

  /** What the planner knows of `source`. */
  async state(source: SourceKey): Promise<FreshnessState | undefined> {
    return unpackFreshness(await this.redis.hget(this.keys.freshnessState, source));
  }

  /** Stores the plan of `source` after a refresh (its next refresh, its deadline, what was learnt). */
  async plan(source: SourceKey, plan: SourcePlan): Promise<void> {
    const multi = this.redis
      .multi()
      .hset(this.keys.freshnessState, source, packFreshness(plan.state))
      .zadd(this.keys.freshnessNext, Math.round(plan.next), source)
      .zadd(this.keys.freshnessDeadline, Math.round(plan.deadline), source);
    if (plan.state.parkedBy === undefined) multi.srem(this.keys.freshnessParked, source);
    else multi.sadd(this.keys.freshnessParked, source);
    await multi.exec();
  }

  /**
   * Takes up to `count` sources to queue at `now`, those past their deadline first (up to `overdueMax` of them
   * even beyond `count`), then those of lowest next refresh, and gives each a provisional next refresh and
   * deadline `retakeMs` from now, atomically: no two pacers' steps take the same source.
   */
  async take(now: number, count: number, overdueMax: number, retakeMs: number): Promise<TakenSource[]> {
    if (count <= 0 && overdueMax <= 0) return [];
    const keys = [this.keys.freshnessNext, this.keys.freshnessDeadline, this.keys.freshnessState];
    const reply = (await TAKE.run(this.redis, keys, [Math.round(now), count, overdueMax, retakeMs])) as (
      | string
      | number
      | null
    )[];
    const taken: TakenSource[] = [];
    for (let index = 0; index + 2 < reply.length; index += 3)
      taken.push({
        source: String(reply[index]),
        overdue: reply[index + 1] === 1,
        state: unpackFreshness(reply[index + 2] as string | null),
      });
    return taken;
  }

  /** The plans of `sources` (undefined for a source not planned), read in one round trip. */
  async planned(sources: readonly SourceKey[]): Promise<(PlannedSource | undefined)[]> {
    if (sources.length === 0) return [];
    const replies = await this.redis
      .multi()
      .zmscore(this.keys.freshnessNext, ...sources)
      .zmscore(this.keys.freshnessDeadline, ...sources)
      .hmget(this.keys.freshnessState, ...sources)
      .exec();
    const [next, deadline, states] = (replies ?? []).map(([error, value]) => {
      if (error) throw error;
      return value as (string | null)[];
    });
    return sources.map((_, index) => {
      const at = next?.[index];
      const until = deadline?.[index];
      if (at === null || at === undefined || until === null || until === undefined) return undefined;
      return { next: Number(at), deadline: Number(until), state: unpackFreshness(states?.[index]) };
    });
  }

  /** How many sources are planned: the active sources, once the reconciler has synced them. */
  async size(): Promise<number> {
    return this.redis.zcard(this.keys.freshnessDeadline);
  }

  /** How many planned sources are parked. */
  async parkedCount(): Promise<number> {
    return this.redis.scard(this.keys.freshnessParked);
  }

  /** Charges `count` related refreshes, queued by a refresh job, to the background budget. */
  async chargeRelated(count: number): Promise<void> {
    if (count > 0) await this.redis.incrby(this.keys.freshnessRelatedCharge, count);
  }

  /** The related refreshes charged since the last call (the pacer spends them from its credit). */
  async drainRelated(): Promise<number> {
    return Number((await this.redis.getdel(this.keys.freshnessRelatedCharge)) ?? 0);
  }
}
