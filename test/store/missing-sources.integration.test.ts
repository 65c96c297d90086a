/**
 * The registry's memory of ids the university does not know, on the run's Redis: remembered with the
 * university's words for an hour by Redis's clock, bounded in number (the soonest to expire go first), and
 * gone by itself when nothing is written for an hour.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { MAX_MISSING_SOURCES, MISSING_TTL_SECONDS } from '../../src/store/registry.ts';
import { testContext } from '../support/service.ts';

let ctx: ServiceContext;
let close: () => Promise<void>;

beforeAll(async () => {
  ({ context: ctx, close } = await testContext());
});
afterAll(async () => close());

describe('unknown sources', () => {
  it('are remembered with what the university said, for an hour', async () => {
    await ctx.registry.rememberMissing('group:41', 'Группа не найдена');
    await ctx.registry.rememberMissing('employee:41', 'x'.repeat(1_000));
    expect(await ctx.registry.missingReason('group:41')).toBe('Группа не найдена');
    expect(await ctx.registry.missingReason('employee:41')).toBe('x'.repeat(200));
    expect(await ctx.registry.missingReason('group:42')).toBeUndefined();
    for (const key of [ctx.keys.missingSources, ctx.keys.missingSourcesExpiry]) {
      const ttl = await ctx.redis.pttl(key);
      expect(ttl).toBeGreaterThan(MISSING_TTL_SECONDS * 1000 - 60_000);
      expect(ttl).toBeLessThanOrEqual(MISSING_TTL_SECONDS * 1000);
    }
    // Once its hour is over (its expiry moved into the past here), the id is asked about again.
    await ctx.redis.zadd(ctx.keys.missingSourcesExpiry, 1, 'group:41');
    expect(await ctx.registry.missingReason('group:41')).toBeUndefined();
    await ctx.registry.rememberMissing('group:43', 'no');
    expect(await ctx.redis.hexists(ctx.keys.missingSources, 'group:41')).toBe(0);
  });

  it('are bounded in number: the soonest to expire are forgotten first', async () => {
    const extra = 5;
    const ids = Array.from({ length: MAX_MISSING_SOURCES + extra }, (_, i) => `group:${1_000_000 + i}`);
    for (let start = 0; start < ids.length; start += 1_000)
      await Promise.all(ids.slice(start, start + 1_000).map((id) => ctx.registry.rememberMissing(id, 'нет')));
    expect(await ctx.redis.zcard(ctx.keys.missingSourcesExpiry)).toBe(MAX_MISSING_SOURCES);
    expect(await ctx.redis.hlen(ctx.keys.missingSources)).toBe(MAX_MISSING_SOURCES);
    // Those remembered last are kept; the oldest few are not (remembered together, any of them may have gone).
    expect(await ctx.registry.missingReason(ids.at(-1) as string)).toBe('нет');
    const oldest = await Promise.all(ids.slice(0, 50).map((id) => ctx.registry.missingReason(id)));
    expect(oldest.filter((reason) => reason === undefined).length).toBeGreaterThanOrEqual(extra);
  }, 60_000);
});
