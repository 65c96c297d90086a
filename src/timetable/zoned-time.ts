import { DateTime } from 'luxon';

const MAX_CACHED = 200_000;

/**
 * Wall-clock times of one IANA zone as zoned values, memoised: a timetable repeats the same few dates and
 * time slots thousands of times, and zone arithmetic is the expensive part of expansion. A local time that
 * does not exist (inside a DST gap) moves forward by the gap, as calendar apps do.
 */
export class ZonedTimes {
  private static readonly byZone = new Map<string, ZonedTimes>();

  /**
   * The process's memo of a zone. A memo of a pure function is invisible to callers, and sharing it is what
   * makes expansion cheap: building one luxon value costs about 10 µs, a lookup well under 0.1 µs.
   */
  static shared(timezone: string): ZonedTimes {
    let times = ZonedTimes.byZone.get(timezone);
    if (times === undefined) {
      times = new ZonedTimes(timezone);
      ZonedTimes.byZone.set(timezone, times);
    }
    return times;
  }

  readonly timezone: string;
  // Keyed by date, then time: both strings are reused from the entries, so no key string is built per call.
  private readonly cache = new Map<string, Map<string, DateTime>>();
  private size = 0;

  constructor(timezone: string) {
    this.timezone = timezone;
  }

  /** The zoned date-time of a local ISO date and `HH:MM` time. */
  at(date: string, time: string): DateTime {
    let times = this.cache.get(date);
    if (times === undefined) {
      if (this.size >= MAX_CACHED) this.clear();
      times = new Map();
      this.cache.set(date, times);
    }
    let value = times.get(time);
    if (value === undefined) {
      value = DateTime.fromISO(`${date}T${time}`, { zone: this.timezone });
      if (!value.isValid) throw new RangeError(`not a valid time in ${this.timezone}: ${date}T${time}`);
      times.set(time, value);
      this.size += 1;
    }
    return value;
  }

  private clear(): void {
    this.cache.clear();
    this.size = 0;
  }

  /**
   * Start and end of a class on a local date. When the start falls into a DST gap and moves forward past
   * the end (02:30–03:15 on a spring-forward night becomes 03:30–03:15), the class keeps its length from
   * the moved start instead of ending before it begins.
   */
  span(date: string, beginTime: string, endTime: string): [DateTime, DateTime] {
    const start = this.at(date, beginTime);
    const end = this.at(date, endTime);
    if (end > start) return [start, end];
    const minutes = (clock: string) => Number(clock.slice(0, 2)) * 60 + Number(clock.slice(3, 5));
    return [start, start.plus({ minutes: minutes(endTime) - minutes(beginTime) })];
  }
}

/** The calendar date (`YYYY-MM-DD`) of the instant `epochMs` in `timezone`. */
export function localDate(epochMs: number, timezone: string): string {
  return DateTime.fromMillis(epochMs, { zone: timezone }).toISODate() ?? new Date(epochMs).toISOString().slice(0, 10);
}
