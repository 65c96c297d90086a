/**
 * The requests a pending follow-up refresh answers. While a source's refresh runs, BullMQ keeps one follow-up
 * behind it (`keepLastIfActive`), but only the LAST caller's data and options: an admin's resync followed by a
 * term-start re-render would run as a re-render (no fetch) at background priority. Every caller therefore
 * records its request here first, and queues the merge of all of them ({@link mergeFollowUps}).
 */

import type { RedisClient } from '../lib/redis-target.ts';
import type { RefreshReason } from './contract.ts';

/** What one caller asks of a refresh: why, how urgently (BullMQ priority, 1 first), and not before when. */
export interface RefreshAsk {
  reason: RefreshReason;
  priority: number;
  /** Run no earlier than this many ms after being queued (a confirming re-fetch). */
  delayMs?: number;
}

/**
 * One refresh that answers every ask: a fetching reason wins over `rerender` (which never asks the
 * university), then the most urgent ask's reason; the highest priority of all; the longest delay, since a
 * request never pulls a confirming re-fetch forward (the same rule as deduplication into a queued one).
 * Undefined for no asks.
 */
export function mergeFollowUps(asks: readonly RefreshAsk[]): RefreshAsk | undefined {
  let merged: RefreshAsk | undefined;
  for (const ask of asks) {
    if (merged === undefined) {
      merged = { ...ask };
      continue;
    }
    const winner = outranks(ask, merged) ? ask : merged;
    const delayMs = Math.max(merged.delayMs ?? 0, ask.delayMs ?? 0);
    merged = {
      reason: winner.reason,
      priority: Math.min(merged.priority, ask.priority),
      ...(delayMs > 0 ? { delayMs } : {}),
    };
  }
  return merged;
}

/**
 * Whether `ask`'s reason should be the follow-up's rather than `current`'s. Equal priorities fall back to the
 * reasons' names: Redis returns a set's members in no set order, and every caller must reach the same merge.
 */
function outranks(ask: RefreshAsk, current: RefreshAsk): boolean {
  const fetches = (reason: RefreshReason) => reason !== 'rerender';
  if (fetches(ask.reason) !== fetches(current.reason)) return fetches(ask.reason);
  if (ask.priority !== current.priority) return ask.priority < current.priority;
  return ask.reason < current.reason;
}

/** Whether two asks would queue the same job. */
export function sameAsk(a: RefreshAsk | undefined, b: RefreshAsk | undefined): boolean {
  return a?.reason === b?.reason && a?.priority === b?.priority && (a?.delayMs ?? 0) === (b?.delayMs ?? 0);
}

/**
 * How long the asks of a follow-up are kept: well beyond a running refresh's retries (the follow-up is queued
 * only when the running job ends, retries included), yet one small set per follow-up never piles up.
 */
const KEEP_ASKS_SECONDS = 24 * 3600;

/** The asks recorded per follow-up job id, in Redis (a SET of JSON asks with a TTL). */
export class FollowUpAsks {
  readonly #redis: RedisClient;
  readonly #key: (jobId: string) => string;

  constructor(redis: RedisClient, key: (jobId: string) => string) {
    this.#redis = redis;
    this.#key = key;
  }

  /** Records `ask` for the follow-up `jobId` and resolves to the merge of every ask recorded for it. */
  async record(jobId: string, ask: RefreshAsk): Promise<RefreshAsk> {
    const key = this.#key(jobId);
    // One transaction: the merge this caller queues includes every ask recorded before its own.
    const results = await this.#redis
      .multi()
      .sadd(key, JSON.stringify(canonical(ask)))
      .expire(key, KEEP_ASKS_SECONDS)
      .smembers(key)
      .exec();
    const [error, members] = results?.[2] ?? [new Error('transaction aborted'), null];
    if (error) throw error;
    return mergeFollowUps(parseAsks(members as string[])) ?? ask;
  }

  /** The merge of every ask recorded for the follow-up `jobId` (undefined when none is). */
  async merged(jobId: string): Promise<RefreshAsk | undefined> {
    return mergeFollowUps(parseAsks(await this.#redis.smembers(this.#key(jobId))));
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
