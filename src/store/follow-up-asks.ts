/**
 * The asks recorded for a pending follow-up refresh. While a source's refresh runs, BullMQ keeps one follow-up
 * behind it, but only the last caller's data and options; every caller therefore records its ask here first, and
 * queues the merge of all of them (`mergeFollowUps` in jobs/follow-ups.ts, which decides what wins).
 */
import type { RedisClient } from '../lib/redis-target.ts';
import type { RedisKeys } from './keys.ts';

/**
 * Why a refresh runs. `schedule`: the background rotation (or a parked source's longest wait); `related`: a
 * related source's refresh found a change this source must show too; `confirm` re-fetches a timetable that would remove most future classes; `rerender`
 * publishes the stored snapshot again, without asking the university, because the term starts changed.
 * Declared here, with the asks that persist it; the job contract re-exports it.
 */
export type RefreshReason = 'schedule' | 'related' | 'resync' | 'demand' | 'confirm' | 'subscription' | 'rerender';

/** What one caller asks of a refresh: why, how urgently (BullMQ priority, 1 first), and not before when. */
export interface RefreshAsk {
  reason: RefreshReason;
  priority: number;
  /** Run no earlier than this many ms after being queued (a confirming re-fetch). */
  delayMs?: number;
}

/**
 * How long the asks of a follow-up are kept: well beyond a running refresh's retries (the follow-up is queued
 * only when the running job ends, retries included), yet one small set per follow-up never piles up.
 */
const KEEP_ASKS_SECONDS = 24 * 3600;

/** The asks recorded per follow-up job id, in Redis (a SET of JSON asks with a TTL). */
export class FollowUpAsks {
  readonly #redis: RedisClient;
  readonly #keys: Pick<RedisKeys, 'followUpAsks'>;

  constructor(redis: RedisClient, keys: Pick<RedisKeys, 'followUpAsks'>) {
    this.#redis = redis;
    this.#keys = keys;
  }

  /** Records `ask` for the follow-up `jobId` and resolves to every ask recorded for it, `ask` included. */
  async record(jobId: string, ask: RefreshAsk): Promise<RefreshAsk[]> {
    const key = this.#keys.followUpAsks(jobId);
    // One transaction: what this caller merges includes every ask recorded before its own.
    const results = await this.#redis
      .multi()
      .sadd(key, JSON.stringify(canonical(ask)))
      .expire(key, KEEP_ASKS_SECONDS)
      .smembers(key)
      .exec();
    const [error, members] = results?.[2] ?? [new Error('transaction aborted'), null];
    if (error) throw error;
    return parseAsks(members as string[]);
  }

  /** Every ask recorded for the follow-up `jobId` (none when it has none or they expired). */
  async list(jobId: string): Promise<RefreshAsk[]> {
    return parseAsks(await this.#redis.smembers(this.#keys.followUpAsks(jobId)));
  }
}

/** The ask with its fields in one order, so that equal asks are one member of the set. */
function canonical(ask: RefreshAsk): RefreshAsk {
  return { reason: ask.reason, priority: ask.priority, ...(ask.delayMs ? { delayMs: ask.delayMs } : {}) };
}

/** Members we wrote ourselves; anything unreadable (a key written by hand) is ignored rather than trusted. */
function parseAsks(members: readonly string[]): RefreshAsk[] {
  const asks: RefreshAsk[] = [];
  for (const member of members) {
    try {
      const ask = JSON.parse(member) as Partial<RefreshAsk>;
      if (typeof ask.reason === 'string' && typeof ask.priority === 'number') asks.push(canonical(ask as RefreshAsk));
    } catch {
      // Not ours: skip it.
    }
  }
  return asks;
}
