import { describe, expect, it } from 'vitest';
import { parityView } from '../../src/http/parity-view.ts';
import { resolveTermStarts } from '../../src/timetable/terms.ts';

describe('GET /admin/parity view', () => {
  it('shows configured term starts with the dates and weeks each governs, the last one open-ended', () => {
    const resolved = resolveTermStarts(['2026-02-09', '2025-09-01'], new Map());
    const view = parityView({ stored: undefined, resolved, counts: new Map() }, Date.UTC(2025, 10, 1));
    expect(view.source).toBe('configured');
    expect(view.stored).toBe(false);
    expect(view.termStarts).toEqual([
      {
        date: '2025-09-01',
        source: 'configured',
        from: 'configured in WEEK_PARITY_ANCHORS',
        firstWeek: '2025-09-01',
        firstDate: '2025-09-01',
        lastDate: '2026-02-08',
        weeks: 23,
        covers: '2025-09-01 to 2026-02-08, 23 weeks',
        openEnded: false,
      },
      {
        date: '2026-02-09',
        source: 'configured',
        from: 'configured in WEEK_PARITY_ANCHORS',
        firstWeek: '2026-02-09',
        firstDate: '2026-02-09',
        covers: 'every date from 2026-02-09 on',
        openEnded: true,
      },
    ]);
  });

  it('shows the stored term starts in force rather than what the counts give now, and the counts', () => {
    const stored = { version: 7, termStarts: resolveTermStarts([], new Map([['2025-09-01', 40]])) };
    const counts = new Map([
      ['2026-02-09', 3],
      ['2025-09-01', 40],
    ]);
    const view = parityView({ stored, resolved: resolveTermStarts([], counts), counts }, Date.UTC(2025, 10, 1));
    expect(view).toMatchObject({ source: 'inferred', stored: true, countsVersion: 7 });
    expect(view.counts).toEqual({ '2025-09-01': 40, '2026-02-09': 3 });
    expect(Object.keys(view.counts)).toEqual(['2025-09-01', '2026-02-09']);
    expect(view.termStarts.map((term) => term.date)).toEqual(['2025-09-01']);
    expect(view.termStarts[0]).toMatchObject({ entries: 40, openEnded: true, covers: 'every date from 2025-09-01 on' });
  });

  it('without data shows the default 1 September in force today and the next one', () => {
    // 1 March 2025: the term start in force is 1 September 2024 (a Sunday: week 1 begins 2 September).
    const view = parityView({ stored: undefined, resolved: [], counts: new Map() }, Date.UTC(2025, 2, 1, 12));
    expect(view.source).toBe('default');
    expect(view.rule).toContain('1 September of every year');
    expect(
      view.termStarts.map(({ date, firstWeek, lastDate, weeks }) => ({ date, firstWeek, lastDate, weeks })),
    ).toEqual([
      { date: '2024-09-01', firstWeek: '2024-09-02', lastDate: '2025-08-31', weeks: 52 },
      { date: '2025-09-01', firstWeek: '2025-09-01', lastDate: '2026-08-31', weeks: 53 },
    ]);
    expect(view.termStarts[0]?.from).toBe('default (1 September; nothing configured or inferred)');
  });
});
