import { describe, expect, it } from 'vitest';
import type { PushJobData } from '../../src/jobs/contract.ts';
import { rateLimitPause } from '../../src/jobs/failure.ts';
import { rateLimitRounds } from '../../src/jobs/push-failure.ts';

describe('rateLimitPause', () => {
  it('follows Retry-After, else doubles from the base with ±50% jitter, never beyond 5 minutes', () => {
    expect(rateLimitPause(2_000, 1, 1_000)).toBe(2_000);
    expect(rateLimitPause(3_600_000, 1, 1_000)).toBe(300_000);
    expect(rateLimitPause(undefined, 1, 1_000, () => 0)).toBe(500);
    expect(rateLimitPause(undefined, 3, 1_000, () => 0.5)).toBe(4_000);
    expect(rateLimitPause(undefined, 3, 1_000, () => 0.999_999)).toBeCloseTo(6_000, -1);
    expect(rateLimitPause(undefined, 30, 1_000, () => 0.999_999)).toBe(300_000);
  });
});

describe('rateLimitRounds', () => {
  it('counts only the rate-limit rounds since the job last made progress', async () => {
    const job = {
      attemptsStarted: 0,
      attemptsMade: 0,
      data: { target: 't', source: 'group:1' as const, reason: 'refresh' as const } as PushJobData,
      async updateData(data: PushJobData) {
        this.data = data;
      },
    };
    const round = (progressed: boolean) => {
      job.attemptsStarted += 1;
      return rateLimitRounds(job, progressed);
    };
    expect([await round(false), await round(false), await round(false)]).toEqual([1, 2, 3]);
    // A run that wrote something starts the count again: 30 rounds, each getting somewhere, never pass 1.
    for (let n = 0; n < 30; n += 1) expect(await round(true)).toBe(1);
    expect(await round(false)).toBe(2);
  });
});
