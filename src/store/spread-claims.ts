/**
 * Who spreads a change. One change of a class shows in several timetables (its groups', its teachers', its
 * students'), and whichever of their refreshes sees it first queues the refreshes of the others. Each change is
 * claimed once, by a key named after the class and what it became, kept for a while: the refreshes it queued
 * then see a change that is claimed already and queue nothing (no ping-pong between a group and its students),
 * while another change they happen to see first is theirs to spread.
 */
import type { RedisClient } from '../lib/redis-target.ts';
import type { RedisKeys } from './keys.ts';

/** The claims, in Redis: one short string key with a TTL per change. */
export class SpreadClaims {
  readonly #redis: RedisClient;
  readonly #keys: Pick<RedisKeys, 'spreadClaim'>;

  constructor(redis: RedisClient, keys: Pick<RedisKeys, 'spreadClaim'>) {
    this.#redis = redis;
    this.#keys = keys;
  }

  /**
   * Claims each of `changes` for `ttlMs`: answers, in order, whether this caller is the first to claim it within
   * that time (one round trip).
   */
  async claim(changes: readonly string[], ttlMs: number): Promise<boolean[]> {
    if (changes.length === 0) return [];
    const pipeline = this.#redis.pipeline();
    for (const change of changes) pipeline.set(this.#keys.spreadClaim(change), '1', 'PX', Math.max(1, ttlMs), 'NX');
    const answers = (await pipeline.exec()) ?? [];
    return answers.map(([error, answer]) => {
      if (error) throw error;
      return answer === 'OK';
    });
  }
}
