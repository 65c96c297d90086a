import { describe, expect, it } from 'vitest';
import { dayNumber, isoDate } from '../../src/timetable/dates.ts';
import { expand, occurrenceDates, occurrenceUid } from '../../src/timetable/expand.ts';
import { defaultTermStart, weekParity } from '../../src/timetable/parity.ts';
import type { ExpandOptions, Occurrence, PreviousOccurrence, TimetableEntry } from '../../src/timetable/types.ts';
import { entry } from './fixtures.ts';

const MOSCOW: ExpandOptions = { timezone: 'Europe/Moscow' };

function datesOf(entries: TimetableEntry | TimetableEntry[], options: Partial<ExpandOptions> = {}): string[] {
  return expand([entries].flat(), { ...MOSCOW, ...options }).occurrences.map((o) => o.date);
}

describe('week parity: the default term starts (nothing configured or inferred)', () => {
  it('1 September 2024 is a Sunday, so week 1 of the 2024 count is the week of Monday 2 September', () => {
    expect(isoDate(defaultTermStart(2024))).toBe('2024-09-01');
    expect(isoDate(defaultTermStart(2025))).toBe('2025-09-01');
    const parity = weekParity();
    // Sunday 1 September 2024 is the term start itself, in week 0 of the new count (it used to close week 53).
    expect(isoDate(parity.termStartFor(dayNumber('2024-09-01')))).toBe('2024-09-01');
    expect(parity.weekNumber(dayNumber('2024-09-01'))).toBe(0);
    expect(parity.weekNumber(dayNumber('2024-08-31'))).toBe(53);
    expect(parity.weekNumber(dayNumber('2024-09-02'))).toBe(1);
    expect(parity.weekNumber(dayNumber('2024-09-08'))).toBe(1);
    expect(parity.weekNumber(dayNumber('2024-09-09'))).toBe(2);
  });

  it('odd-week Mondays and Sundays around 2 September 2024', () => {
    const odd = { weekType: 1 as const, startDate: '2024-08-19', finishDate: '2024-09-30' };
    expect(datesOf(entry({ ...odd, weekday: 1 }))).toEqual(['2024-08-26', '2024-09-02', '2024-09-16', '2024-09-30']);
    // Sunday 1 September is week 0 of the new count (even); Sunday 8 September closes week 1.
    expect(datesOf(entry({ ...odd, weekday: 7 }))).toEqual(['2024-09-08', '2024-09-22']);
    expect(datesOf(entry({ ...odd, weekday: 7, weekType: 2 }))).toEqual([
      '2024-08-25',
      '2024-09-01',
      '2024-09-15',
      '2024-09-29',
    ]);
  });

  it('1 September 2018 is a Saturday, so week 1 is the week of Monday 3 September 2018', () => {
    const parity = weekParity();
    expect(parity.weekNumber(dayNumber('2018-09-01'))).toBe(0);
    expect(parity.weekNumber(dayNumber('2018-09-03'))).toBe(1);
    expect(parity.isOdd(dayNumber('2018-09-04'))).toBe(true);
    expect(parity.isOdd(dayNumber('2018-09-11'))).toBe(false);
  });

  it('counts January from the September before it', () => {
    // 2025-09-01 is week 1; 2026-01-12 is 19 weeks later: week 20, even.
    const parity = weekParity();
    expect(isoDate(parity.termStartFor(dayNumber('2026-01-12')))).toBe('2025-09-01');
    expect(parity.weekNumber(dayNumber('2026-01-12'))).toBe(20);
    expect(parity.isOdd(dayNumber('2026-01-12'))).toBe(false);
    // 2026-08-31 is a Monday, 52 weeks after 2025-09-01 (the 2026 anchor is 1 September): week 53, odd.
    expect(parity.weekNumber(dayNumber('2026-08-31'))).toBe(53);
    expect(parity.isOdd(dayNumber('2026-08-31'))).toBe(true);
  });
});

