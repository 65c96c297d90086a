import { describe, expect, it } from 'vitest';
import { fitLine, memoryFinding, queueFindings, type TrendPoint, type VerdictRules } from './soak-verdict.ts';

const HOUR = 3600;
const rules: VerdictRules = {
  durationSeconds: HOUR,
  maxGrowthPercentPerHour: 10,
  minJudgedSeconds: 600,
  intervalSeconds: 60,
  restartWarmUpSeconds: 300,
};

/** A sample every 10 s over the run, `value(t)` with a ±2 sawtooth like garbage collection's. */
function series(value: (t: number) => number, epoch?: (t: number) => number, seconds = HOUR): TrendPoint[] {
  return Array.from({ length: seconds / 10 + 1 }, (_, i) => {
    const t = i * 10;
    return { t, value: value(t) + ((i % 6) - 2.5) * 0.8, ...(epoch ? { epoch: epoch(t) } : {}) };
  });
}

describe('fitLine', () => {
  it('finds the slope and intercept of points on a line', () => {
    const line = fitLine([0, 1, 2, 3].map((t) => ({ t, value: 5 + 2 * t })));
    expect(line?.slope).toBeCloseTo(2);
    expect(line?.intercept).toBeCloseTo(5);
  });

  it('has no line through fewer than two distinct times', () => {
    expect(fitLine([{ t: 1, value: 1 }])).toBeUndefined();
    expect(fitLine([1, 1].map((t) => ({ t, value: t })))).toBeUndefined();
  });
});

describe('memoryFinding', () => {
  it('passes memory that is flat after a warm-up that doubled it', () => {
    const finding = memoryFinding(
      'api RSS',
      series((t) => (t < 900 ? 100 + t / 9 : 200)),
      rules,
    );
    expect(finding.status).toBe('ok');
  });

  it('fails memory that keeps growing by more than the allowed share an hour', () => {
    // 200 MiB + 15 % of it an hour.
    const finding = memoryFinding(
      'api RSS',
      series((t) => 200 + (30 * t) / HOUR),
      rules,
    );
    expect(finding.status).toBe('fail');
    expect(finding.message).toMatch(/grows without bound/);
  });

  it('passes a heap that the collector shrank and that grew back once', () => {
    // Flat at 300 MiB; at 31 min it drops to 150 and grows back to 300 within 10 minutes.
    const regrown = series((t) => (t < 1860 ? 300 : Math.min(300, 150 + (t - 1860) * 0.25)));
    const finding = memoryFinding('worker RSS', regrown, rules);
    expect(finding.message).toMatch(/^\+\d/); // the line through the whole window does rise
    expect(finding.status).toBe('ok');
  });

  it('fails a leak that is hidden under a large garbage-collection sawtooth', () => {
    // 200 MiB + 20 % an hour, with a 100 MiB sawtooth of period 40 s on top.
    const sawtooth = series((t) => 200 + (40 * t) / HOUR + ((t % 40) / 40) * 100);
    expect(memoryFinding('worker RSS', sawtooth, rules).status).toBe('fail');
  });

  it('judges the floor after collections, not the peaks between them', () => {
    // After every collection back at 200 MiB; the peaks between them rise from 280 to 440 MiB over the hour.
    const peaks = series((t) => 200 + ((t % 40) / 40) * (80 + (160 * t) / HOUR));
    expect(memoryFinding('api RSS', peaks, rules).status).toBe('ok');
  });

  it('judges a restarted process on its last incarnation only', () => {
    // Restarted at 45 min: a drop that a fit over both incarnations would read as shrinking memory.
    const leaking = series(
      (t) => (t < 2700 ? 300 : 100 + ((t - 2700) * 60) / HOUR),
      (t) => (t < 2700 ? 1 : 2),
    );
    expect(memoryFinding('worker RSS', leaking, rules).status).toBe('fail');
  });

  it('reports, without judging, a process restarted too late for its own warm-up', () => {
    // Restarted at 40 min and still filling at the end: with a 30-minute warm-up nothing of it is left to judge.
    const refilling = series(
      (t) => (t < 2400 ? 300 : 200 + ((t - 2400) * 100) / HOUR),
      (t) => (t < 2400 ? 1 : 2),
    );
    const finding = memoryFinding('worker RSS', refilling, { ...rules, restartWarmUpSeconds: 1800 });
    expect(finding.status).toBe('note');
    expect(finding.message).toMatch(/^restarted at 40 min: its own warm-up \(30 min\) leaves 0 min .* not judged$/);
    // With a shorter warm-up the same samples are judged, and they grow.
    expect(memoryFinding('worker RSS', refilling, rules).status).toBe('fail');
  });

  it("leaves a restarted process's own warm-up out", () => {
    // Restarted at 40 min, its memory doubles over 4 minutes, then stays flat.
    const restarted = series(
      (t) => (t < 2400 ? 300 : Math.min(300, 150 + (t - 2400) * 0.625)),
      (t) => (t < 2400 ? 1 : 2),
    );
    const judged = memoryFinding('worker RSS', restarted, rules);
    expect(judged.status).toBe('ok');
    expect(judged.message).toMatch(/^\+0\.0 %\/h .*over the last 15 min/);
    const unguarded = memoryFinding('worker RSS', restarted, { ...rules, restartWarmUpSeconds: 0 });
    expect(unguarded.message).toMatch(/over the last 20 min/);
    expect(unguarded.message).not.toMatch(/^\+0\.0 %/);
  });

  it('reports without judging a window shorter than the minimum', () => {
    const short = { ...rules, durationSeconds: 300 };
    const finding = memoryFinding(
      'api RSS',
      series((t) => 200 + t, undefined, 300),
      short,
    );
    expect(finding.status).toBe('note');
    expect(finding.message).toMatch(/not judged/);
  });

  it('reports without judging a window holding fewer than 3 interval floors, even a leak', () => {
    // 20 min intervals: the judged half hour holds 2 floors, too few to fit both halves.
    const finding = memoryFinding(
      'api RSS',
      series((t) => 200 + t / 10),
      { ...rules, intervalSeconds: 1200 },
    );
    expect(finding.status).toBe('note');
    expect(finding.message).toMatch(/only 2 interval floors .*not judged/);
  });
});

