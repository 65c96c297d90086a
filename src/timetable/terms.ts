/**
 * Where term starts come from (docs/design.md, "Expansion semantics"): `WEEK_PARITY_ANCHORS` when set;
 * otherwise inferred from the timetables, one per half-year (January–June, July–December): the start date the
 * most entries share, the earliest of equals; with no data at all, 1 September of every year. Pure.
 */
import { type DayNumber, dateParts, dayNumber, isoDate, isoWeekday } from './dates.ts';
import { defaultTermStart, firstWeekMonday } from './parity.ts';
import type { TimetableEntry } from './types.ts';

/** Where a term start came from. */
export type TermStartSource = 'configured' | 'inferred' | 'default';

/** One term start in force, with its provenance. */
export interface TermStart {
  /** ISO date `YYYY-MM-DD`. */
  date: string;
  source: TermStartSource;
  /** Inferred ones: how many entries start on `date`, and how many start in its half-year at all. */
  entries?: number;
  halfYearEntries?: number;
}

/** How many entries start on each date (ISO date → entries). */
export type StartDateCounts = ReadonlyMap<string, number>;

/** Counts the entries of one timetable by start date; an id given twice counts once. */
export function countStartDates(entries: readonly Pick<TimetableEntry, 'id' | 'startDate'>[]): Map<string, number> {
  const seen = new Set<number>();
  const counts = new Map<string, number>();
  for (const entry of entries) {
    if (seen.has(entry.id)) continue;
    seen.add(entry.id);
    counts.set(entry.startDate, (counts.get(entry.startDate) ?? 0) + 1);
  }
  return counts;
}

/** The half-year of an ISO date: `2018-2` for July–December 2018, `2019-1` for January–June 2019. */
export function halfYearOf(date: string): string {
  return `${date.slice(0, 4)}-${Number(date.slice(5, 7)) <= 6 ? 1 : 2}`;
}

/** One inferred term start per half-year that has entries, in date order. */
export function inferTermStarts(counts: StartDateCounts): TermStart[] {
  const best = new Map<string, { date: string; entries: number; total: number }>();
  for (const [date, entries] of counts) {
    if (entries <= 0) continue;
    const half = halfYearOf(date);
    const current = best.get(half);
    if (current === undefined) {
      best.set(half, { date, entries, total: entries });
      continue;
    }
    current.total += entries;
    if (entries > current.entries || (entries === current.entries && date < current.date)) {
      current.date = date;
      current.entries = entries;
    }
  }
  return [...best.values()]
    .map(({ date, entries, total }): TermStart => ({ date, source: 'inferred', entries, halfYearEntries: total }))
    .sort((a, b) => (a.date < b.date ? -1 : a.date > b.date ? 1 : 0));
}

/**
 * The term starts in force: the configured list when it is not empty, otherwise those inferred from `counts`.
 * An empty answer means the default rule (1 September of every year).
 */
export function resolveTermStarts(configured: readonly string[], counts: StartDateCounts): TermStart[] {
  if (configured.length > 0)
    return [...new Set(configured)].sort().map((date): TermStart => ({ date, source: 'configured' }));
  return inferTermStarts(counts);
}

/** The dates of term starts, as expansion takes them. */
export function termStartDates(terms: readonly TermStart[]): string[] {
  return terms.map((term) => term.date);
}

/** The default term starts (1 September) of the years from `firstYear` to `lastYear`. */
export function defaultTermStarts(firstYear: number, lastYear: number): TermStart[] {
  const terms: TermStart[] = [];
  for (let year = firstYear; year <= lastYear; year += 1)
    terms.push({ date: isoDate(defaultTermStart(year)), source: 'default' });
  return terms;
}

/** The dates a term start governs and the weeks they make. */
export interface TermCoverage {
  /** Monday of week 1. */
  firstWeek: string;
  /** First and last date whose parity comes from this term start; `until` is absent for the last one. */
  from: string;
  until?: string;
  /** Weeks from week 1 to the week of `until` (absent with `until`). */
  weeks?: number;
}

/**
 * What each of `terms` (sorted) governs: from its date to the day before the next one. Dates before the
 * earliest count back from it; the last governs every later date, unless `end` (exclusive) closes it.
 */
export function termCoverage(terms: readonly TermStart[], end?: string): TermCoverage[] {
  return terms.map((term, index) => {
    const start = dayNumber(term.date);
    const next = terms[index + 1]?.date ?? end;
    const coverage: TermCoverage = { firstWeek: isoDate(firstWeekMonday(start)), from: term.date };
    if (next === undefined) return coverage;
    const last = dayNumber(next) - 1;
    coverage.until = isoDate(last);
    coverage.weeks = Math.max(0, Math.floor((last - firstWeekMonday(start)) / 7) + 1);
    return coverage;
  });
}

const WEEKDAYS = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];
const HALVES = { 1: 'January–June', 2: 'July–December' } as const;

function weekdayName(day: DayNumber): string {
  return WEEKDAYS[isoWeekday(day) - 1] as string;
}

/** Where a term start came from, in words: "inferred from 120 of 134 entries starting July–December 2018". */
export function describeSource(term: TermStart): string {
  if (term.source === 'configured') return 'configured in WEEK_PARITY_ANCHORS';
  if (term.source === 'default') return 'default (1 September; nothing configured or inferred)';
  const { year, month } = dateParts(dayNumber(term.date));
  const half = HALVES[month <= 6 ? 1 : 2];
  const of = term.halfYearEntries === undefined ? '' : ` of ${term.halfYearEntries}`;
  return `inferred from ${term.entries ?? 0}${of} entries starting ${half} ${year}`;
}

/** The default rule in words, for when no term start is configured or inferred. */
export const DEFAULT_RULE =
  'no term start configured or inferred: 1 September of every year (week 1 is its week, or the next when it is a Saturday or Sunday)';

/** One line per term start in force, or the default rule's line when there is none. */
export function describeTermStarts(terms: readonly TermStart[]): string[] {
  return terms.length === 0 ? [DEFAULT_RULE] : terms.map(describeTermStart);
}

/** One human-readable line about a term start: its date, where it came from, and where week 1 begins. */
export function describeTermStart(term: TermStart): string {
  const start = dayNumber(term.date);
  const monday = firstWeekMonday(start);
  return `term start ${term.date} (${weekdayName(start)}), ${describeSource(term)}: week 1 (odd) begins Monday ${isoDate(monday)}`;
}
