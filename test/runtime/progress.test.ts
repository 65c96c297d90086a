import { describe, expect, it, vi } from 'vitest';
import { formatDuration, formatRate, ProgressReport, pace, progressLine } from '../../src/runtime/progress.ts';
import { waitSummary } from '../../src/runtime/wait-summary.ts';

describe('progress formatting', () => {
  it('formats rates per second, and per minute below one a second', () => {
    expect(formatRate(0)).toBe('0/s');
    expect(formatRate(Number.NaN)).toBe('0/s');
    expect(formatRate(0.4)).toBe('24/min');
    expect(formatRate(1)).toBe('1.0/s');
    expect(formatRate(12.345)).toBe('12.3/s');
    expect(formatRate(250.4)).toBe('250/s');
  });

  it('formats durations in seconds, minutes or hours', () => {
    expect(formatDuration(-5)).toBe('0s');
    expect(formatDuration(44_600)).toBe('45s');
    expect(formatDuration(185_000)).toBe('3m 05s');
    expect(formatDuration(2 * 3_600_000 + 7 * 60_000 + 59_000)).toBe('2h 07m');
  });

  it('derives the rate and the time left from the jobs finished so far', () => {
    expect(pace({ total: 100, done: 18, failed: 2 }, 10_000)).toEqual({ perSecond: 2, leftMs: 40_000 });
    expect(pace({ total: 100, done: 0, failed: 0 }, 10_000)).toEqual({ perSecond: 0, leftMs: undefined });
    expect(pace({ total: 0, done: 0, failed: 0 }, 0)).toEqual({ perSecond: 0, leftMs: 0 });
  });

  it('draws a bar with counts, rate and time left', () => {
    expect(progressLine({ total: 1000, done: 405, failed: 7 }, 33_500, true)).toBe(
      '[##########--------------] 412/1000 41% · done 405 · failed 7 · 12.3/s · 48s left',
    );
    expect(progressLine({ total: 4, done: 0, failed: 0 }, 1_000, false)).toBe(
      '0/4 0% · done 0 · failed 0 · 0/s · time left unknown',
    );
  });

  it('shows no rate nor time left before the work has run a second, unless it is finished', () => {
    // One job that ended 4 ms in is no rate of 250/s, and the rest does not take 0 s.
    expect(progressLine({ total: 1000, done: 1, failed: 0 }, 4, false)).toBe(
      '1/1000 0% · done 1 · failed 0 · measuring rate',
    );
    expect(progressLine({ total: 2, done: 2, failed: 0 }, 400, false)).toBe(
      '2/2 100% · done 2 · failed 0 · 5.0/s · 0s left',
    );
  });
});

describe('ProgressReport', () => {
  function report(tty: boolean) {
    const out: string[] = [];
    const clock = { now: 0 };
    const progress = new ProgressReport({ write: (text) => out.push(text), tty, now: () => clock.now });
    return { out, clock, progress };
  }

  it('redraws one terminal line with a carriage return, at most every 100 ms, and ends it', () => {
    const { out, clock, progress } = report(true);
    progress.update({ total: 100, done: 1, failed: 0 });
    clock.now = 50;
    progress.update({ total: 100, done: 2, failed: 0 });
    clock.now = 150;
    progress.update({ total: 100, done: 3, failed: 0 });
    progress.end();
    // The update 50 ms after a redraw is skipped; the last counts were drawn already, so `end` only breaks the line.
    expect(out).toHaveLength(3);
    expect(out.slice(0, 2).every((text) => text.startsWith('\r') && !text.includes('\n'))).toBe(true);
    expect(out[1]).toContain('3/100');
    expect(out[2]).toBe('\n');
  });

  it('redraws every second between changes, with the time moving on, until it ends', () => {
    vi.useFakeTimers({ now: 0 });
    try {
      const out: string[] = [];
      const progress = new ProgressReport({ write: (text) => out.push(text), tty: true });
      progress.update({ total: 100, done: 2, failed: 0 });
      // Skipped at once (too soon after the first draw), drawn by the next tick.
      vi.advanceTimersByTime(50);
      progress.update({ total: 100, done: 3, failed: 0 });
      expect(out).toHaveLength(1);
      vi.advanceTimersByTime(950);
      expect(out).toHaveLength(2);
      expect(out[1]).toContain('3/100');
      vi.advanceTimersByTime(9_000);
      expect(out).toHaveLength(11);
      // 3 jobs in 10 s, though none ended for 9 s.
      expect(out.at(-1)).toContain('18/min');
      progress.end();
      vi.advanceTimersByTime(5_000);
      expect(out).toHaveLength(12);
      expect(out.at(-1)).toBe('\n');
    } finally {
      vi.useRealTimers();
    }
  });

  it('off a terminal, writes plain lines every 5 s or every tenth of the work, no control characters', () => {
    const { out, clock, progress } = report(false);
    for (let done = 1; done <= 100; done += 1) {
      clock.now = done * 100; // 10 s in all
      progress.update({ total: 100, done, failed: 0 });
    }
    progress.end();
    // The first update, one per tenth (10 … 100 %) and one 5 s after the previous line.
    expect(out.length).toBeGreaterThanOrEqual(11);
    expect(out.length).toBeLessThanOrEqual(13);
    expect(out.join('')).not.toContain('\r');
    expect(out.join('')).not.toContain(String.fromCharCode(0x1b));
    expect(out.every((line) => line.endsWith('\n'))).toBe(true);
    expect(out.at(-1)).toContain('100/100 100%');
  });
});

describe('waitSummary', () => {
  it('gives counts, time and rate, and the failures grouped by reason, most frequent first', () => {
    const failed = new Map([
      ['no such group', ['g-1']],
      ['upstream timed out\nafter 15 s', ['a', 'b', 'c', 'd', 'e']],
    ]);
    const text = waitSummary({ total: 20, done: 14, failed, pending: new Set() }, 65_000, false);
    expect(text).toBe(
      [
        'Finished in 1m 05s: 14 done, 6 failed, of 20 (18/min).',
        'Failed:',
        '  5 × upstream timed out after 15 s: a, b, c and 2 more',
        '  1 × no such group: g-1',
      ].join('\n'),
    );
  });

  it('says the jobs go on when the wait was stopped', () => {
    const text = waitSummary({ total: 10, done: 4, failed: new Map(), pending: new Set(['x']) }, 3_000, true);
    expect(text).toContain('Stopped waiting after 3s: 4 done, 0 failed, 1 still queued or running (not cancelled');
  });
});