describe('queueFindings', () => {
  const done = series(() => 550).map((p) => ({ ...p, value: 92 }));

  it('passes a queue that drains within every interval', () => {
    // Every tick of 550 sources lands at the interval's start, then drains in 40 s.
    const depth = series((t) => Math.max(0, 550 - (t % 60) * 14)).map((p) => ({ ...p, value: Math.max(0, p.value) }));
    const findings = queueFindings('refresh queue', { depth, done }, rules);
    expect(findings.map((f) => f.status)).toEqual(['ok', 'ok']);
  });

  it('fails a backlog the last interval could not work off', () => {
    const depth = series((t) => (t * 1000) / HOUR + 600);
    const findings = queueFindings('refresh queue', { depth, done }, rules);
    expect(findings[0]?.status).toBe('fail');
    expect(findings[0]?.message).toMatch(/cannot be drained within one interval/);
  });

  it('fails a stalled queue: a backlog of one job and none completed in the last interval', () => {
    const depth = series(() => 1).map((p) => ({ ...p, value: 1 }));
    const stalled = done.map((p) => ({ ...p, value: p.t > HOUR - 60 ? 0 : 92 }));
    const findings = queueFindings('refresh queue', { depth, done: stalled }, rules);
    expect(findings[0]?.status).toBe('fail');
    expect(findings[0]?.message).toMatch(/stalled/);
    const empty = queueFindings(
      'refresh queue',
      { depth: depth.map((p) => ({ ...p, value: 0 })), done: stalled },
      rules,
    );
    expect(empty[0]?.status).toBe('ok');
  });

  it('fails a depth whose trend adds more than one interval of work an hour', () => {
    // Drains to zero at the end, but grew by 1,000 an hour over the second half.
    const depth = series((t) => (t < HOUR - 30 ? ((t % 600) * 1000) / HOUR + (t * 1000) / HOUR : 0));
    const findings = queueFindings('refresh queue', { depth, done: done.map((p) => ({ ...p, value: 1 })) }, rules);
    expect(findings[0]?.status).toBe('ok');
    expect(findings[1]?.status).toBe('fail');
  });
});
