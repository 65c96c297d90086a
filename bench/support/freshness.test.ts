import { describe, expect, it } from 'vitest';
import {
  affectedFeeds,
  planChanges,
  roomToken,
  type World,
  type WorldEntry,
  zipfCumulative,
} from './freshness-changes.ts';
import { ChangeLedger, percentile, phaseLatency, unfold } from './freshness-ledger.ts';
import { dayOf } from './freshness-population.ts';
import { goals } from './freshness-report.ts';

/** Three groups; a lecture shared by groups 1 and 2; a subgroup-2 lab of group 1; an elective of user 11. */
const world: World = {
  groups: [1, 2, 3],
  teachers: new Set([100]),
  entries: [
    { id: 500, groups: [1, 2], teacher: 100 },
    { id: 501, groups: [1], teacher: 101, subgroup: 2 },
    { id: 502, groups: [3], teacher: 100 },
    { id: 600, groups: [], teacher: 102, electiveOf: 11 },
  ],
  users: [
    { id: 10, groupId: 1, subgroup: 1 },
    { id: 11, groupId: 1, subgroup: 2 },
    { id: 20, groupId: 2, subgroup: 1 },
    { id: 30, groupId: 3, subgroup: 2 },
  ],
};
const entry = (id: number): WorldEntry => world.entries.find((e) => e.id === id) as WorldEntry;

describe('the freshness change process', () => {
  it('finds every feed of a change: the groups of a shared lecture, a followed teacher, the students who see it', () => {
    expect(affectedFeeds(world, entry(500))).toEqual([
      { kind: 'group', id: 1 },
      { kind: 'group', id: 2 },
      { kind: 'teacher', id: 100 },
      { kind: 'personal', id: 10 },
      { kind: 'personal', id: 11 },
      { kind: 'personal', id: 20 },
    ]);
    // A subgroup's class reaches that subgroup's students only; its teacher is not followed.
    expect(affectedFeeds(world, entry(501))).toEqual([
      { kind: 'group', id: 1 },
      { kind: 'personal', id: 11 },
    ]);
    expect(affectedFeeds(world, entry(600))).toEqual([{ kind: 'personal', id: 11 }]);
  });

  it('plans the same changes for the same seed, each entry once, with unique rooms and electives personal-only', () => {
    const options = { seed: 7, perMinute: 120, durationMs: 60_000, electiveShare: 0.3, zipf: 1, cooldownMs: 1e9 };
    const plan = planChanges(world, options);
    expect(planChanges(world, options)).toEqual(plan);
    expect(planChanges(world, { ...options, seed: 8 })).not.toEqual(plan);
    expect(plan.length).toBe(4);
    expect(new Set(plan.map((change) => change.entryId)).size).toBe(plan.length);
    expect(plan.map((change) => change.room)).toEqual(plan.map((change) => roomToken(change.n)));
    for (const change of plan) expect(change.personalOnly).toBe(change.entryId === 600);
    expect(plan.map((change) => change.atMs)).toEqual([...plan.map((change) => change.atMs)].sort((a, b) => a - b));
  });

  it('arrives as Poisson at the asked rate and skews groups by Zipf', () => {
    const many: World = {
      ...world,
      groups: Array.from({ length: 50 }, (_, i) => i + 1),
      entries: Array.from({ length: 5_000 }, (_, i) => ({ id: i + 1, groups: [(i % 50) + 1] })),
    };
    const plan = planChanges(many, {
      seed: 1,
      perMinute: 60,
      durationMs: 3_600_000,
      electiveShare: 0,
      zipf: 1,
      cooldownMs: 0,
    });
    expect(plan.length).toBeGreaterThan(3_300);
    expect(plan.length).toBeLessThan(3_900);
    const first = plan.filter((change) => change.feeds[0]?.id === 1).length;
    const last = plan.filter((change) => change.feeds[0]?.id === 50).length;
    expect(first).toBeGreaterThan(10 * last);
    expect(zipfCumulative(3, 0)).toEqual([1 / 3, 2 / 3, 1]);
  });

  it('never makes one room token part of another', () => {
    expect(roomToken(1).length).toBe(roomToken(9_999).length);
    expect(roomToken(12).includes(roomToken(1))).toBe(false);
  });
});

