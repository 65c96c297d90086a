import { describe, expect, it } from 'vitest';
import type { RefreshAsk } from '../../src/jobs/contract.ts';
import { mergeFollowUps, sameAsk } from '../../src/jobs/follow-ups.ts';

const rerender: RefreshAsk = { reason: 'rerender', priority: 5 };
const resync: RefreshAsk = { reason: 'resync', priority: 1 };
const resyncAll: RefreshAsk = { reason: 'resync', priority: 4 };
const signUp: RefreshAsk = { reason: 'subscription', priority: 2 };
const confirm: RefreshAsk = { reason: 'confirm', priority: 3, delayMs: 30_000 };

/** Every order of `items`. */
function orders<T>(items: readonly T[]): T[][] {
  if (items.length <= 1) return [[...items]];
  return items.flatMap((item, index) =>
    orders([...items.slice(0, index), ...items.slice(index + 1)]).map((rest) => [item, ...rest]),
  );
}

describe('mergeFollowUps', () => {
  it('answers nothing for no asks, and a lone ask as it is', () => {
    expect(mergeFollowUps([])).toBeUndefined();
    expect(mergeFollowUps([rerender])).toEqual(rerender);
  });

  it('lets a fetching reason win over a re-render, with the most urgent priority', () => {
    expect(mergeFollowUps([resync, rerender])).toEqual(resync);
    expect(mergeFollowUps([rerender, signUp])).toEqual(signUp);
    // A fetch asked at background priority still fetches; a re-render never lowers anyone's priority.
    expect(
      mergeFollowUps([
        { reason: 'rerender', priority: 1 },
        { reason: 'schedule', priority: 5 },
      ]),
    ).toEqual({
      reason: 'schedule',
      priority: 1,
    });
  });

  it('keeps the longest delay: a request never pulls a confirming re-fetch forward', () => {
    expect(mergeFollowUps([confirm, resync])).toEqual({ reason: 'resync', priority: 1, delayMs: 30_000 });
    expect(mergeFollowUps([rerender, confirm])).toEqual({ reason: 'confirm', priority: 3, delayMs: 30_000 });
  });

  it('reaches the same merge in every order', () => {
    const asks = [rerender, resyncAll, signUp, confirm, { reason: 'demand', priority: 2 } as RefreshAsk];
    const merges = orders(asks).map((order) => mergeFollowUps(order));
    for (const merge of merges) expect(sameAsk(merge, merges[0])).toBe(true);
    expect(merges[0]).toEqual({ reason: 'demand', priority: 2, delayMs: 30_000 });
  });

  it('tells asks apart by reason, priority and delay', () => {
    expect(sameAsk(resync, { ...resync })).toBe(true);
    expect(sameAsk(resync, resyncAll)).toBe(false);
    expect(sameAsk(confirm, { ...confirm, delayMs: 0 })).toBe(false);
    expect(sameAsk(undefined, resync)).toBe(false);
  });
});