describe('week parity: explicit anchors', () => {
  const anchors = ['2025-09-01', '2026-02-09'];

  it('a January date counts from 2025-09-01, a date on or after 2026-02-09 from it', () => {
    const parity = weekParity(anchors);
    expect(isoDate(parity.termStartFor(dayNumber('2026-01-19')))).toBe('2025-09-01');
    expect(isoDate(parity.termStartFor(dayNumber('2026-02-08')))).toBe('2025-09-01');
    expect(isoDate(parity.termStartFor(dayNumber('2026-02-09')))).toBe('2026-02-09');
    expect(parity.weekNumber(dayNumber('2026-02-02'))).toBe(23);
    expect(parity.weekNumber(dayNumber('2026-02-09'))).toBe(1);
    // Two odd weeks in a row where the new count starts.
    const odd = entry({ weekday: 1, weekType: 1, startDate: '2026-01-05', finishDate: '2026-02-23' });
    expect(datesOf(odd, { anchors })).toEqual(['2026-01-05', '2026-01-19', '2026-02-02', '2026-02-09', '2026-02-23']);
    expect(datesOf({ ...odd, weekType: 2 }, { anchors })).toEqual(['2026-01-12', '2026-01-26', '2026-02-16']);
  });

  it('replaces the default rule entirely', () => {
    // With only a February anchor, September 2026 does not restart the count.
    const parity = weekParity(['2026-02-09']);
    expect(isoDate(parity.termStartFor(dayNumber('2026-09-07')))).toBe('2026-02-09');
    expect(parity.weekNumber(dayNumber('2026-09-07'))).toBe(31);
  });

  it('an anchor in mid-week makes its whole week (from that day on) week 1', () => {
    // Wednesday 11 Feb 2026. Monday and Tuesday of that week still fall under 2025-09-01 (week 24, even), as
    // "the latest anchor on or before the date" says; from Wednesday on the week is week 1, odd.
    const midWeek = ['2025-09-01', '2026-02-11'];
    const parity = weekParity(midWeek);
    expect(parity.weekNumber(dayNumber('2026-02-09'))).toBe(24);
    expect(parity.weekNumber(dayNumber('2026-02-11'))).toBe(1);
    expect(parity.weekNumber(dayNumber('2026-02-15'))).toBe(1);
    expect(parity.weekNumber(dayNumber('2026-02-16'))).toBe(2);
    const span = { weekType: 1 as const, startDate: '2026-02-02', finishDate: '2026-02-28' };
    // Monday 2 Feb is week 23 (odd); Monday 9 Feb week 24 (even) although Wednesday 11 Feb is week 1.
    expect(datesOf(entry({ ...span, weekday: 1 }), { anchors: midWeek })).toEqual(['2026-02-02', '2026-02-23']);
    expect(datesOf(entry({ ...span, weekday: 3 }), { anchors: midWeek })).toEqual([
      '2026-02-04',
      '2026-02-11',
      '2026-02-25',
    ]);
  });

  it('before the earliest explicit term start counts backwards from it (weeks 0 even, -1 odd)', () => {
    const parity = weekParity(['2026-02-09']);
    expect(parity.weekNumber(dayNumber('2026-02-02'))).toBe(0);
    expect(parity.isOdd(dayNumber('2026-02-02'))).toBe(false);
    expect(parity.isOdd(dayNumber('2026-01-26'))).toBe(true);
  });

  it('ignores the order and repetition of anchors', () => {
    const odd = entry({ weekday: 2, weekType: 1, startDate: '2025-09-01', finishDate: '2026-06-30' });
    expect(datesOf(odd, { anchors: ['2026-02-09', '2025-09-01', '2026-02-09'] })).toEqual(datesOf(odd, { anchors }));
  });
});

describe('week parity: rules 1, kept to re-expand feeds published before rows were merged', () => {
  const week = (parity: ReturnType<typeof weekParity>, date: string) => parity.weekNumber(dayNumber(date));

  it('counts week 1 from the week holding the term start, whatever its weekday', () => {
    // 1 September 2018 was a Saturday: rules 1 made its week (from Monday 27 August) week 1, rules 2 the next.
    expect(week(weekParity([], 1), '2018-09-04')).toBe(2);
    expect(week(weekParity([], 2), '2018-09-04')).toBe(1);
    expect(week(weekParity(['2019-02-02'], 1), '2019-02-05')).toBe(2);
    expect(week(weekParity(['2019-02-02'], 2), '2019-02-05')).toBe(1);
  });

  it('starts a default year on 2 September when 1 September is a Sunday, like rules 2 in effect', () => {
    // 1 September 2024 was a Sunday.
    expect(week(weekParity([], 1), '2024-09-02')).toBe(1);
    expect(week(weekParity([], 2), '2024-09-02')).toBe(1);
    expect(week(weekParity([], 1), '2024-08-31')).toBe(week(weekParity([], 2), '2024-08-31'));
  });

  it('expand by rules 1 leaves rows of one class apart', () => {
    const rows = [entry({ id: 1, groups: ['A'] }), entry({ id: 2, groups: ['B'] })];
    const ids = (rules: 1 | 2) => new Set(expand(rows, { ...MOSCOW, rules }).occurrences.map((o) => o.entryId));
    expect(ids(1)).toEqual(new Set([1, 2]));
    expect(ids(2)).toEqual(new Set([1]));
  });
});

