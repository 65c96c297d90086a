import { describe, expect, it } from 'vitest';
import { parityView } from '../../src/http/parity-view.ts';
import { resolveTermStarts } from '../../src/timetable/terms.ts';

describe('GET /admin/parity view', () => {
  it('shows configured term starts with the dates and weeks each governs, the last one open-ended', () => {
    const view = parityView(resolveTermStarts(['2026-02-09', '2025-09-01'], new Map()), Date.UTC(2025, 10, 1));
    expect(view.source).toBe('configured');
    expect(view.termStarts).toEqual([
      {
        date: '2025-09-01',
        source: 'configured',
        from: 'configured in WEEK_PARITY_ANCHORS',
        firstWeek: '2025-09-01',
        firstDate: '2025-09-01',
        lastDate: '2026-02-08',
        weeks: 23,
      },
      {
        date: '2026-02-09',
        source: 'configured',
        from: 'configured in WEEK_PARITY_ANCHORS',
        firstWeek: '2026-02-09',
        firstDate: '2026-02-09',
      },
    ]);
  });

  it('without data shows the default 1 September in force today and the next one', () => {
    // 1 March 2025: the term start in force is 1 September 2024 (a Sunday: week 1 begins 2 September).
    const view = parityView([], Date.UTC(2025, 2, 1, 12));
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
