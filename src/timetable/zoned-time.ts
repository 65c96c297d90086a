import { DateTime } from 'luxon';

const MAX_CACHED = 200_000;

/**
 * Wall-clock times of one IANA zone as zoned values, memoised: a timetable repeats the same few dates and
 * time slots thousands of times, and zone arithmetic is the expensive part of expansion. A local time that
 * does not exist (inside a DST gap) moves forward by the gap, as calendar apps do.
 */
export class ZonedTimes {
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

  /** Epoch milliseconds of a local ISO date and `HH:MM` time. */
  millis(date: string, time: string): number {
    return this.at(date, time).toMillis();
  }
}
