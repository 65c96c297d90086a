import { describe, expect, it } from 'vitest';
import { redisKeys } from '../../src/store/keys.ts';
import { apiMemoryVerdict, feedCacheBudgetMiB } from './api-memory.ts';
import { keySource, perSourceKB } from './redis-breakdown.ts';
import { encodingFor, spreadSample } from './restart-cost.ts';

describe('keySource', () => {
  const prefix = 'bench-1a2b';
  const keys = redisKeys(prefix);
  const q = keys.queuePrefix;

  it('finds the source of its state, whatever the kind of key or its stored form', () => {
    expect(keySource(keys.feed('group:42'), prefix)).toBe('group');
    expect(keySource(keys.snapshot('employee:7'), prefix)).toBe('teacher');
    expect(keySource(keys.changes('personal:abc'), prefix)).toBe('personal');
    expect(keySource(keys.studyPlan('personal:abc'), prefix)).toBe('personal');
    expect(keySource(keys.sourceTargets('employee:7'), prefix)).toBe('teacher');
  });

  it('gives the keys of personal subscriptions to the personal ones', () => {
    for (const key of [
      keys.subscription('s1'),
      keys.subscriptionToken('hash'),
      keys.subscriptionTokens('s1'),
      keys.subscriptionOwner('user:70001'),
      keys.subscriptionOwnersIndexed,
    ])
      expect(keySource(key, prefix)).toBe('personal');
  });

  it("finds the source of BullMQ's schedulers and deduplication keys by the source's token", () => {
    expect(keySource(`${q}:schedule:repeat:tick-personal-abc`, prefix)).toBe('personal');
    expect(keySource(`${q}:schedule:repeat:tick-group-42:1764000000000`, prefix)).toBe('group');
    expect(keySource(`${q}:refresh:de:employee-7`, prefix)).toBe('teacher');
    expect(keySource(keys.followUpAsks('group-42-after-0123456789ab'), prefix)).toBe('group');
  });

  it('answers no source for what every source shares', () => {
    for (const key of [
      `${q}:refresh:events`,
      `${q}:refresh:completed`,
      `${q}:schedule:repeat`,
      `${q}:schedule:repeat:reconcile`,
      `${q}:push:17`,
      // Kept jobs are the last ones to finish, whichever kind of source they refreshed.
      `${q}:refresh:group-42-mid0qz-a1b2c3`,
      `${q}:refresh:employee-7-after-0123456789ab`,
      keys.activeSources,
      keys.termCounts,
      keys.groupDirectory,
      keys.workers,
      redisKeys('elsewhere').feed('group:42'),
    ])
      expect(keySource(key, prefix)).toBeUndefined();
  });
});

describe('perSourceKB', () => {
  const population = { sources: 100, groups: 10, teachers: 15, personal: 75 };
  const KB = 1024;

  it('adds an equal share per source of the shared keys and of what Redis holds beyond its keys', () => {
    const bySource = { group: 10 * 20 * KB, teacher: 15 * 12 * KB, personal: 75 * 40 * KB, shared: 100 * 2 * KB };
    const keysBytes = 10 * 20 * KB + 15 * 12 * KB + 75 * 40 * KB + 100 * 2 * KB;
    const usedBytes = keysBytes + 100 * KB; // 1 KB per source more: the empty server, the keyspace's tables
    const perSource = perSourceKB(bySource, usedBytes, population);
    // Groups 20 and teachers 12 KB each own: 380 KB over 25 sources, plus 2 + 1 KB shared per source.
    expect(perSource.groupsAndTeachers).toBeCloseTo(380 / 25 + 3);
    expect(perSource.personal).toBeCloseTo(40 + 3);
    expect(perSource.all).toBeCloseTo(usedBytes / KB / 100);
    // The two averages weighted by the mix give the average over all sources.
    expect((perSource.groupsAndTeachers * 25 + perSource.personal * 75) / 100).toBeCloseTo(perSource.all);
  });

  it('never apportions less than the shared keys, should their MEMORY USAGE add up to more than used_memory', () => {
    const bySource = { group: 0, teacher: 25 * KB, personal: 0, shared: 100 * KB };
    expect(perSourceKB(bySource, 50 * KB, population)).toMatchObject({ groupsAndTeachers: 2, all: 1.25 });
  });
});

describe('apiMemoryVerdict', () => {
  it('is within when the RSS stays under the budget plus the baseline, and says by how much it is over', () => {
    expect(apiMemoryVerdict({ cachedMiB: 400, baselineMiB: 150, budgetMiB: 256 })).toEqual({
      limitMiB: 406,
      headroomMiB: 6,
      within: true,
      text: 'within budget + baseline',
    });
    expect(apiMemoryVerdict({ cachedMiB: 746, baselineMiB: 283, budgetMiB: 256 })).toMatchObject({
      within: false,
      text: 'over budget + baseline by 207.0 MiB',
    });
  });

  it('is never within without a measurement', () => {
    expect(apiMemoryVerdict({ cachedMiB: Number.NaN, baselineMiB: 150, budgetMiB: 256 })).toMatchObject({
      within: false,
      text: 'not measured',
    });
  });
});

describe('feedCacheBudgetMiB', () => {
  it('reads --feed-cache-mb, and refuses a value the service could not use', () => {
    expect(feedCacheBudgetMiB('256')).toBe(256);
    for (const value of [undefined, '', '0', '1.5', 'lots'])
      expect(() => feedCacheBudgetMiB(value)).toThrow(RangeError);
  });
});

describe('the first feeds of a fresh api', () => {
  it('asks mostly for gzip, some also offering brotli, a few for the identity body', () => {
    const encodings = Array.from({ length: 1_000 }, (_, index) => encodingFor(index));
    expect(encodings.filter((encoding) => encoding === 'gzip')).toHaveLength(700);
    expect(encodings.filter((encoding) => encoding?.includes('br'))).toHaveLength(150);
    expect(encodings.filter((encoding) => encoding === undefined)).toHaveLength(150);
  });

  it('are distinct and spread over the whole mix', () => {
    const paths = Array.from({ length: 20_000 }, (_, index) => index);
    const sample = spreadSample(paths, 1_000);
    expect(new Set(sample).size).toBe(1_000);
    // Groups and teachers come first in the benchmark's list (a quarter of it), personal feeds after.
    expect(sample.filter((index) => index < 5_000)).toHaveLength(250);
    expect(spreadSample([1, 2, 3], 1_000)).toEqual([1, 2, 3]);
  });
});
