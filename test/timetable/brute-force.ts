/**
 * An independent reading of docs/design.md "Expansion semantics", written for the tests: day by day, plain
 * `Date.UTC` arithmetic, no code shared with src/timetable. Slow on purpose: it is the oracle.
 */
const DAY = 86_400_000;

/** UTC midnight of an ISO date. */
export function utcMidnight(iso: string): number {
  const [year = NaN, month = NaN, day = NaN] = iso.split('-').map(Number);
  return Date.UTC(year, month - 1, day);
}

function isoOf(millis: number): string {
  return new Date(millis).toISOString().slice(0, 10);
}

/** ISO weekday of a UTC midnight: 1 = Monday … 7 = Sunday. */
export function weekdayOf(millis: number): number {
  const weekday = new Date(millis).getUTCDay();
  return weekday === 0 ? 7 : weekday;
}

function mondayOf(millis: number): number {
  return millis - (weekdayOf(millis) - 1) * DAY;
}

/** "With no data at all: 1 September" (of every year). */
function defaultTermStartOfYear(year: number): number {
  return Date.UTC(year, 8, 1);
}

/**
 * "A date takes its parity from the latest term start on or before it (before every known term start: from
 * the earliest one)."
 */
export function termStartInForce(millis: number, termStarts: readonly string[]): number {
  if (termStarts.length === 0) {
    const year = new Date(millis).getUTCFullYear();
    const own = defaultTermStartOfYear(year);
    return own <= millis ? own : defaultTermStartOfYear(year - 1);
  }
  const all = termStarts.map(utcMidnight);
  const onOrBefore = all.filter((at) => at <= millis);
  return onOrBefore.length > 0 ? Math.max(...onOrBefore) : Math.min(...all);
}

/**
 * "Week 1 (odd) is the week containing the term start, or the following week when the term start is a
 * Saturday or Sunday; weeks before it count back (0 even, -1 odd, …)." Walks week by week from week 1.
 */
export function weekNumberOf(millis: number, termStarts: readonly string[]): number {
  const termStart = termStartInForce(millis, termStarts);
  let monday = mondayOf(termStart);
  if (weekdayOf(termStart) === 6 || weekdayOf(termStart) === 7) monday += 7 * DAY;
  const target = mondayOf(millis);
  let week = 1;
  const step = target >= monday ? 1 : -1;
  while (monday !== target) {
    monday += step * 7 * DAY;
    week += step;
  }
  return week;
}

/** Odd weeks: 1, 3, …, and -1, -3, … before week 1. */
export function isOddWeek(millis: number, termStarts: readonly string[]): boolean {
  return Math.abs(weekNumberOf(millis, termStarts)) % 2 === 1;
}

/**
 * "Entries' start dates grouped into half-years (January–June, July–December); a half-year's term start is
 * the start date shared by the most entries (the earliest of equals)." Read literally: every half-year, every
 * date of it, counted again from the list.
 */
export function bruteForceTermStarts(startDates: readonly string[]): string[] {
  const halves = [...new Set(startDates.map((date) => `${date.slice(0, 4)}H${Number(date.slice(5, 7)) < 7 ? 1 : 2}`))];
  const chosen: string[] = [];
  for (const half of halves) {
    const inHalf = startDates.filter((date) => `${date.slice(0, 4)}H${Number(date.slice(5, 7)) < 7 ? 1 : 2}` === half);
    const candidates = [...new Set(inHalf)].sort();
    let best = candidates[0] as string;
    for (const date of candidates)
      if (inHalf.filter((d) => d === date).length > inHalf.filter((d) => d === best).length) best = date;
    chosen.push(best);
  }
  return chosen.sort();
}

/** The rule's inputs. */
export interface RuleEntry {
  startDate: string;
  finishDate: string;
  weekday: number;
  weekType: number;
}

/** Every date d with start ≤ d ≤ finish, weekday(d) = day_week, parity matching, not a holiday. */
export function bruteForceDates(
  entry: RuleEntry,
  termStarts: readonly string[],
  holidays: ReadonlySet<string>,
  window: { from?: string; to?: string } = {},
): string[] {
  const dates: string[] = [];
  for (let day = utcMidnight(entry.startDate); day <= utcMidnight(entry.finishDate); day += DAY) {
    const iso = isoOf(day);
    if (window.from !== undefined && iso < window.from) continue;
    if (window.to !== undefined && iso > window.to) continue;
    if (weekdayOf(day) !== entry.weekday) continue;
    if (entry.weekType === 1 && !isOddWeek(day, termStarts)) continue;
    if (entry.weekType === 2 && isOddWeek(day, termStarts)) continue;
    if (holidays.has(iso)) continue;
    dates.push(iso);
  }
  return dates;
}
