/**
 * The freshness planner's state (docs/design.md#freshness): for each active source, when the background should
 * refresh it next (`next`), when it must be queued at the latest (`deadline`, the wait guarantee), and what
 * the planner learnt of it, packed in a few bytes. The pacer takes the sources to queue from here atomically.
 */
import { createHash } from 'node:crypto';
import { loadScript } from '../lib/lua-script.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import type { SourceKey } from '../timetable/source.ts';
import type { RefreshReason } from './follow-up-asks.ts';
import type { RedisKeys } from './keys.ts';

/** Takes the sources to queue and marks them taken (freshness-take.lua). */
const TAKE = loadScript(import.meta.dirname, 'freshness-take');
/** Moves taken sources from their provisional mark to their settled one, unless planned meanwhile. */
const SETTLE = loadScript(import.meta.dirname, 'freshness-settle');
/** Unparks sources still parked by what is gone (freshness-unpark.lua). */
const UNPARK = loadScript(import.meta.dirname, 'freshness-unpark');

/** The refresh reasons whose fetches the background budget pays for. */
const BACKGROUND_REASONS: ReadonlySet<RefreshReason> = new Set(['schedule', 'related']);

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

/**
 * When a source new to the planner is first due, both its next refresh and its deadline: its
 * {@link spreadUnit} of one `intervalMs` from `now`. Sources added together (every one, on a first reconcile or
 * a switch from the fixed policy) would otherwise all come due by their deadline at once, a crowd the overdue
 * path queues faster than it is refreshed. One activated within the last interval (`activeSince`) comes no later
 * than an interval after its activation: those are spread by their activations already.
 */
