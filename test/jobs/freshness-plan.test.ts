import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  changeRate,
  learnedState,
  MAX_DEPENDENT_WEIGHT,
  minRefreshGap,
  nextRefreshDelay,
  PRIOR_INTERVALS,
  PRIOR_RATE_PER_INTERVAL,
  RATE_WINDOW_INTERVALS,
  sourceWeight,
} from '../../src/jobs/freshness-plan.ts';
import { packFreshness, unpackFreshness } from '../../src/store/freshness-store.ts';

const MINUTE = 60_000;
const DAY = 86_400_000;
const settings = { refreshIntervalMs: 30 * MINUTE, refreshMaxWaitMs: 4 * 60 * MINUTE };
const RATE_WINDOW_MS = RATE_WINDOW_INTERVALS * settings.refreshIntervalMs;
/** A source observed for `days` days that changed at `perDay` changes a day, with weight `weight`. */
const source = (perDay: number, days: number, weight = 1) => ({
  changes: perDay * days,
  observedMs: days * DAY,
  weight,
});

describe('nextRefreshDelay', () => {
  it('gives a source changing at the prior rate with weight 1 one interval, and the deadline one interval', () => {
    const prior = { changes: 0, observedMs: 0, weight: 1 };
    expect(changeRate(prior, settings)).toBeCloseTo(PRIOR_RATE_PER_INTERVAL);
    expect(nextRefreshDelay(prior, settings)).toEqual({ nextMs: 30 * MINUTE, deadlineMs: 30 * MINUTE });
    // The prior's own rate (a change a day at 30 min), observed for a fortnight, is the same.
    expect(nextRefreshDelay(source(1, 14), settings).nextMs).toBe(30 * MINUTE);
  });

  it('follows the square root of rate × weight: 16 times the rate, or 4 times and weight 4, is a quarter', () => {
    const hot = nextRefreshDelay(source(16, 14), settings).nextMs;
    const weighted = nextRefreshDelay(source(4, 14, 4), settings).nextMs;
    expect(hot / (30 * MINUTE)).toBeCloseTo(0.25, 1);
    expect(weighted / (30 * MINUTE)).toBeCloseTo(0.25, 1);
  });

  it('counts time in intervals: the same history, sped up with the interval, plans the same fraction of it', () => {
    const fast = { refreshIntervalMs: MINUTE, refreshMaxWaitMs: 10 * MINUTE };
    const slow = nextRefreshDelay({ changes: 6, observedMs: 20 * 30 * MINUTE, weight: 2 }, settings).nextMs;
    const quick = nextRefreshDelay({ changes: 6, observedMs: 20 * MINUTE, weight: 2 }, fast).nextMs;
    expect(slow / (30 * MINUTE)).toBeCloseTo(quick / MINUTE, 5);
    // Its own history outweighs the prior within a few intervals: six changes in twenty come back far sooner.
    expect(slow).toBeLessThan(0.25 * 30 * MINUTE);
    expect(PRIOR_INTERVALS).toBeLessThan(20);
  });

  it('never waits past the deadline, nor comes back sooner than the floor', () => {
    expect(nextRefreshDelay(source(0, 14), settings).nextMs).toBe(30 * MINUTE);
    expect(nextRefreshDelay(source(1_000_000, 14, 8), settings).nextMs).toBe(minRefreshGap(settings));
    expect(minRefreshGap(settings)).toBe(15_000);
    expect(minRefreshGap({ refreshIntervalMs: MINUTE })).toBe(2_000);
  });

  it('waits REFRESH_MAX_WAIT for a parked source, however hot it was', () => {
    expect(nextRefreshDelay({ ...source(50, 14, 8), parkedBy: 'group:7' }, settings)).toEqual({
      nextMs: 4 * 60 * MINUTE,
      deadlineMs: 4 * 60 * MINUTE,
    });
  });

  it('keeps every next refresh between the floor and the deadline, and a hotter source never later', () => {
    const arbitrary = fc.record({
      changes: fc.double({ min: 0, max: 1e4, noNaN: true }),
      observedMs: fc.double({ min: 0, max: RATE_WINDOW_MS, noNaN: true }),
      weight: fc.double({ min: 0, max: 64, noNaN: true }),
    });
    fc.assert(
      fc.property(arbitrary, fc.double({ min: 1, max: 100, noNaN: true }), (state, factor) => {
        const { nextMs, deadlineMs } = nextRefreshDelay(state, settings);
        expect(nextMs).toBeGreaterThanOrEqual(minRefreshGap(settings));
        expect(nextMs).toBeLessThanOrEqual(deadlineMs);
        const hotter = nextRefreshDelay({ ...state, changes: state.changes * factor + 1 }, settings);
        expect(hotter.nextMs).toBeLessThanOrEqual(nextMs);
      }),
    );
  });
});

