/**
 * Whether a timetable has a class today or tomorrow (local dates): a hint that weighs a source's refreshes, read
 * from the entries alone, without expanding them. It ignores week parity and holidays, so it may say "soon" on a
 * day without classes, never the other way round: a hint that errs towards refreshing.
 */
import { dayNumber, isoWeekday } from './dates.ts';
import type { TimetableEntry } from './types.ts';
import { localDate } from './zoned-time.ts';

const DAY_MS = 86_400_000;

/** Whether an entry of `entries` may have a class on local date `date` (ISO). */
export function mayHaveClassOn(entries: readonly TimetableEntry[], date: string): boolean {
  const weekday = isoWeekday(dayNumber(date));
  return entries.some((entry) => entry.weekday === weekday && entry.startDate <= date && date <= entry.finishDate);
}

/** Whether `entries` may have a class today or tomorrow in `timezone`, at `now`. */
export function mayHaveClassSoon(entries: readonly TimetableEntry[], now: number, timezone: string): boolean {
  return (
    mayHaveClassOn(entries, localDate(now, timezone)) || mayHaveClassOn(entries, localDate(now + DAY_MS, timezone))
  );
}
