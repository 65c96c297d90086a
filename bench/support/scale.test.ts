import { describe, expect, it } from 'vitest';
import { redisKeys } from '../../src/store/keys.ts';
import { findingLine, type GrowthSeries, growthVerdict } from './growth-verdict.ts';
import { keyKind } from './redis-breakdown.ts';
import { parseSizes, population, UNIVERSITY } from './scale-population.ts';

describe('population', () => {
  it('is the whole university at 20,000 sources', () => {
    expect(population(20_000)).toEqual(UNIVERSITY);
  });

  it('keeps the proportions at smaller sizes, the kinds adding up to the sources', () => {
    expect(population(2_000)).toEqual({ sources: 2_000, groups: 150, teachers: 350, personal: 1_500 });
    const odd = population(777);
    expect(odd.groups + odd.teachers + odd.personal).toBe(777);
    expect(odd).toMatchObject({ groups: 58, teachers: 136 });
  });

  it('refuses sizes too small for every kind, or not whole', () => {
    expect(() => population(10)).toThrow(RangeError);
    expect(() => population(1_000.5)).toThrow(RangeError);
  });
});

describe('parseSizes', () => {
  it('reads a comma list, smallest first, without repeats', () => {
    expect(parseSizes('5000, 2_000,5000')).toEqual([2_000, 5_000]);
  });

  it('refuses anything that is not a size', () => {
    expect(() => parseSizes('2000,lots')).toThrow(RangeError);
    expect(() => parseSizes('')).toThrow(RangeError);
  });
});

describe('keyKind', () => {
  const prefix = 'bench-1a2b';
  const keys = redisKeys(prefix);
  const q = keys.queuePrefix;

  it('names the per-source state by its key', () => {
    expect(keyKind(keys.feed('group:42'), prefix)).toBe('feed');
    expect(keyKind(keys.snapshot('employee:7'), prefix)).toBe('snapshot');
    expect(keyKind(keys.published('group:42'), prefix)).toBe('published digests');
    expect(keyKind(keys.changes('group:42'), prefix)).toBe('change log');
    expect(keyKind(keys.source('personal:abc'), prefix)).toBe('source record');
    expect(keyKind(keys.optionValues('group:42'), prefix)).toBe('option values');
    expect(keyKind(keys.studyPlan('personal:abc'), prefix)).toBe('study plan');
    expect(keyKind(keys.activeSources, prefix)).toBe('source indexes');
    expect(keyKind(keys.knownSources, prefix)).toBe('source indexes');
  });

  it('puts every key of a subscription together, and the term counts together', () => {
    for (const key of [
      keys.subscription('s1'),
      keys.subscriptionToken('hash'),
      keys.subscriptionTokens('s1'),
      keys.subscriptionOwner('user:70001'),
    ])
      expect(keyKind(key, prefix)).toBe('subscription');
    for (const key of [keys.termCounts, keys.sourceTermCounts, keys.termEntryRefs, keys.termCountsVersion])
      expect(keyKind(key, prefix)).toBe('term counts');
  });

  it('splits BullMQ keys into schedulers, kept jobs and the queues themselves', () => {
    expect(keyKind(`${q}:schedule:repeat`, prefix)).toBe('job schedulers');
    expect(keyKind(`${q}:schedule:repeat:tick:group:42`, prefix)).toBe('job schedulers');
    expect(keyKind(`${q}:schedule:repeat:tick:group:42:1764000000000`, prefix)).toBe('job schedulers');
    expect(keyKind(`${q}:refresh:group.42-mid0qz-a1b2c3`, prefix)).toBe('jobs kept');
    expect(keyKind(`${q}:refresh:group.42-mid0qz-a1b2c3:logs`, prefix)).toBe('jobs kept');
    for (const suffix of ['completed', 'events', 'meta', 'id', 'wait', 'de:group.42', 'metrics:completed'])
      expect(keyKind(`${q}:refresh:${suffix}`, prefix)).toBe('queue structures');
  });

  it('answers other for anything else, and for keys of another prefix', () => {
    expect(keyKind(keys.workers, prefix)).toBe('other');
    expect(keyKind(keys.groupDirectory, prefix)).toBe('other');
    expect(keyKind(redisKeys('elsewhere').feed('group:42'), prefix)).toBe('other');
    expect(keyKind(`${prefix}x:feed:group:42`, prefix)).toBe('other');
  });
});

describe('growthVerdict', () => {
  const linear = (name: string, perSource: (sources: number) => number): GrowthSeries => ({
    name,
    growth: 'linear',
    unit: 'KB/source',
    points: [2_000, 5_000, 20_000].map((sources) => ({ sources, value: sources * perSource(sources) })),
  });

  it('passes a cost proportional to the sources and flags one whose cost per source rises over 25 %', () => {
    const [flat, quadratic] = growthVerdict([
      linear('proportional', () => 20),
      linear('quadratic', (sources) => sources / 1_000),
    ]);
    expect(flat).toMatchObject({ status: 'ok', smallest: 20, largest: 20, ratio: 1 });
    expect(quadratic).toMatchObject({ status: 'super-linear', smallest: 2, largest: 20, ratio: 10 });
  });

  it('tolerates up to the tolerance, compared between the smallest and largest size in any order', () => {
    const series: GrowthSeries = {
      name: 'a little',
      growth: 'linear',
      unit: 'ms/source',
      points: [
        { sources: 20_000, value: 20_000 * 12.4 },
        { sources: 2_000, value: 2_000 * 10 },
      ],
    };
    expect(growthVerdict([series])[0]?.status).toBe('ok');
    expect(growthVerdict([series], 0.2)[0]?.status).toBe('super-linear');
  });

  it('compares flat costs as measured', () => {
    const p99: GrowthSeries = {
      name: 'p99',
      growth: 'flat',
      unit: 'ms',
      points: [
        { sources: 2_000, value: 10 },
        { sources: 20_000, value: 30 },
      ],
    };
    expect(growthVerdict([p99])[0]).toMatchObject({ status: 'super-linear', ratio: 3 });
  });

  it('reports a rising cost too small to matter without flagging it, and judges nothing from one size', () => {
    const tiny = { ...linear('tiny', (sources) => sources / 100_000), negligibleBelow: 0.5 };
    expect(growthVerdict([tiny])[0]?.status).toBe('negligible');
    const once: GrowthSeries = {
      name: 'once',
      growth: 'linear',
      unit: 'KB/source',
      points: [{ sources: 500, value: 1 }],
    };
    expect(growthVerdict([once])[0]?.status).toBe('not judged');
  });

  it('writes one line per finding', () => {
    const [finding] = growthVerdict([linear('Redis feed', (sources) => sources / 1_000)]);
    expect(finding && findingLine(finding)).toBe('FLAG Redis feed: 2.00 → 20.0 KB/source (10.00×)');
  });
});