describe('learnedState', () => {
  it('counts the time since the last refresh and a change when the fetch changed the timetable', () => {
    const first = learnedState(undefined, 1_000_000, { changed: false }, 1, settings);
    expect(first).toEqual({ lastRefresh: 1_000_000, changes: 0, observedMs: 0, weight: 1 });
    const second = learnedState(first, 1_000_000 + 10 * MINUTE, { changed: true, parkedBy: 'groups' }, 2, settings);
    expect(second).toEqual({
      lastRefresh: 1_000_000 + 10 * MINUTE,
      changes: 1,
      observedMs: 10 * MINUTE,
      weight: 2,
      parkedBy: 'groups',
    });
    // Unparked the first time it is wrong: the learning says so, the state follows.
    expect(learnedState(second, second.lastRefresh + MINUTE, { changed: true }, 1, settings).parkedBy).toBeUndefined();
  });

  it('scales changes and time down together past the window, so that old behaviour fades', () => {
    const busy = { lastRefresh: 0, changes: 140, observedMs: RATE_WINDOW_MS, weight: 1 };
    const later = learnedState(busy, RATE_WINDOW_MS, { changed: false }, 1, settings);
    expect(later.observedMs).toBe(RATE_WINDOW_MS);
    expect(later.changes).toBeCloseTo(70);
  });
});

describe('the packed state', () => {
  it('takes a few bytes and reads back to the second', () => {
    const state = {
      lastRefresh: Date.UTC(2025, 9, 1, 8, 30, 15),
      changes: 3.456,
      observedMs: 5 * DAY + 1234,
      weight: 4,
      parkedBy: 'group:123' as const,
    };
    const packed = packFreshness(state);
    expect(packed.length).toBeLessThanOrEqual(32);
    expect(unpackFreshness(packed)).toEqual({
      lastRefresh: Date.UTC(2025, 9, 1, 8, 30, 15),
      changes: 3.46,
      observedMs: 5 * DAY + 1000,
      weight: 4,
      parkedBy: 'group:123',
    });
    expect(unpackFreshness(packFreshness({ ...state, parkedBy: undefined }))?.parkedBy).toBeUndefined();
    for (const bad of ['', 'x', 'a|b|c|d|e|f', 'zz|-1|0|1|', null]) expect(unpackFreshness(bad)).toBeUndefined();
  });
});

describe('sourceWeight', () => {
  const deps = (pushed: boolean, told: boolean) => ({
    pushKinds: [{ kind: 'google', targets: { anyForSource: async () => pushed } }],
    notify: { hasSubscribers: async () => told },
  });

  it('doubles for a calendar pushed to, a chat told and a class soon, and counts the feeds a change reaches', async () => {
    expect(await sourceWeight(deps(false, false), 'employee:1', { classSoon: false })).toBe(1);
    expect(await sourceWeight(deps(true, true), 'employee:1', { classSoon: true })).toBe(8);
    // A group with ten students subscribed: eleven feeds show its changes.
    expect(await sourceWeight(deps(false, false), 'group:1', { classSoon: true, dependents: 10 })).toBe(22);
    expect(await sourceWeight(deps(false, false), 'group:1', { classSoon: false, dependents: 1_000 })).toBe(
      MAX_DEPENDENT_WEIGHT,
    );
  });
});
