import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { generateDataset } from '../../src/simulator/generate.ts';
import { expand } from '../../src/timetable/expand.ts';
import {
  countStartDates,
  describeTermStart,
  inferTermStarts,
  resolveTermStarts,
  termCoverage,
  termStartDates,
} from '../../src/timetable/terms.ts';
import type { TimetableEntry } from '../../src/timetable/types.ts';
import { bruteForceDates, bruteForceTermStarts } from './brute-force.ts';
import { entry } from './fixtures.ts';

const DAY = 86_400_000;
const iso = (millis: number) => new Date(millis).toISOString().slice(0, 10);

/** Entries whose start dates are given; ids distinct. */
function startingOn(dates: readonly string[], firstId = 1): TimetableEntry[] {
  return dates.map((startDate, index) => entry({ id: firstId + index, startDate, finishDate: '2030-12-31' }));
}

function repeat(date: string, times: number): string[] {
  return Array.from({ length: times }, () => date);
}

/** One of `slots` dates `step` days apart from `month`/`day` of a year of 2018–2020: few candidates, many ties. */
function clusteredDate(month: number, day: number, slots: number, step: number): fc.Arbitrary<string> {
  return fc
    .tuple(fc.integer({ min: 2018, max: 2020 }), fc.integer({ min: 0, max: slots - 1 }))
    .map(([year, slot]) => iso(Date.UTC(year, month, day) + slot * step * DAY));
}

/**
 * Start dates over the whole year, September heavy (as real timetables are), February next, and anywhere
 * else; each half-year gets several candidates with ties, both halves of a year included.
 */
const startDateArb = fc.oneof(
  { arbitrary: clusteredDate(7, 28, 6, 3), weight: 4 },
  { arbitrary: clusteredDate(1, 1, 5, 4), weight: 2 },
  { arbitrary: clusteredDate(0, 1, 24, 15), weight: 2 },
);

