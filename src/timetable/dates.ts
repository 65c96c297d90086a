/**
 * Calendar dates as day numbers: whole days since 1970-01-01 (a Thursday), independent of any time zone.
 * Integer arithmetic keeps expansion fast and free of DST surprises; zones only matter for wall-clock times.
 */
export type DayNumber = number;

const MS_PER_DAY = 86_400_000;

/** Day number of an ISO date `YYYY-MM-DD` (assumed valid). */
export function dayNumber(isoDate: string): DayNumber {
  const year = Number(isoDate.slice(0, 4));
  const month = Number(isoDate.slice(5, 7));
  const day = Number(isoDate.slice(8, 10));
  return Date.UTC(year, month - 1, day) / MS_PER_DAY;
}

/** Day number of a calendar date given by its parts (month 1–12). */
export function dayNumberOf(year: number, month: number, day: number): DayNumber {
  return Date.UTC(year, month - 1, day) / MS_PER_DAY;
}

const isoDates = new Map<DayNumber, string>();
const MAX_MEMOISED_DATES = 100_000;

/** The ISO date `YYYY-MM-DD` of a day number (memoised: expansion asks for the same days again and again). */
export function isoDate(day: DayNumber): string {
  let text = isoDates.get(day);
  if (text === undefined) {
    if (isoDates.size >= MAX_MEMOISED_DATES) isoDates.clear();
    text = new Date(day * MS_PER_DAY).toISOString().slice(0, 10);
    isoDates.set(day, text);
  }
  return text;
}

/** The calendar parts of a day number. */
export function dateParts(day: DayNumber): { year: number; month: number; day: number } {
  const date = new Date(day * MS_PER_DAY);
  return { year: date.getUTCFullYear(), month: date.getUTCMonth() + 1, day: date.getUTCDate() };
}

/** ISO weekday: 1 = Monday … 7 = Sunday. */
export function isoWeekday(day: DayNumber): number {
  // 1970-01-01 was a Thursday (ISO 4).
  return ((((day + 3) % 7) + 7) % 7) + 1;
}

/** Day number of the Monday that starts the week containing `day`. */
export function mondayOf(day: DayNumber): DayNumber {
  return day - isoWeekday(day) + 1;
}

/** The first day ≥ `day` that falls on ISO weekday `weekday`. */
export function nextWeekday(day: DayNumber, weekday: number): DayNumber {
  return day + ((weekday - isoWeekday(day) + 7) % 7);
}
