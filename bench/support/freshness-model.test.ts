import { describe, expect, it } from 'vitest';
import { pairLatency, percentile } from './freshness-ledger.ts';
import { type ModelOptions, modelWorld, runModel } from './freshness-model.ts';

const SIZES = { groups: 6, teachers: 12, usersPerGroup: 10, electiveEvery: 10 };
const MINUTE = 60_000;
const OPTIONS: ModelOptions = {
  policy: 'fixed',
  refreshIntervalMs: MINUTE,
  refreshMaxWaitMs: 10 * MINUTE,
  upstreamRateLimit: 100,
  changesPerMinute: 2,
  electiveShare: 0.15,
  zipf: 1,
  seed: 3,
  warmupMs: 11 * MINUTE,
  windowMs: 60 * MINUTE,
  refreshMs: 250,
  weight: 2,
  stepMs: 250,
};
const world = modelWorld(SIZES, 3);
const sources = SIZES.groups * (1 + SIZES.usersPerGroup) + SIZES.teachers;

describe('the freshness model', () => {
  it('builds a university in the issue proportions: electives, shared lectures, teachers not all covered', () => {
    expect(world.groups).toHaveLength(SIZES.groups);
    expect(world.teachers.size).toBe(SIZES.teachers);
    expect(world.users).toHaveLength(SIZES.groups * SIZES.usersPerGroup);
    expect(world.withElective.size).toBe((SIZES.groups * SIZES.usersPerGroup) / SIZES.electiveEvery);
    expect(world.entries.filter((entry) => entry.electiveOf !== undefined)).toHaveLength(world.withElective.size);
    expect(world.entries.some((entry) => entry.groups.length > 1)).toBe(true);
    expect(world.covered.size).toBeGreaterThan(0);
    expect(world.covered.size).toBeLessThan(world.teachers.size);
    expect(modelWorld(SIZES, 3)).toEqual(world);
  });

  it('fixed: each feed waits for its own tick, about one interval at p95, at Σ 1/interval requests/s', () => {
    const result = runModel(world, OPTIONS);
    const { group } = result.latency;
    expect(group.pairs).toBeGreaterThan(200);
    expect(group.missingPairs).toBe(0);
    expect(group.pairP95).toBeGreaterThan(0.75 * 60);
    expect(group.pairP95).toBeLessThan(1.3 * 60);
    expect(group.pairP50).toBeGreaterThan(0.3 * 60);
    expect(result.relatedPerSecond).toBe(0);
    expect(result.requestsPerSecond / result.askedPerSecond).toBeCloseTo(1, 1);
  });

  it('adaptive: a change found reaches every feed that shows it through related refreshes, within the budget', () => {
    const result = runModel(world, { ...OPTIONS, policy: 'adaptive' });
    const budget = sources / 60;
    expect(result.askedPerSecond).toBeCloseTo(budget, 6);
    expect(result.requestsPerSecond).toBeLessThanOrEqual(budget * 1.01);
    expect(result.relatedPerSecond).toBeGreaterThan(0);
    // Every student without an elective and every covered teacher is parked: 10 minutes between own refreshes.
    expect(result.parked).toBe(world.users.length - world.withElective.size + world.covered.size);
    const groupVisible = result.records.filter((pair) => !pair.personalOnly);
    expect(groupVisible.every((pair) => Number.isFinite(pairLatency(pair)))).toBe(true);
    // Parked students' feeds get their group's changes right after the group's refresh found them, not at
    // their own 10-minute turn: most of them within a fraction of an interval.
    const students = groupVisible.filter((pair) => pair.kind === 'personal').map(pairLatency);
    expect(students.length).toBeGreaterThan(100);
    expect(percentile(students, 90)).toBeLessThan(30);
    expect(result.latency.group.pairP95).toBeLessThan(runModel(world, OPTIONS).latency.group.pairP95 / 2);
  });

  it('adaptive: whichever refresh sees a version first spreads it, once, so every feed has it within an interval', () => {
    const result = runModel(world, { ...OPTIONS, policy: 'adaptive' });
    // A related refresh that publishes another change of its own spreads it too: no feed waits for its longest
    // wait (10 minutes) to see a change, a parked teacher's included.
    const latencies = result.records.filter((pair) => !pair.personalOnly).map(pairLatency);
    expect(Math.max(...latencies)).toBeLessThan(60);
    // The refreshes a spread queued see the version stored and spread nothing: no ping-pong.
    expect(result.changes).toBeGreaterThan(100);
    expect(result.spreadAgain).toBeLessThanOrEqual(result.changes / 100);
  });
});
