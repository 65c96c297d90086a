import { type DayNumber, dateParts, dayNumber, dayNumberOf, isoWeekday, mondayOf } from './dates.ts';

/**
 * Week parity as docs/design.md defines it. A parity anchor is the first study day of a count; the week
 * (Monday–Sunday) containing it is week 1, which is odd. The anchor in force for a date is the latest anchor
 * on or before it. Without explicit anchors every year has one: 1 September, or 2 September when
 * 1 September is a Sunday.
 */
export interface WeekParity {
  /** The anchor in force for `day` (day number). */
  anchorFor(day: DayNumber): DayNumber;
  /** Week number counted from the anchor in force: 1 for the anchor's own week. */
  weekNumber(day: DayNumber): number;
  /** True when `day` lies in an odd week. */
  isOdd(day: DayNumber): boolean;
}

/** The default anchor of a year: 1 September, or 2 September when 1 September is a Sunday. */
export function defaultAnchor(year: number): DayNumber {
  const first = dayNumberOf(year, 9, 1);
  return isoWeekday(first) === 7 ? first + 1 : first;
}

/**
 * Builds the parity rule from explicit anchors (ISO dates, `WEEK_PARITY_ANCHORS`), or the default yearly rule
 * when the list is empty. Before the earliest explicit anchor the count runs backwards from it (weeks 0,
 * -1, … alternate as usual), so no date is left without a parity.
 */
export function weekParity(anchors: readonly string[] = []): WeekParity {
  const sorted = [...new Set(anchors.map(dayNumber))].sort((a, b) => a - b);
  const anchorFor = sorted.length === 0 ? defaultAnchorFor : (day: DayNumber) => explicitAnchorFor(sorted, day);
  const weekNumber = (day: DayNumber) => (mondayOf(day) - mondayOf(anchorFor(day))) / 7 + 1;
  // Parity is asked for every occurrence; all days of a week but an anchor's own week share one answer,
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
  return { anchorFor, weekNumber, isOdd };
}

function defaultAnchorFor(day: DayNumber): DayNumber {
  const { year } = dateParts(day);
  const anchor = defaultAnchor(year);
  return anchor <= day ? anchor : defaultAnchor(year - 1);
}

function explicitAnchorFor(sorted: readonly DayNumber[], day: DayNumber): DayNumber {
  // Binary search for the latest anchor ≤ day; before the first one, the first one.
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
