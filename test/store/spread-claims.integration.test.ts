/**
 * The last spread version of each class, compare and set: every new version is spread once, a return to an
 * earlier one included; a disappearance only a teacher or a student saw is spread without being stored; a group
 * the spread could not reach still tells its own students.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { GONE, type SeenChange } from '../../src/store/spread-claims.ts';
import { testContext } from '../support/service.ts';

let ctx: ServiceContext;
let close: () => Promise<void>;

beforeAll(async () => {
  ({ context: ctx, close } = await testContext());
});
afterAll(async () => {
  await close?.();
});

const TTL = 60_000;
const [A, B] = ['aaaaaaaaaaaaaaaa', 'bbbbbbbbbbbbbbbb'];

/** What a finder saw of class `classId`: `lost` → `version`, recorded unless a non-group's disappearance. */
function seen(classId: number, lost: string | undefined, version: string, covers: number[], group?: number) {
  const change: SeenChange = { classId, version, lost, record: version !== GONE || group !== undefined, covers };
  return ctx.spreadClaims.decide([change], group, TTL);
}

describe('SpreadClaims', () => {
  it('spreads every step of A → B → A → B once, whoever finds it', async () => {
    expect(await seen(1, A, B, [10], 10)).toEqual(['spread']);
    expect(await seen(1, A, B, [10])).toEqual(['none']);
    expect(await seen(1, B, A, [10], 10)).toEqual(['spread']);
    expect(await seen(1, B, A, [10])).toEqual(['none']);
    expect(await seen(1, A, B, [10])).toEqual(['spread']);
    expect(await seen(1, A, B, [10], 10)).toEqual(['none']);
  });

  it('spreads cancel → restore → cancel, each once', async () => {
    expect(await seen(2, A, GONE, [10], 10)).toEqual(['spread']);
    expect(await seen(2, A, GONE, [])).toEqual(['none']);
    expect(await seen(2, undefined, A, [10], 10)).toEqual(['spread']);
    expect(await seen(2, A, GONE, [10], 10)).toEqual(['spread']);
    expect(await seen(2, A, GONE, [10], 10)).toEqual(['none']);
  });

  it('does not let a student’s or a teacher’s lost class hide its later cancellation', async () => {
    expect(await seen(3, undefined, A, [10], 10)).toEqual(['spread']);
    // A student changed subgroup: the class left their view alone. Spread (it may be a cancellation), not stored.
    expect(await seen(3, A, GONE, [10])).toEqual(['spread']);
    expect(await ctx.redis.get(ctx.keys.spreadClaim(3))).toBe(`${A} 10`);
    // The dean cancels it: the group's refresh spreads it, and the students it queued then do not.
    expect(await seen(3, A, GONE, [10], 10)).toEqual(['spread']);
    expect(await seen(3, A, GONE, [10])).toEqual(['none']);
  });

  it('ignores the loss of a version the class has moved on from since', async () => {
    // The class went to another teacher (version B) and the group spread that; the old teacher then finds it gone.
    expect(await seen(4, A, B, [10], 10)).toEqual(['spread']);
    expect(await seen(4, A, GONE, [10])).toEqual(['none']);
    expect(await seen(4, A, GONE, [10], 10)).toEqual(['none']);
    expect(await ctx.redis.get(ctx.keys.spreadClaim(4))).toBe(`${B} 10`);
    // A group the class left, that the spread of B could not name: its students still lose the class.
    expect(await seen(4, A, GONE, [11], 11)).toEqual(['members']);
    expect(await ctx.redis.get(ctx.keys.spreadClaim(4))).toBe(`${B} 10 11`);
  });

  it('lets a group its finder could not name tell its own students, once', async () => {
    // A teacher found the change, but the name of group 12 did not resolve: only group 11's students were queued.
    expect(await seen(5, A, B, [11])).toEqual(['spread']);
    expect(await seen(5, A, B, [11, 12], 11)).toEqual(['none']);
    expect(await seen(5, A, B, [11, 12], 12)).toEqual(['members']);
    expect(await seen(5, A, B, [11, 12], 12)).toEqual(['none']);
    expect(await ctx.redis.get(ctx.keys.spreadClaim(5))).toBe(`${B} 11 12`);
  });

  it('decides many classes in one call, and keeps what it stores for the time asked', async () => {
    const changes: SeenChange[] = [
      { classId: 6, version: A, lost: undefined, record: true, covers: [] },
      { classId: 7, version: GONE, lost: A, record: false, covers: [] },
    ];
    expect(await ctx.spreadClaims.decide(changes, undefined, TTL)).toEqual(['spread', 'spread']);
    expect(await ctx.spreadClaims.decide(changes, undefined, TTL)).toEqual(['none', 'spread']);
    const ttl = await ctx.redis.pttl(ctx.keys.spreadClaim(6));
    expect(ttl).toBeGreaterThan(TTL - 5_000);
    expect(ttl).toBeLessThanOrEqual(TTL);
    expect(await ctx.redis.exists(ctx.keys.spreadClaim(7))).toBe(0);
    expect(await ctx.spreadClaims.decide([], undefined, TTL)).toEqual([]);
  });
});
