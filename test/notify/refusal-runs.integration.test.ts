/**
 * The guard against a wave of refusals (notify/refusal-runs.ts) on a real Redis: the first refusals of a run stay
 * `gone`, the rest are `misconfigured` with the channel's own reason, a message taken ends the run, other answers
 * leave it as it is, and workers sharing the key count one run. MAX's key is the generalised key's, unchanged.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DELIVERY_PREFIX } from '../../src/notify/channel.ts';
import { RefusalRuns } from '../../src/notify/refusal-runs.ts';
import { redisKeys } from '../../src/store/keys.ts';
import { deletePrefix, uniquePrefix } from '../support/service.ts';

const prefix = uniquePrefix('refusal-runs');
const keys = redisKeys(prefix);
let redis: Redis;

beforeAll(() => {
  redis = new Redis(inject('redisUrl'));
});

afterAll(async () => {
  redis.disconnect();
  await deletePrefix(inject('redisUrl'), prefix);
});

const gone = { kind: 'gone', reason: '550 5.1.1' } as const;

function runs(key = keys.channelRefusals(DELIVERY_PREFIX.email)): RefusalRuns {
  return new RefusalRuns(redis, key, { limit: 3, wave: (run, last) => `${run} in a row, the last: ${last}` });
}

describe('a run of refusals', () => {
  it('keeps the first refusals of a run, turns the rest into misconfigured, and ends with a message taken', async () => {
    const one = runs();
    const other = runs();
    const kinds = [];
    for (const judge of [one, other, one, other, one]) kinds.push((await judge.judge(gone)).kind);
    expect(kinds).toEqual(['gone', 'gone', 'gone', 'misconfigured', 'misconfigured']);
    expect(await other.inWave()).toBe(true);
    expect(await one.judge(gone)).toEqual({ kind: 'misconfigured', reason: '6 in a row, the last: 550 5.1.1' });
    // Other answers neither count nor end it.
    expect(await one.judge({ kind: 'failed', permanent: false, reason: 'timeout' })).toMatchObject({ kind: 'failed' });
    expect((await one.judge(gone)).kind).toBe('misconfigured');
    expect(await other.judge({ kind: 'sent', messageId: 'm' })).toEqual({ kind: 'sent', messageId: 'm' });
    expect(await one.inWave()).toBe(false);
    expect((await one.judge(gone)).kind).toBe('gone');
    expect(await redis.ttl(keys.channelRefusals(DELIVERY_PREFIX.email))).toBeGreaterThan(3000);
  });

  it('counts per channel; MAX keeps its key', async () => {
    expect(keys.channelRefusals(DELIVERY_PREFIX.max)).toBe(keys.mxRefusalsInARow);
    expect(keys.mxRefusalsInARow).toBe(`${prefix}:mx:refusals-in-a-row`);
    const max = runs(keys.channelRefusals(DELIVERY_PREFIX.max));
    for (let n = 0; n < 3; n += 1) await max.judge(gone);
    expect((await runs(keys.channelRefusals(DELIVERY_PREFIX.telegram)).judge(gone)).kind).toBe('gone');
    expect((await max.judge(gone)).kind).toBe('misconfigured');
  });
});
