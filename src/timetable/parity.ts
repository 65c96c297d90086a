import { type DayNumber, dateParts, dayNumber, dayNumberOf, isoWeekday, mondayOf } from './dates.ts';
import type { ExpansionRules } from './types.ts';

/**
 * Week parity as docs/design.md defines it. A term start is the first study day of a term; week 1 (odd) is
 * the week (Monday–Sunday) containing it, or the following week when it is a Saturday or Sunday. The term
 * start in force for a date is the latest one on or before it; before the earliest, the count runs backwards
 * from the earliest (weeks 0, -1, …). Without any term start (nothing configured, nothing inferred) every
 * year has one: 1 September.
 */
export interface WeekParity {
  /** The term start in force for `day` (day number). */
  termStartFor(day: DayNumber): DayNumber;
  /** Week number counted from the term start in force: 1 for its first week, 0 and below before it. */
  weekNumber(day: DayNumber): number;
  /** True when `day` lies in an odd week. */
  isOdd(day: DayNumber): boolean;
}

/** The default term start of a year, used when nothing is configured or inferred: 1 September. */
export function defaultTermStart(year: number): DayNumber {
  return dayNumberOf(year, 9, 1);
}

/** The Monday of week 1 of a term: the term start's own week, or the next one when it is a Saturday or Sunday. */
export function firstWeekMonday(termStart: DayNumber): DayNumber {
  const monday = mondayOf(termStart);
  return isoWeekday(termStart) >= 6 ? monday + 7 : monday;
}

/**
 * Rules 1 (feeds published before rows were merged and term starts inferred, re-expanded as they were published;
 * see `ExpansionRules`): week 1
 * is the week containing the term start whatever its weekday, and the default term start is 1 September, or
 * 2 September when 1 September is a Sunday. Kept only so that an upgrade does not move what was published.
 */
const legacyRules = {
  firstWeekMonday: mondayOf,
  defaultTermStart(year: number): DayNumber {
    const first = dayNumberOf(year, 9, 1);
    return isoWeekday(first) === 7 ? first + 1 : first;
  },
};

const currentRules = { firstWeekMonday, defaultTermStart };

/**
 * Builds the parity rule from the term starts in force (ISO dates: configured or inferred), or the default
 * yearly rule when the list is empty; `rules` 1 counts as feeds published before rows were merged did.
 */
export function weekParity(termStarts: readonly string[] = [], rules: ExpansionRules = 2): WeekParity {
  const rule = rules === 1 ? legacyRules : currentRules;
  const sorted = [...new Set(termStarts.map(dayNumber))].sort((a, b) => a - b);
  const termStartFor =
    sorted.length === 0
      ? (day: DayNumber) => defaultTermStartFor(day, rule.defaultTermStart)
      : (day: DayNumber) => listedTermStartFor(sorted, day);
  const weekNumber = (day: DayNumber) => (mondayOf(day) - rule.firstWeekMonday(termStartFor(day))) / 7 + 1;
  // Parity is asked for every occurrence; all days of a week but a term start's own week share one answer,
  // so memoise by day (a few hundred distinct days per timetable).
  const oddByDay = new Map<DayNumber, boolean>();
  const isOdd = (day: DayNumber) => {
    let odd = oddByDay.get(day);
    if (odd === undefined) {
      odd = Math.abs(weekNumber(day)) % 2 === 1;
      oddByDay.set(day, odd);
    }
    return odd;
  };
  return { termStartFor, weekNumber, isOdd };
}

function defaultTermStartFor(day: DayNumber, termStartOf: (year: number) => DayNumber): DayNumber {
  const { year } = dateParts(day);
  const own = termStartOf(year);
  return own <= day ? own : termStartOf(year - 1);
}

function listedTermStartFor(sorted: readonly DayNumber[], day: DayNumber): DayNumber {
  // Binary search for the latest term start ≤ day; before the first one, the first one.
  let low = 0;
  let high = sorted.length - 1;
  let found = 0;
  while (low <= high) {
    const middle = (low + high) >> 1;
    if ((sorted[middle] as number) <= day) {
      found = middle;
      low = middle + 1;
    } else {
      high = middle - 1;
    }
  }
  return sorted[found] as number;
}