export function firstPlanAt(source: SourceKey, now: number, intervalMs: number, activeSince?: number): number {
  const spread = now + spreadUnit(source) * intervalMs;
  const latest = (activeSince ?? Number.NEGATIVE_INFINITY) + intervalMs;
  return Math.round(latest > now ? Math.min(spread, latest) : spread);
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
   * Makes the planned sources equal to `active`: a new one gets its first next refresh, and its deadline,
   * spread over one `intervalMs` from `now`, but no later than one interval after its activation when that was
   * within the last interval (`activatedAt`: a source whose first fetch failed, so that its refresh did not plan
   * it, still comes within an interval of being asked for, however late the reconciler syncs it); a planned one
   * keeps its plan; one not in `active` is forgotten. Answers how many were added, and which were removed.
   */
  async sync(
    active: readonly SourceKey[],
    now: number,
    intervalMs: number,
    activatedAt: (sources: readonly SourceKey[]) => Promise<readonly (number | undefined)[]> = async () => [],
  ): Promise<{ added: number; removed: SourceKey[] }> {
    const planned = new Set(await this.redis.zrange(this.keys.freshnessDeadline, '0', '-1'));
    const wanted = new Set(active);
    const added = active.filter((source) => !planned.has(source));
    const removed = [...planned].filter((source) => !wanted.has(source));
    for (let start = 0; start < added.length; start += BATCH) {
      const batch = added.slice(start, start + BATCH);
      const since = await activatedAt(batch);
      const next = batch.flatMap((source, index) => [
        String(firstPlanAt(source, now, intervalMs, since[index])),
        source,
      ]);
      // The deadline is the same time: a source new to the planner has no refresh of its own to count from.
      const deadline = next;
      // NX: a source planned by its first refresh meanwhile keeps that plan.
      await this.redis
        .multi()
        .zadd(this.keys.freshnessNext, 'NX', ...next)
        .zadd(this.keys.freshnessDeadline, 'NX', ...deadline)
        .exec();
    }
    for (let start = 0; start < removed.length; start += BATCH) await this.forget(removed.slice(start, start + BATCH));
    return { added: added.length, removed };
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
   * Takes up to `count` sources to queue at `now`, those due by their deadline first (up to `overdueMax` of them
   * even beyond `count`), then those of lowest next refresh, and gives each a provisional next refresh and
   * deadline, atomically: no two pacers' steps take the same source. A source is due `leadMs` before its
   * deadline; the provisional mark lies `retakeMs` past that lead, so a source taken and never queued (the
   * process died, the queue failed) is due again `retakeMs` later. Once queued, {@link settle} moves it on.
   */
  async take(now: number, count: number, overdueMax: number, timing: TakeTiming): Promise<TakenSource[]> {
    if (count <= 0 && overdueMax <= 0) return [];
    const keys = [this.keys.freshnessNext, this.keys.freshnessDeadline, this.keys.freshnessState];
    const args = [Math.round(now), count, overdueMax, Math.round(timing.leadMs), provisionalMs(timing)];
    const reply = (await TAKE.run(this.redis, keys, args)) as (string | number | null)[];
    const taken: TakenSource[] = [];
    for (let index = 0; index + 2 < reply.length; index += 3)
      taken.push({
        source: String(reply[index]),
        overdue: reply[index + 1] === 1,
        state: unpackFreshness(reply[index + 2] as string | null),
      });
    return taken;
  }

  /**
   * Moves `sources`, taken at `takenAt` with `timing` and since queued, from their provisional mark to `at`
   * (next refresh and deadline); one whose refresh planned it meanwhile keeps that plan.
   */
  async settle(sources: readonly SourceKey[], takenAt: number, timing: TakeTiming, at: number): Promise<void> {
    if (sources.length === 0) return;
    const provisional = Math.round(takenAt) + provisionalMs(timing);
    const keys = [this.keys.freshnessNext, this.keys.freshnessDeadline];
    await SETTLE.run(this.redis, keys, [provisional, Math.round(at), ...sources]);
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

  /**
   * Counts a fetch of a background refresh (`schedule` or `related`) as it starts; other reasons are not the
   * background's and count nothing. The pacer spends its budget by this count.
   */
  async countBackgroundFetch(reason: RefreshReason): Promise<void> {
    if (BACKGROUND_REASONS.has(reason)) await this.redis.hincrby(this.keys.freshnessBackgroundFetches, reason, 1);
  }

  /** The background fetches counted so far, by reason (counters that only grow). */
  async backgroundFetches(): Promise<{ schedule: number; related: number }> {
    const [schedule, related] = await this.redis.hmget(this.keys.freshnessBackgroundFetches, 'schedule', 'related');
    return { schedule: Number(schedule ?? 0), related: Number(related ?? 0) };
  }

  /** The planned sources parked by `groups` (teachers whose classes all show in groups). */
  async parkedByGroups(): Promise<SourceKey[]> {
    const parked = await this.redis.smembers(this.keys.freshnessParked);
    const found: SourceKey[] = [];
    for (let start = 0; start < parked.length; start += BATCH) {
      const batch = parked.slice(start, start + BATCH);
      const states = await this.redis.hmget(this.keys.freshnessState, ...batch);
      batch.forEach((source, index) => {
        if (unpackFreshness(states[index])?.parkedBy === 'groups') found.push(source);
      });
    }
    return found;
  }

  /**
   * Unparks each of `parked` that is still parked by what it names: its state forgets what parked it, its next
   * refresh comes at the latest at its `next`, and its deadline at the latest `intervalMs` from `now` (neither is
   * ever moved later). Answers how many were unparked.
   */
  async unpark(
    parked: readonly { source: SourceKey; parkedBy: ParkedBy; next: number }[],
    now: number,
    intervalMs: number,
  ): Promise<number> {
    const keys = [
      this.keys.freshnessNext,
      this.keys.freshnessDeadline,
      this.keys.freshnessState,
      this.keys.freshnessParked,
    ];
    let unparked = 0;
    for (let start = 0; start < parked.length; start += BATCH) {
      const batch = parked.slice(start, start + BATCH);
      const args = [
        Math.round(now + intervalMs),
        ...batch.flatMap((item) => [item.source, item.parkedBy, Math.round(item.next)]),
      ];
      unparked += Number(await UNPARK.run(this.redis, keys, args));
    }
    return unparked;
  }
}

/** How {@link FreshnessStore.take} marks what it takes. */
export interface TakeTiming {
  /** A source is due this long before its deadline (the wait guarantee's margin). */
  leadMs: number;
  /** A source taken and not settled is due again this long after it was taken. */
  retakeMs: number;
}

/** The provisional mark's distance from the time a source is taken: due again `retakeMs` later. */
function provisionalMs(timing: TakeTiming): number {
  return Math.round(timing.leadMs + timing.retakeMs);
}
