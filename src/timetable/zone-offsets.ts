/**
 * UTC offsets of IANA zones as tables of transitions, one table per zone and year, built once from `Intl`.
 * Converting a wall-clock time to an instant is then arithmetic and a short scan instead of one luxon value
 * per occurrence (which asks `Intl` two or three times each).
 */

const MS_PER_MINUTE = 60_000;
const MS_PER_DAY = 86_400_000;
/**
 * Offsets are probed this far apart and bisected where two probes differ. Two transitions closer than this
 * that return to the same offset would be missed. None does in 1970–2037: tables of every zone `Intl` knows
 * (418, ICU of Node 24.21) agreed with `Intl` at every 6 hours of those years when this was written; the
 * shortest DST suspensions (Ramadan in Egypt and Morocco) last about a month.
 */
const PROBE_STEP_MS = 7 * MS_PER_DAY;
/** A year's table reaches this far into the neighbouring years: any offset (at most ±26 h) stays inside it. */
const MARGIN_MS = 2 * MS_PER_DAY;
/** Zone-years kept: a process serves one or a few zones, over a semester or two. */
const MAX_TABLES = 64;

/** The offsets of a zone over one year and its margins: `offsets[i]` is in force from `starts[i]` to `starts[i + 1]`. */
interface YearTable {
  readonly from: number;
  readonly until: number;
  readonly starts: readonly number[];
  readonly offsets: readonly number[];
}

const tables = new Map<string, YearTable>();

/** Offsets of one zone. Instances are cheap; the tables behind them are shared by the whole process. */
export class ZoneOffsets {
  readonly timezone: string;
  private readonly format: Intl.DateTimeFormat;
  // The table used last: consecutive conversions almost always fall into the same year.
  private last: YearTable | undefined;

  /** Throws a RangeError for a zone `Intl` does not know. */
  constructor(timezone: string) {
    this.timezone = timezone;
    // Only the year beside the offset: the fewer fields, the cheaper the formatter is to build and to use.
    this.format = new Intl.DateTimeFormat('en-US', { timeZone: timezone, year: 'numeric', timeZoneName: 'longOffset' });
  }

  /** Forgets every table, as a fresh process would start (used by the benchmark's cold measurement). */
  static clearTables(): void {
    tables.clear();
  }

  /** Offset (ms to add to UTC) of the zone at the instant `epochMs`. */
  offsetAt(epochMs: number): number {
    const { starts, offsets } = this.tableFor(epochMs);
    let index = starts.length - 1;
    while ((starts[index] as number) > epochMs) index -= 1;
    return offsets[index] as number;
  }

  /**
   * The instant of a wall-clock time, given as the epoch ms its fields would have in UTC. A time that does
   * not exist (a gap, clocks moved forward) is read with the offset before the gap, so it lands as far past the
   * gap's end as it was past its start: 02:30 becomes 03:30 summer time. A time that exists twice (clocks moved
   * back) is the later instant, the one with the offset after the change.
   */
  toEpoch(localMs: number): number {
    const { starts, offsets } = this.tableFor(localMs);
    let instant = Number.NaN;
    for (let index = 0; index < starts.length; index += 1) {
      const candidate = localMs - (offsets[index] as number);
      const end = index + 1 < starts.length ? (starts[index + 1] as number) : Number.POSITIVE_INFINITY;
      if (candidate >= (starts[index] as number) && candidate < end) instant = candidate;
      else if (candidate >= end && localMs - (offsets[index + 1] as number) < end) return candidate;
    }
    return instant;
  }

  private tableFor(epochMs: number): YearTable {
    const last = this.last;
    if (last !== undefined && epochMs >= last.from + MARGIN_MS && epochMs < last.until - MARGIN_MS) return last;
    const year = new Date(epochMs).getUTCFullYear();
    const key = `${this.timezone} ${year}`;
    let table = tables.get(key);
    if (table === undefined) {
      if (tables.size >= MAX_TABLES) tables.delete(tables.keys().next().value as string);
      table = this.build(year);
    } else tables.delete(key);
    // Last used goes last: the map's first key is the least recently used, the one evicted.
    tables.set(key, table);
    this.last = table;
    return table;
  }

  private build(year: number): YearTable {
    const from = new Date(0).setUTCFullYear(year, 0, 1) - MARGIN_MS;
    const until = new Date(0).setUTCFullYear(year + 1, 0, 1) + MARGIN_MS;
    const starts = [Number.NEGATIVE_INFINITY];
    const offsets = [this.probe(from)];
    let at = from;
    while (at < until) {
      const next = Math.min(at + PROBE_STEP_MS, until);
      // Several transitions may lie between two probes: find the first, then look again from it.
      while (this.probe(next) !== (offsets[offsets.length - 1] as number)) {
        at = this.firstChange(at, next, offsets[offsets.length - 1] as number);
        starts.push(at);
        offsets.push(this.probe(at));
      }
      at = next;
    }
    return { from, until, starts, offsets };
  }

  /** The first whole second in (`before`, `after`] whose offset is not `offset`, which `before` has. */
  private firstChange(before: number, after: number, offset: number): number {
    let low = before;
    let high = after;
    // Transitions fall on whole minutes, except in old local mean times: bisect minutes, then seconds.
    for (const unit of [MS_PER_MINUTE, 1000]) {
      if (unit === 1000 && this.probe(high - unit) === offset) break;
      while (high - low > unit) {
        const middle = low + Math.max(1, Math.floor((high - low) / 2 / unit)) * unit;
        if (this.probe(middle) === offset) low = middle;
        else high = middle;
      }
    }
    return high;
  }

  /** The zone's offset at an instant, as `Intl` writes it (`2025, GMT+05:45`, `GMT-03:30`, `GMT+02:30:17`, `GMT`). */
  private probe(epochMs: number): number {
    const text = this.format.format(epochMs);
    const gmt = text.lastIndexOf('GMT');
    if (gmt === -1 || gmt + 3 === text.length) return 0;
    const sign = text.charCodeAt(gmt + 3) === 45 ? -1 : 1;
    const hours = Number(text.slice(gmt + 4, gmt + 6));
    const minutes = Number(text.slice(gmt + 7, gmt + 9));
    const seconds = text.length > gmt + 9 ? Number(text.slice(gmt + 10, gmt + 12)) : 0;
    return sign * ((hours * 60 + minutes) * MS_PER_MINUTE + seconds * 1000);
  }
}
