import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FollowUpAsks, type RefreshAsk } from '../../src/store/follow-up-asks.ts';
import { redisKeys } from '../../src/store/keys.ts';
import { deletePrefix, uniquePrefix } from '../support/service.ts';

const prefix = uniquePrefix('follow-up-asks');
const keys = redisKeys(prefix);
let redis: Redis;
let asks: FollowUpAsks;

beforeAll(() => {
  redis = new Redis(inject('redisUrl'));
  asks = new FollowUpAsks(redis, keys);
});

afterAll(async () => {
  await deletePrefix(inject('redisUrl'), prefix);
  await redis.quit();
});

const byReason = (list: RefreshAsk[]) => [...list].sort((a, b) => a.reason.localeCompare(b.reason));

describe('FollowUpAsks', () => {
  it('answers every ask recorded for the follow-up, its own included, each once, and keeps them a while', async () => {
    expect(await asks.list('group-1-after-a')).toEqual([]);
    expect(await asks.record('group-1-after-a', { reason: 'rerender', priority: 5 })).toEqual([
      { reason: 'rerender', priority: 5 },
    ]);
    // The same ask again, its fields in another order and a zero delay: one member still.
    await asks.record('group-1-after-a', { priority: 5, reason: 'rerender', delayMs: 0 });
    const all = await asks.record('group-1-after-a', { reason: 'confirm', priority: 3, delayMs: 30_000 });
    expect(byReason(all)).toEqual([
      { reason: 'confirm', priority: 3, delayMs: 30_000 },
      { reason: 'rerender', priority: 5 },
    ]);
    expect(byReason(await asks.list('group-1-after-a'))).toEqual(byReason(all));
    expect(await asks.list('group-1-after-b')).toEqual([]);
    expect(await redis.ttl(keys.followUpAsks('group-1-after-a'))).toBeGreaterThan(23 * 3600);
  });

  it('ignores members it did not write', async () => {
    await redis.sadd(keys.followUpAsks('group-2-after-a'), 'not json', '{"reason":"resync"}');
    expect(await asks.record('group-2-after-a', { reason: 'resync', priority: 1 })).toEqual([
      { reason: 'resync', priority: 1 },
    ]);
  });
});
