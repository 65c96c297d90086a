/** Wire date formats the simulator can send. */
export type DateFormat = 'DD.MM.YY' | 'DD.MM.YYYY' | 'YYYY-MM-DD';

/** The semester a reference date falls in; dates are ISO `YYYY-MM-DD`. */
export interface Semester {
  season: 'autumn' | 'spring';
  /** The calendar year the academic year starts in (2025 for 2025/26); used as the entries' `year`. */
  academicYear: number;
  start: string;
  finish: string;
  /** Last day of the first half (a Sunday). */
  firstHalfEnd: string;
  /** First day of the second half (the Monday after `firstHalfEnd`). */
  secondHalfStart: string;
}

const DAY_MS = 86_400_000;

/** ISO date of a UTC calendar day. */
export function isoDate(year: number, month: number, day: number): string {
  return new Date(Date.UTC(year, month - 1, day)).toISOString().slice(0, 10);
}

/** Adds whole days to an ISO date. */
export function addDays(iso: string, days: number): string {
  return new Date(Date.parse(`${iso}T00:00:00Z`) + days * DAY_MS).toISOString().slice(0, 10);
}

/** ISO weekday of an ISO date: 1 = Monday … 7 = Sunday. */
export function isoWeekday(iso: string): number {
  const day = new Date(`${iso}T00:00:00Z`).getUTCDay();
  return day === 0 ? 7 : day;
}

/**
 * The semester containing `reference` (read in UTC so the machine's zone cannot shift it): September–January is
 * the autumn semester (1 September … 28 December), February–August the spring semester (second Monday of
 * February … 31 May).
 */
export function semesterFor(reference: Date): Semester {
  const month = reference.getUTCMonth() + 1;
  const year = reference.getUTCFullYear();
  if (month >= 9 || month === 1) {
    const academicYear = month === 1 ? year - 1 : year;
    return withHalves('autumn', academicYear, isoDate(academicYear, 9, 1), isoDate(academicYear, 12, 28));
  }
  const firstOfFeb = isoDate(year, 2, 1);
  const firstMonday = addDays(firstOfFeb, (8 - isoWeekday(firstOfFeb)) % 7);
  return withHalves('spring', year - 1, addDays(firstMonday, 7), isoDate(year, 5, 31));
}

function withHalves(season: Semester['season'], academicYear: number, start: string, finish: string): Semester {
  const days = Math.round((Date.parse(finish) - Date.parse(start)) / DAY_MS);
  const middle = addDays(start, Math.floor(days / 2));
  const firstHalfEnd = addDays(middle, (7 - isoWeekday(middle)) % 7);
  return { season, academicYear, start, finish, firstHalfEnd, secondHalfStart: addDays(firstHalfEnd, 1) };
}

/** Formats an ISO date for the wire. */
export function formatDate(iso: string, format: DateFormat): string {
  if (format === 'YYYY-MM-DD') return iso;
  const year = format === 'DD.MM.YYYY' ? iso.slice(0, 4) : iso.slice(2, 4);
  return `${iso.slice(8, 10)}.${iso.slice(5, 7)}.${year}`;
}

/** Parses a real calendar date in any wire format (DD.MM.YY is year 20YY) to ISO; undefined otherwise. */
export function parseWireDate(text: string): string | undefined {
  const dotted = /^(\d{2})\.(\d{2})\.(\d{2}|\d{4})$/.exec(text);
  const century = dotted?.[3]?.length === 2 ? '20' : '';
  const iso = dotted ? `${century}${dotted[3]}-${dotted[2]}-${dotted[1]}` : text;
  const parts = /^(\d{4})-(\d{2})-(\d{2})$/.exec(iso);
  if (!parts) return undefined;
  const [year, month, day] = [Number(parts[1]), Number(parts[2]), Number(parts[3])];
  return isoDate(year, month, day) === iso ? iso : undefined;
}
