/**
 * The deployment's start-date counts on a real Redis: an upstream entry counts once however many timetables
 * (a group, its personal subscriber, its teacher) hold it; predictions agree with what the script then does;
 * stored term starts follow the newest counts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execOrThrow } from '../../src/lib/redis-transaction.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import type { CountedEntry } from '../../src/store/term-counts.ts';
import { testContext } from '../support/service.ts';

let ctx: ServiceContext;
let close: () => Promise<void>;

beforeAll(async () => {
  ({ context: ctx, close } = await testContext());
});
afterAll(async () => close?.());

function entry(id: number, startDate: string, weekType: 0 | 1 | 2 = 0): CountedEntry {
  return { id, startDate, weekType };
}

async function write(source: string, entries: CountedEntry[]): Promise<void> {
  const predicted = await ctx.termCounts.totalsWith(source, entries);
  await execOrThrow(ctx.termCounts.write(ctx.redis.multi(), source, entries));
  // What a publication renders with is what the counts become.
  expect(withoutZeros(predicted)).toEqual(await ctx.termCounts.totals());
}

function withoutZeros(totals: Map<string, number>): Map<string, number> {
  return new Map([...totals].filter(([, count]) => count !== 0));
}

describe('term start counts', () => {
  it('counts an entry once over a group, its personal subscriber and its teacher', async () => {
    const group = [entry(1, '2025-09-01', 1), entry(2, '2025-09-01'), entry(3, '2025-09-08')];
    await write('group:10', group);
    await write('personal:abcdefghijklmnopqrstuv', [...group, entry(4, '2025-09-15')]);
    await write('employee:7', [entry(2, '2025-09-01'), entry(5, '2025-09-08'), entry(5, '2025-09-08')]);
    expect(await ctx.termCounts.totals()).toEqual(
      new Map([
        ['2025-09-01', 2],
        ['2025-09-08', 2],
        ['2025-09-15', 1],
      ]),
    );
    expect((await ctx.termCounts.paritySources()).sort()).toEqual(['group:10', 'personal:abcdefghijklmnopqrstuv']);
  });

  it('moves a shared entry only when its last holder drops it, and is idempotent', async () => {
    await write('group:10', [entry(2, '2025-09-01'), entry(3, '2025-09-08')]);
    await write('group:10', [entry(2, '2025-09-01'), entry(3, '2025-09-08')]);
    // Entry 1 is still the subscriber's; a changed start date moves entry 3 only where nobody else holds it.
    expect((await ctx.termCounts.totals()).get('2025-09-01')).toBe(2);
    await write('personal:abcdefghijklmnopqrstuv', [entry(3, '2025-09-09')]);
    expect(await ctx.termCounts.totals()).toEqual(
      new Map([
        ['2025-09-01', 1],
        ['2025-09-08', 2],
        ['2025-09-09', 1],
      ]),
    );
    await write('employee:7', []);
    await write('group:10', []);
    await write('personal:abcdefghijklmnopqrstuv', []);
    expect(await ctx.termCounts.totals()).toEqual(new Map());
    expect(await ctx.termCounts.isEmpty()).toBe(true);
  });

  it('stores the term starts of the newest counts and says once that they changed', async () => {
    await write('group:11', [entry(1, '2025-09-01'), entry(2, '2025-09-01'), entry(3, '2026-02-09')]);
    const first = await ctx.termCounts.refresh([]);
    expect(first.changed).toBe(true);
    expect(first.after.map((term) => term.date)).toEqual(['2025-09-01', '2026-02-09']);
    expect((await ctx.termCounts.refresh([])).changed).toBe(false);
    // Term starts resolved from older counts never replace newer ones.
    const stored = await ctx.termCounts.stored();
    await ctx.redis.set(ctx.keys.termStarts, JSON.stringify({ ...stored, version: (stored?.version ?? 0) + 5 }));
    await write('group:11', [entry(1, '2025-09-02')]);
    const stale = await ctx.termCounts.refresh([]);
    expect(stale.changed).toBe(false);
    expect((await ctx.termCounts.stored())?.termStarts.map((term) => term.date)).toEqual(['2025-09-01', '2026-02-09']);
  });
});