describe('the freshness ledger', () => {
  const change = (n: number, entryId: number, personalOnly = false) => ({
    n,
    atMs: 0,
    entryId,
    room: roomToken(n),
    personalOnly,
    feeds: affectedFeeds(world, entry(entryId)),
  });
  const sourceOf = (feed: { kind: string; id: number }) => `${feed.kind}:${feed.id}`;

  it('marks a pair arrived when its feed holds the room, folded or not, and keeps the others pending', () => {
    const ledger = new ChangeLedger();
    ledger.register(change(1, 500), 1_000, sourceOf);
    expect(ledger.pendingPairs()).toBe(6);
    expect(ledger.observe('group:1', 'LOCATION:101', 2_000)).toBe(0);
    const folded = `LOCATION:${roomToken(1).slice(0, 4)}\r\n ${roomToken(1).slice(4)}, Главное здание`;
    expect(ledger.observe('group:1', folded, 3_000)).toBe(1);
    expect(ledger.waitsFor('group:1')).toBe(false);
    expect(ledger.observe('group:1', roomToken(1), 9_000)).toBe(0);
    expect(ledger.records().find((pair) => pair.source === 'group:1')?.arrivedMs).toBe(3_000);
    expect(ledger.pendingPairs()).toBe(5);
  });

  it('counts pairs that never arrived as infinitely late, per pair and per change', () => {
    const ledger = new ChangeLedger();
    ledger.register(change(1, 502), 0, sourceOf);
    ledger.register(change(2, 600, true), 0, sourceOf);
    ledger.register(change(3, 501), 0, sourceOf);
    for (const source of ['group:3', 'teacher:100', 'personal:30']) ledger.observe(source, roomToken(1), 10_000);
    ledger.observe('group:1', roomToken(3), 20_000);
    ledger.observe('personal:11', roomToken(2), 4_000);
    const latency = phaseLatency(ledger.records());
    expect(latency.personal).toMatchObject({ changes: 1, pairs: 1, missingPairs: 0, pairP95: 4, changeP95: 4 });
    expect(latency.group).toMatchObject({ changes: 2, pairs: 5, missingPairs: 1, missingChanges: 1, pairP50: 10 });
    expect(latency.group.pairP95).toBe(Number.POSITIVE_INFINITY);
    expect(latency.group.changeP50).toBe(10);
    expect(latency.group.changeP95).toBe(Number.POSITIVE_INFINITY);
  });

  it('takes nearest-rank percentiles and joins folded ICS lines', () => {
    expect(percentile([5, 1, 4, 2, 3], 50)).toBe(3);
    expect(percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 100], 95)).toBe(19);
    expect(percentile([], 95)).toBeNaN();
    expect(unfold('A:b\r\n c\n\td')).toBe('A:bcd');
    expect(dayOf('28.12.26')).toBe(Date.UTC(2026, 11, 28));
    expect(dayOf('2026-12-28')).toBe(0);
  });

  it('judges the goals: group p95 ≤ 0.25× fixed, personal p95 no worse, requests within 5%', () => {
    const pair = (personalOnly: boolean, latencyMs: number) => ({
      change: latencyMs,
      entryId: 1,
      room: 'r',
      personalOnly,
      kind: 'group' as const,
      source: 's',
      madeMs: 0,
      arrivedMs: latencyMs,
    });
    const fixed = {
      policy: 'fixed',
      changesMade: 2,
      requestsPerSecond: 33,
      records: [pair(false, 60_000), pair(true, 60_000)],
    };
    const adaptive = { ...fixed, requestsPerSecond: 34, records: [pair(false, 15_000), pair(true, 61_000)] };
    expect(goals(fixed, adaptive).map((goal) => goal.pass)).toEqual([true, false, true]);
    expect(goals(fixed, { ...adaptive, requestsPerSecond: 35 })[2]?.pass).toBe(false);
  });
});
