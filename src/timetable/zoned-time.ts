import { DateTime, FixedOffsetZone, IANAZone, Zone, type ZoneOffsetFormat, type ZoneOffsetOptions } from 'luxon';
import { ZoneOffsets } from './zone-offsets.ts';

const MAX_CACHED = 200_000;
const MS_PER_MINUTE = 60_000;
const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const CLOCK = /^(\d{2}):(\d{2})$/;

/**
 * An IANA zone for luxon whose offsets come from the zone's transition table instead of `Intl`. It is the
 * same zone as luxon's own of that name, so it says so (type `iana`, equal by name): ical-generator's
 * `setZone(TZID)` then keeps the value as it is instead of converting it again.
 */
class TableZone extends Zone {
  private readonly offsets: ZoneOffsets;

  constructor(offsets: ZoneOffsets) {
    super();
    this.offsets = offsets;
  }

  override get type(): string {
    return 'iana';
  }

  override get name(): string {
    return this.offsets.timezone;
  }

  override get isUniversal(): boolean {
    return false;
  }

  override offsetName(ts: number, options: ZoneOffsetOptions): string | null {
    return IANAZone.create(this.name).offsetName(ts, options);
  }

  override formatOffset(ts: number, format: ZoneOffsetFormat): string {
    return FixedOffsetZone.instance(this.offset(ts)).formatOffset(ts, format);
  }

  override offset(ts: number): number {
    return this.offsets.offsetAt(ts) / MS_PER_MINUTE;
  }

  override equals(other: Zone): boolean {
    return other.type === 'iana' && other.name === this.name;
  }

  override get isValid(): boolean {
    return true;
  }
}

/**
 * Wall-clock times of one IANA zone as instants, computed from the zone's table of transitions
 * ({@link ZoneOffsets}). A local time that does not exist (inside a DST gap) moves forward by the gap, as
 * calendar apps do; one that exists twice (clocks moved back) is the later instant.
 */
export class ZonedTimes {
  private static readonly byZone = new Map<string, ZonedTimes>();

  /**
   * The process's instance for a zone. Its memo of luxon values is invisible to callers, and sharing it keeps
   * rendering cheap: a lookup costs well under 0.1 µs, building a luxon value about 1 µs.
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
  private readonly offsets: ZoneOffsets;
  private readonly zone: TableZone;
  // Parsed dates and times: a timetable repeats the same few hundred of each.
  private readonly days = new Map<string, number>();
  private readonly clocks = new Map<string, number>();
  // Keyed by date, then time: both strings are reused from the entries, so no key string is built per call.
  private readonly cache = new Map<string, Map<string, DateTime>>();
  private size = 0;

  /** Throws a RangeError for a zone `Intl` does not know. */
  constructor(timezone: string) {
    this.timezone = timezone;
    this.offsets = new ZoneOffsets(timezone);
    this.zone = new TableZone(this.offsets);
  }

  /** Epoch milliseconds of a local ISO date and `HH:MM` time (`24:00` is the next midnight). */
  instant(date: string, time: string): number {
    let day = this.days.get(date);
    if (day === undefined) {
      if (this.days.size >= MAX_CACHED) this.days.clear();
      day = this.parseDate(date, time);
      this.days.set(date, day);
    }
    let clock = this.clocks.get(time);
    if (clock === undefined) {
      if (this.clocks.size >= MAX_CACHED) this.clocks.clear();
      clock = this.parseClock(date, time);
      this.clocks.set(time, clock);
    }
    return this.offsets.toEpoch(day + clock);
  }

  /** Milliseconds from 1970-01-01 to the date's midnight, as if the zone were UTC. */
  private parseDate(date: string, time: string): number {
    const match = ISO_DATE.exec(date);
    const [year, month, day] = [Number(match?.[1]), Number(match?.[2]), Number(match?.[3])];
    // setUTCFullYear, unlike Date.UTC, keeps years below 100 as they are. It rolls 2025-02-30 over into March:
    // a date that exists is one that does not roll. Month 00 rolls back a whole month and keeps the day, so
    // the month is checked on its own.
    const midnight = new Date(0).setUTCFullYear(year, month - 1, day);
    if (match === null || month < 1 || month > 12 || new Date(midnight).getUTCDate() !== day)
      throw this.invalid(date, time);
    return midnight;
  }

  private parseClock(date: string, time: string): number {
    const match = CLOCK.exec(time);
    const [hours, minutes] = [Number(match?.[1]), Number(match?.[2])];
    if (match === null || minutes > 59 || hours * 60 + minutes > 24 * 60) throw this.invalid(date, time);
    return (hours * 60 + minutes) * MS_PER_MINUTE;
  }

  private invalid(date: string, time: string): RangeError {
    return new RangeError(`not a valid time in ${this.timezone}: ${date}T${time}`);
  }

  /** Offset (ms to add to UTC) of the zone at the instant `epochMs`. */
  offsetAt(epochMs: number): number {
    return this.offsets.offsetAt(epochMs);
  }

  /** The zoned date-time of a local ISO date and `HH:MM` time, for luxon consumers (ical-generator). */
  at(date: string, time: string): DateTime {
    let times = this.cache.get(date);
    if (times === undefined) {
      if (this.size >= MAX_CACHED) this.clear();
      times = new Map();
      this.cache.set(date, times);
    }
    let value = times.get(time);
    if (value === undefined) {
      value = DateTime.fromMillis(this.instant(date, time), { zone: this.zone });
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
   * Start and end instants of a class on a local date. When the start falls into a DST gap and moves forward
   * past the end (02:30–03:15 on a spring-forward night becomes 03:30–03:15), the class keeps its length from
   * the moved start instead of ending before it begins.
   */
  spanUtc(date: string, beginTime: string, endTime: string): [number, number] {
    const start = this.instant(date, beginTime);
    const end = this.instant(date, endTime);
    if (end > start) return [start, end];
    return [start, start + (clockMinutes(endTime) - clockMinutes(beginTime)) * MS_PER_MINUTE];
  }

  /** {@link spanUtc} as zoned luxon values. */
  span(date: string, beginTime: string, endTime: string): [DateTime, DateTime] {
    const start = this.at(date, beginTime);
    const end = this.at(date, endTime);
    if (end > start) return [start, end];
    return [start, start.plus({ minutes: clockMinutes(endTime) - clockMinutes(beginTime) })];
  }
}

function clockMinutes(clock: string): number {
  return Number(clock.slice(0, 2)) * 60 + Number(clock.slice(3, 5));
}

/** The calendar date (`YYYY-MM-DD`) of the instant `epochMs` in `timezone`. */
export function localDate(epochMs: number, timezone: string): string {
  return DateTime.fromMillis(epochMs, { zone: timezone }).toISODate() ?? new Date(epochMs).toISOString().slice(0, 10);
}