describe('expand: the occurrence rule', () => {
  it('drops holidays', () => {
    const tuesdays = entry({ weekday: 2, startDate: '2025-10-28', finishDate: '2025-11-25' });
    expect(datesOf(tuesdays)).toEqual(['2025-10-28', '2025-11-04', '2025-11-11', '2025-11-18', '2025-11-25']);
    expect(datesOf(tuesdays, { holidays: ['2025-11-04', '2025-11-05', '2025-11-25'] })).toEqual([
      '2025-10-28',
      '2025-11-11',
      '2025-11-18',
    ]);
  });

  it('weekday 7 is Sunday; start and finish dates are inclusive', () => {
    const sundays = entry({ weekday: 7, startDate: '2025-09-07', finishDate: '2025-09-28' });
    expect(datesOf(sundays)).toEqual(['2025-09-07', '2025-09-14', '2025-09-21', '2025-09-28']);
    expect(datesOf({ ...sundays, weekType: 1 })).toEqual(['2025-09-07', '2025-09-21']);
    expect(datesOf({ ...sundays, weekType: 2 })).toEqual(['2025-09-14', '2025-09-28']);
  });

  it('a one-day entry on the wrong weekday occurs never; on the right one, once', () => {
    expect(datesOf(entry({ weekday: 3, startDate: '2025-09-01', finishDate: '2025-09-01' }))).toEqual([]);
    expect(datesOf(entry({ weekday: 1, startDate: '2025-09-01', finishDate: '2025-09-01' }))).toEqual(['2025-09-01']);
  });

  it('start after finish yields no date (docs/design.md does not call it invalid), and the rest is still expanded', () => {
    const backwards = entry({ id: 7, startDate: '2025-12-01', finishDate: '2025-09-01' });
    const fine = entry({ id: 8, subjectName: 'Физика', startDate: '2025-09-01', finishDate: '2025-09-08' });
    const { occurrences, problems } = expand([backwards, fine], MOSCOW);
    expect(occurrences.map((o) => o.uid)).toEqual(['8-20250901@timetable-sync', '8-20250908@timetable-sync']);
    expect(problems).toEqual([]);
  });

  it('limits occurrences to the from/to window (inclusive)', () => {
    const mondays = entry({ startDate: '2025-09-01', finishDate: '2025-12-29' });
    expect(datesOf(mondays, { from: '2025-10-06', to: '2025-10-27' })).toEqual([
      '2025-10-06',
      '2025-10-13',
      '2025-10-20',
      '2025-10-27',
    ]);
    expect(datesOf(mondays, { from: '2025-10-07', to: '2025-10-19' })).toEqual(['2025-10-13']);
    expect(datesOf(mondays, { to: '2025-09-07' })).toEqual(['2025-09-01']);
    expect(datesOf(mondays, { from: '2025-12-29' })).toEqual(['2025-12-29']);
    expect(datesOf(mondays, { from: '2026-01-01' })).toEqual([]);
  });

  it('occurrenceDates agrees with expand', () => {
    const odd = entry({ weekType: 1, weekday: 4, startDate: '2025-09-01', finishDate: '2025-10-31' });
    expect(occurrenceDates(odd, weekParity(), new Set(['2025-09-18']))).toEqual([
      '2025-09-04',
      '2025-10-02',
      '2025-10-16',
      '2025-10-30',
    ]);
    expect(datesOf(odd, { holidays: ['2025-09-18'] })).toEqual([
      '2025-09-04',
      '2025-10-02',
      '2025-10-16',
      '2025-10-30',
    ]);
  });
});

