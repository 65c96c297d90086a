import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { expand } from '../../src/timetable/expand.ts';
import type { TimetableEntry } from '../../src/timetable/types.ts';
import { bruteForceDates, isOddWeek, utcMidnight, weekdayOf } from './brute-force.ts';
import { entry } from './fixtures.ts';

const DAY = 86_400_000;
const FIRST = Date.UTC(2023, 0, 1);
const LAST = Date.UTC(2027, 11, 31);
const RUNS = 400;

const iso = (millis: number) => new Date(millis).toISOString().slice(0, 10);
const isoDay = (from: number, to: number) =>
  fc.integer({ min: from / DAY, max: to / DAY }).map((day) => iso(day * DAY));

/** The rule part of an entry: start in 2023–2027, span up to 400 days, any weekday and week type. */
const ruleArb = fc.record({
  start: fc.integer({ min: FIRST / DAY, max: LAST / DAY }),
  span: fc.integer({ min: 0, max: 400 }),
  weekday: fc.integer({ min: 1, max: 7 }),
  weekType: fc.integer({ min: 0, max: 2 }),
});

/** A Saturday or Sunday between `from` and `to`: term starts on a weekend move week 1 to the next week. */
const weekendDay = (from: number, to: number) =>
  fc
    .tuple(fc.integer({ min: Math.ceil(from / DAY / 7), max: Math.floor(to / DAY / 7) }), fc.constantFrom(2, 3))
    // Day 0 (1970-01-01) was a Thursday: 7k + 2 is a Saturday, 7k + 3 a Sunday.
    .map(([week, offset]) => iso((week * 7 + offset) * DAY));

/**
 * Term starts: the default rule (empty list), or a list of any dates (weekend ones made common), which may
 * all lie after the entry (dates before the earliest count back from it).
 */
const anchorsArb = fc.oneof(
  fc.constant<string[]>([]),
  fc.array(fc.oneof(isoDay(Date.UTC(2022, 0, 1), LAST + 400 * DAY), weekendDay(Date.UTC(2022, 0, 1), LAST)), {
    minLength: 1,
    maxLength: 7,
  }),
);

interface Rule {
  start: number;
  span: number;
  weekday: number;
  weekType: number;
}

function toEntry(r: Rule, id = 1, subject = 'Физика'): TimetableEntry {
  return entry({
    id,
    subjectName: subject,
    startDate: iso(r.start * DAY),
    finishDate: iso((r.start + r.span) * DAY),
    weekday: r.weekday as TimetableEntry['weekday'],
    weekType: r.weekType as TimetableEntry['weekType'],
  });
}

/** Holidays: offsets from the entry's start (so that many of them hit a class), plus a few anywhere. */
const holidayArb = fc.record({
  offsets: fc.array(fc.integer({ min: 0, max: 400 }), { maxLength: 25 }),
  anywhere: fc.array(isoDay(FIRST, LAST), { maxLength: 5 }),
});

function holidaySet(start: string, picks: { offsets: number[]; anywhere: string[] }): Set<string> {
  return new Set([...picks.offsets.map((offset) => iso(utcMidnight(start) + offset * DAY)), ...picks.anywhere]);
}

describe('expand: properties against a brute-force reading of docs/design.md', () => {
  it('occurs exactly on the brute-force dates, each in range, on its weekday, of the right parity, never a holiday', () => {
    fc.assert(
      fc.property(ruleArb, anchorsArb, holidayArb, (rule, anchors, picks) => {
        const one = toEntry(rule);
        const holidays = holidaySet(one.startDate, picks);
        const { occurrences, problems } = expand([one], { timezone: 'UTC', anchors, holidays });
        const dates = occurrences.map((o) => o.date);
        expect(problems).toEqual([]);
        expect(dates).toEqual(bruteForceDates(one, anchors, holidays));
        for (const date of dates) {
          const day = utcMidnight(date);
          expect(date >= one.startDate && date <= one.finishDate).toBe(true);
          expect(weekdayOf(day)).toBe(one.weekday);
          if (one.weekType !== 0) expect(isOddWeek(day, anchors)).toBe(one.weekType === 1);
          expect(holidays.has(date)).toBe(false);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it('carries the wall-clock time into startUtc/endUtc (UTC zone: midnight plus the time)', () => {
    fc.assert(
      fc.property(ruleArb, fc.integer({ min: 0, max: 22 }), fc.integer({ min: 0, max: 59 }), (rule, hour, minute) => {
        const hh = String(hour).padStart(2, '0');
        const mm = String(minute).padStart(2, '0');
        const one = {
          ...toEntry(rule),
          beginTime: `${hh}:${mm}`,
          endTime: `${String(hour + 1).padStart(2, '0')}:${mm}`,
        };
        for (const o of expand([one], { timezone: 'UTC' }).occurrences) {
          expect(o.startUtc).toBe(utcMidnight(o.date) + (hour * 60 + minute) * 60_000);
          expect(o.endUtc - o.startUtc).toBe(3_600_000);
          expect(o.timezone).toBe('UTC');
        }
      }),
      { numRuns: 100 },
    );
  });

  it('honours a from/to window exactly like the brute force', () => {
    fc.assert(
      fc.property(
        ruleArb,
        anchorsArb,
        isoDay(FIRST, LAST),
        fc.integer({ min: -10, max: 200 }),
        (rule, anchors, from, length) => {
          const one = toEntry(rule);
          const to = iso(utcMidnight(from) + length * DAY);
          const dates = expand([one], { timezone: 'UTC', anchors, from, to }).occurrences.map((o) => o.date);
          expect(dates).toEqual(bruteForceDates(one, anchors, new Set(), { from, to }));
        },
      ),
      { numRuns: 200 },
    );
  });

  it('gives unique, stable uids over several entries; expanding twice gives identical output', () => {
    fc.assert(
      fc.property(
        fc.array(ruleArb, { minLength: 1, maxLength: 5 }),
        anchorsArb,
        holidayArb,
        (rules, anchors, picks) => {
          // Distinct subjects: no two entries collapse, so each keeps its own dates.
          const entries = rules.map((rule, index) => toEntry(rule, 10 + index, `Предмет ${index}`));
          const holidays = holidaySet(entries[0]?.startDate ?? '2025-01-01', picks);
          const first = expand(entries, { timezone: 'Europe/Moscow', anchors, holidays });
          const second = expand(structuredClone(entries).reverse(), {
            timezone: 'Europe/Moscow',
            anchors,
            holidays: [...holidays],
          });
          expect(second).toEqual(first);
          const uids = first.occurrences.map((o) => o.uid);
          expect(new Set(uids).size).toBe(uids.length);
          for (const one of entries) {
            const mine = first.occurrences.filter((o) => o.entryId === one.id);
            expect(mine.map((o) => o.date)).toEqual(bruteForceDates(one, anchors, holidays));
            for (const o of mine) expect(o.uid).toBe(`${one.id}-${o.date.replaceAll('-', '')}@timetable-sync`);
          }
          const sorted = [...first.occurrences].sort((a, b) => a.startUtc - b.startUtc || (a.uid < b.uid ? -1 : 1));
          expect(first.occurrences).toEqual(sorted);
        },
      ),
      { numRuns: 150 },
    );
  });
});