describe('term starts inferred from the timetables', () => {
  it('agree with a brute-force reading of the rule (most entries per half-year, earliest of equals)', () => {
    fc.assert(
      fc.property(fc.array(startDateArb, { minLength: 1, maxLength: 60 }), (dates) => {
        const inferred = inferTermStarts(countStartDates(startingOn(dates)));
        expect(termStartDates(inferred)).toEqual(bruteForceTermStarts(dates));
        for (const term of inferred) {
          expect(term.source).toBe('inferred');
          expect(term.entries).toBe(dates.filter((date) => date === term.date).length);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('then give every entry the brute-force dates, for entries spanning both halves of a year', () => {
    const entryArb = fc.record({
      start: startDateArb,
      span: fc.integer({ min: 0, max: 300 }),
      weekday: fc.integer({ min: 1, max: 7 }),
      weekType: fc.integer({ min: 1, max: 2 }),
    });
    fc.assert(
      fc.property(fc.array(entryArb, { minLength: 1, maxLength: 12 }), (rules) => {
        const entries = rules.map((rule, index) =>
          entry({
            id: index + 1,
            subjectName: `Предмет ${index}`,
            startDate: rule.start,
            finishDate: iso(Date.parse(rule.start) + rule.span * DAY),
            weekday: rule.weekday as TimetableEntry['weekday'],
            weekType: rule.weekType as TimetableEntry['weekType'],
          }),
        );
        const anchors = termStartDates(resolveTermStarts([], countStartDates(entries)));
        const truth = bruteForceTermStarts(rules.map((rule) => rule.start));
        const { occurrences } = expand(entries, { timezone: 'UTC', anchors });
        for (const one of entries)
          expect(occurrences.filter((o) => o.entryId === one.id).map((o) => o.date)).toEqual(
            bruteForceDates(one, truth, new Set()),
          );
      }),
      { numRuns: 150 },
    );
  });

  it('give way to an explicit list, whatever the timetables say', () => {
    fc.assert(
      fc.property(
        fc.array(startDateArb, { maxLength: 30 }),
        fc.array(startDateArb, { minLength: 1, maxLength: 4 }),
        (dates, configured) => {
          const terms = resolveTermStarts(configured, countStartDates(startingOn(dates)));
          expect(termStartDates(terms)).toEqual([...new Set(configured)].sort());
          expect(terms.every((term) => term.source === 'configured' && term.entries === undefined)).toBe(true);
        },
      ),
      { numRuns: 100 },
    );
  });

  it('are none without data: the default rule (1 September) applies', () => {
    expect(resolveTermStarts([], new Map())).toEqual([]);
    expect(inferTermStarts(new Map([['2025-09-01', 0]]))).toEqual([]);
  });

  it('count an id given twice once', () => {
    const twice = [entry({ id: 1, startDate: '2025-09-08' }), entry({ id: 1, startDate: '2025-09-08' })];
    expect(countStartDates([...twice, entry({ id: 2 }), entry({ id: 3 })])).toEqual(
      new Map([
        ['2025-09-08', 1],
        ['2025-09-01', 2],
      ]),
    );
  });

  it('take one term start per half-year, both halves of one year included', () => {
    const dates = [
      ...repeat('2025-02-09', 3),
      ...repeat('2025-03-01', 2),
      ...repeat('2025-06-30', 1),
      ...repeat('2025-07-01', 4),
      ...repeat('2025-09-01', 4),
    ];
    const terms = inferTermStarts(countStartDates(startingOn(dates)));
    // 1 July and 1 September tie with 4 entries each: the earliest wins.
    expect(terms).toEqual([
      { date: '2025-02-09', source: 'inferred', entries: 3, halfYearEntries: 6 },
      { date: '2025-07-01', source: 'inferred', entries: 4, halfYearEntries: 8 },
    ]);
  });
});

describe('2018/19, as the KFU timetable bots counted it', () => {
  // Autumn: most classes from Saturday 1 September, some from the second half; spring from Monday 4 February.
  const entries = startingOn([
    ...repeat('2018-09-01', 40),
    ...repeat('2018-10-29', 12),
    ...repeat('2019-02-04', 35),
    ...repeat('2019-02-11', 3),
  ]);
  const terms = resolveTermStarts([], countStartDates(entries));
  const anchors = termStartDates(terms);

  it('infers 1 September 2018 and 4 February 2019, with where they came from', () => {
    expect(anchors).toEqual(['2018-09-01', '2019-02-04']);
    expect(terms.map(describeTermStart)).toEqual([
      'term start 2018-09-01 (Saturday), inferred from 40 of 52 entries starting July–December 2018: week 1 (odd) begins Monday 2018-09-03',
      'term start 2019-02-04 (Monday), inferred from 35 of 38 entries starting January–June 2019: week 1 (odd) begins Monday 2019-02-04',
    ]);
  });

  it('puts week 1 on Monday 3 September 2018 (1 September was a Saturday)', () => {
    const odd = entry({ weekday: 1, weekType: 1, startDate: '2018-09-01', finishDate: '2018-09-30' });
    const dates = expand([odd], { timezone: 'Europe/Moscow', anchors }).occurrences.map((o) => o.date);
    expect(dates).toEqual(['2018-09-03', '2018-09-17']);
  });

  it('restarts in spring: a Tuesday odd-week class from 04.02.19 is on 5 and 19 February, not 12 and 26', () => {
    const odd = entry({ weekday: 2, weekType: 1, startDate: '2019-02-04', finishDate: '2019-03-31' });
    const dates = expand([odd], { timezone: 'Europe/Moscow', anchors }).occurrences.map((o) => o.date);
    expect(dates).toEqual(['2019-02-05', '2019-02-19', '2019-03-05', '2019-03-19']);
    // The rule before term starts were inferred made the week of Saturday 1 September (from Monday 27 August)
    // week 1 and never restarted in spring: every spring class a week off.
    const before = expand([odd], { timezone: 'Europe/Moscow', anchors: ['2018-08-27'] });
    const fallback = before.occurrences.map((o) => o.date);
    expect(fallback).toEqual(['2019-02-12', '2019-02-26', '2019-03-12', '2019-03-26']);
  });

  it('covers each term from its start to the day before the next', () => {
    expect(termCoverage(terms)).toEqual([
      { firstWeek: '2018-09-03', from: '2018-09-01', until: '2019-02-03', weeks: 22 },
      { firstWeek: '2019-02-04', from: '2019-02-04' },
    ]);
  });
});

describe('2025/26, from the simulator’s own data', () => {
  function simulatorStartDates(referenceDate: string): string[] {
    const dataset = generateDataset({
      seed: 7,
      referenceDate: new Date(referenceDate),
      groups: 6,
      employees: 8,
      users: 0,
    });
    return dataset.entries.map((one) => String(one.fields.start_day_schedule));
  }
  const dates = [...simulatorStartDates('2025-10-01T00:00:00Z'), ...simulatorStartDates('2026-03-01T00:00:00Z')];
  const anchors = termStartDates(inferTermStarts(countStartDates(startingOn(dates))));

  it('infers Monday 1 September 2025 and Monday 9 February 2026', () => {
    expect(anchors).toEqual(['2025-09-01', '2026-02-09']);
  });

  it('gives two odd weeks in a row where spring starts', () => {
    const odd = entry({ weekday: 1, weekType: 1, startDate: '2026-01-05', finishDate: '2026-02-23' });
    const found = expand([odd], { timezone: 'Europe/Moscow', anchors }).occurrences.map((o) => o.date);
    expect(found).toEqual(['2026-01-05', '2026-01-19', '2026-02-02', '2026-02-09', '2026-02-23']);
  });
});