describe('expand: identity and duplicates', () => {
  it('uids are the entry id and the date', () => {
    expect(occurrenceUid(101, '2025-09-01')).toBe('101-20250901@timetable-sync');
    const [first] = expand([entry()], MOSCOW).occurrences;
    expect(first).toMatchObject({
      uid: '101-20250901@timetable-sync',
      entryId: 101,
      date: '2025-09-01',
      beginTime: '10:10',
      endTime: '11:40',
      timezone: 'Europe/Moscow',
      status: 'CONFIRMED',
      sequence: 0,
    });
  });

  it('the same id twice is used once', () => {
    const once = expand([entry()], MOSCOW);
    const twice = expand([entry(), entry()], MOSCOW);
    expect(twice).toEqual(once);
    expect(once.occurrences).toHaveLength(17);
  });

  it('the same id with different content keeps its first row and reports the other', () => {
    const monday = entry({ id: 9, finishDate: '2025-09-08' });
    const wednesday = entry({ id: 9, weekday: 3, finishDate: '2025-09-10' });
    const { occurrences, problems } = expand([monday, wednesday], MOSCOW);
    expect(occurrences.map((o) => o.date)).toEqual(['2025-09-01', '2025-09-08']);
    expect(problems).toEqual([
      expect.objectContaining({ entryId: 9, field: 'id', reason: expect.stringContaining('different content') }),
    ]);
  });

  it('two ids with identical content collapse into the lowest id, whatever the input order', () => {
    const { occurrences } = expand([entry({ id: 300 }), entry({ id: 200 }), entry({ id: 250 })], MOSCOW);
    expect(occurrences).toHaveLength(17);
    expect(new Set(occurrences.map((o) => o.entryId))).toEqual(new Set([200]));
  });

  it('collapses only the dates both entries share, and never different content', () => {
    const autumn = entry({ id: 5, finishDate: '2025-09-15' });
    const later = entry({ id: 4, startDate: '2025-09-08', finishDate: '2025-09-22' });
    const otherRoom = entry({ id: 3, room: '306', finishDate: '2025-09-01' });
    const uids = expand([autumn, later, otherRoom], MOSCOW)
      .occurrences.map((o) => o.uid)
      .sort();
    expect(uids).toEqual([
      '3-20250901@timetable-sync',
      '4-20250908@timetable-sync',
      '4-20250915@timetable-sync',
      '4-20250922@timetable-sync',
      '5-20250901@timetable-sync',
    ]);
  });
});

describe('expand: SEQUENCE', () => {
  const base = entry({ finishDate: '2025-09-15' });

  function previousOf(occurrences: readonly Occurrence[], bump = 0): Map<string, PreviousOccurrence> {
    return new Map(occurrences.map((o) => [o.uid, { hash: o.hash, sequence: o.sequence + bump }]));
  }

  it('keeps the sequence of unchanged content, raises it by one on a change, starts new uids at 0', () => {
    const first = expand([base], MOSCOW).occurrences;
    expect(first.map((o) => o.sequence)).toEqual([0, 0, 0]);
    const previous = previousOf(first, 3);
    expect(expand([base], { ...MOSCOW, previous }).occurrences.map((o) => o.sequence)).toEqual([3, 3, 3]);
    const changes: Partial<TimetableEntry>[] = [
      { beginTime: '12:00', endTime: '13:30' },
      { endTime: '11:45' },
      { room: '306' },
      { building: { id: 4, name: 'Корпус Б' } },
      { subjectName: 'Алгебра' },
      { note: 'Перенос' },
      { teacher: { id: 9, lastName: 'Петров', firstName: 'Пётр', middleName: '' } },
      { kind: 'практика' },
    ];
    for (const change of changes) {
      expect(
        expand([{ ...base, ...change }], { ...MOSCOW, previous }).occurrences.map((o) => o.sequence),
        JSON.stringify(change),
      ).toEqual([4, 4, 4]);
    }
    const longer = expand([{ ...base, finishDate: '2025-09-22' }], { ...MOSCOW, previous }).occurrences;
    expect(longer.map((o) => [o.date, o.sequence])).toEqual([
      ['2025-09-01', 3],
      ['2025-09-08', 3],
      ['2025-09-15', 3],
      ['2025-09-22', 0],
    ]);
  });

  it('raises the sequence when only the categories change (kind in another case, kind not in the title)', () => {
    const subscriber = { titleTemplate: '{subject}' };
    const first = expand([base], { ...MOSCOW, subscriber }).occurrences;
    const again = expand([{ ...base, kind: 'Лекция' }], {
      ...MOSCOW,
      subscriber,
      previous: previousOf(first),
    }).occurrences;
    expect(again[0]?.categories).toEqual(['Лекция']);
    expect(again.map((o) => o.sequence)).toEqual([1, 1, 1]);
  });

  it('raises the sequence when the zone changes (the same wall-clock time is another instant)', () => {
    const first = expand([base], MOSCOW).occurrences;
    const moved = expand([base], { timezone: 'Europe/Berlin', previous: previousOf(first) }).occurrences;
    expect(moved.map((o) => o.sequence)).toEqual([1, 1, 1]);
  });

  it('is stable: the hash depends on content only, not on the date or the input order', () => {
    const [a, b] = expand([base], MOSCOW).occurrences;
    expect(a?.hash).toBe(b?.hash);
    expect(a?.hash).toMatch(/^[0-9a-f]{16}$/);
    expect(
      expand([base, entry({ id: 9, subjectName: 'Физика' })], MOSCOW).occurrences.filter((o) => o.entryId === 101),
    ).toEqual(expand([base], MOSCOW).occurrences);
  });
});
