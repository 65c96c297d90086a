import fc from 'fast-check';
import { IANAZone } from 'luxon';
import { describe, expect, it } from 'vitest';
import { ZoneOffsets } from '../../src/timetable/zone-offsets.ts';
import { ZonedTimes } from '../../src/timetable/zoned-time.ts';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/**
 * Moscow's history (local mean time with seconds, double summer time, 2011–2014 at UTC+4), a 30-minute DST
 * (Lord Howe), +5:45 (Kathmandu), the southern hemisphere, a dropped DST (São Paulo since 2019), Ramadan
 * suspensions (Casablanca, Cairo), a skipped day (Apia, 2011), −3:30 with DST (St John's), and no DST at all.
 */
const ZONES = [
  'Europe/Moscow',
  'Europe/Berlin',
  'America/New_York',
  'Australia/Lord_Howe',
  'Asia/Kathmandu',
  'America/Sao_Paulo',
  'Africa/Casablanca',
  'Africa/Cairo',
  'Pacific/Apia',
  'America/St_Johns',
  'Asia/Kolkata',
  'Etc/UTC',
] as const;
/**
 * Years of Moscow's reforms (1916–1922 with local mean time and double summer time, 1930, 1981, 1991–1992,
 * 2011 and 2014), Apia's skipped day (2011), São Paulo's last DST (2019), and the years timetables use.
 */
const YEARS = [1916, 1917, 1918, 1919, 1920, 1921, 1922, 1930, 1981, 1991, 1992, 2010, 2011, 2014, 2019].concat(
  Array.from({ length: 8 }, (_, index) => 2023 + index),
);

/** luxon's offset (ms) at an instant: `Intl` asked directly, with none of the table's probing or bisecting. */
const luxonOffset = (zone: string, epochMs: number) => Math.round(IANAZone.create(zone).offset(epochMs) * MINUTE);

/**
 * The transitions of a zone-year by luxon: midnights a day apart, then bisection to the millisecond. A day
 * step (not the table's week) so that the reference does not share the table's blind spot.
 */
const transitionsByYear = new Map<string, number[]>();
function luxonTransitions(zone: string, year: number): number[] {
  const key = `${zone} ${year}`;
  let found = transitionsByYear.get(key);
  if (found !== undefined) return found;
  found = [];
  let offset = luxonOffset(zone, Date.UTC(year, 0, 1));
  for (let day = Date.UTC(year, 0, 1); day < Date.UTC(year + 1, 0, 1); day += DAY) {
    const next = luxonOffset(zone, day + DAY);
    if (next === offset) continue;
    let [low, high] = [day, day + DAY];
    while (high - low > 1) {
      const middle = Math.floor((low + high) / 2);
      if (luxonOffset(zone, middle) === offset) low = middle;
      else high = middle;
    }
    found.push(high);
    offset = next;
  }
  transitionsByYear.set(key, found);
  return found;
}

/**
 * The instant of a wall-clock time by luxon's offsets, under the engine's rules: of the offsets in force within
 * a day, those that map the instant back to the wall time; the later instant when two do; with none (a gap),
 * the smaller offset, as luxon reads a gap. Not luxon's own conversion: it starts from the offset in force when
 * the process started, so it picks an overlap's instant by season and misreads times near transitions in zones
 * whose offset has since moved far (Apia in 2010, Lord Howe in 1981).
 */
function referenceInstant(zone: string, local: number): number {
  const around = new Set<number>();
  for (let at = local - 27 * HOUR; at <= local + 27 * HOUR; at += HOUR) around.add(luxonOffset(zone, at));
  const valid = [...around].filter((offset) => luxonOffset(zone, local - offset) === offset);
  return valid.length > 0 ? local - Math.min(...valid) : local - Math.min(...around);
}

/** A zone-year and an instant near one of its transitions (or anywhere in the year when it has none). */
const nearTransition = fc
  .record({
    zone: fc.constantFrom(...ZONES),
    year: fc.constantFrom(...YEARS),
    pick: fc.nat(),
    // Mostly within a minute of the switch (where an off-by-a-second table errs), otherwise within 3 hours.
    delta: fc.oneof(fc.integer({ min: -MINUTE, max: MINUTE }), fc.integer({ min: -3 * HOUR, max: 3 * HOUR })),
    anywhere: fc.integer({ min: 0, max: 365 * DAY }),
  })
  .map(({ zone, year, pick, delta, anywhere }) => {
    const transitions = luxonTransitions(zone, year);
    const base =
      transitions.length === 0 ? Date.UTC(year, 0, 1) + anywhere : (transitions[pick % transitions.length] as number);
    return { zone, instant: base + delta };
  });

describe('zone offset tables agree with luxon', () => {
  it('on the offset at an instant, near every kind of transition, 1916–2030, selected years', () => {
    fc.assert(
      fc.property(nearTransition, ({ zone, instant }) => {
        expect(new ZoneOffsets(zone).offsetAt(instant)).toBe(luxonOffset(zone, instant));
      }),
      { numRuns: 500 },
    );
  });

  it('on the instant of a wall-clock time, in gaps and overlaps included', () => {
    fc.assert(
      fc.property(nearTransition, ({ zone, instant }) => {
        // The wall clock around the switch, to the minute: before it, inside a gap or overlap, after it.
        const local = Math.floor((instant + luxonOffset(zone, instant)) / MINUTE) * MINUTE;
        const text = new Date(local).toISOString();
        expect(new ZonedTimes(zone).instant(text.slice(0, 10), text.slice(11, 16))).toBe(referenceInstant(zone, local));
      }),
      { numRuns: 500 },
    );
  });
});

describe('wall-clock times', () => {
  it('reject dates and times that do not exist, and keep years below 100', () => {
    const times = new ZonedTimes('Europe/Berlin');
    for (const [date, time] of [
      ['2025-02-29', '10:00'],
      ['2025-13-01', '10:00'],
      ['2025-00-15', '10:00'],
      ['2025-03-30', '24:01'],
      ['2025-03-30', '10:60'],
      ['2025-3-30', '10:00'],
      ['2025-03-30', '1000'],
    ] as const)
      expect(() => times.instant(date, time), `${date}T${time}`).toThrow(RangeError);
    expect(times.instant('2024-02-29', '24:00')).toBe(Date.UTC(2024, 2, 1) - HOUR);
    // Years below 100 are not 1900 + year (Berlin's local mean time then: +0:53:28).
    expect(times.instant('0025-06-01', '12:00')).toBe(new Date(0).setUTCFullYear(25, 5, 1) + 12 * HOUR - 3_208_000);
  });

  it('do not depend on the tables built before: a cleared cache gives the same instants', () => {
    const before = new ZonedTimes('Australia/Lord_Howe').instant('2025-04-06', '01:45');
    ZoneOffsets.clearTables();
    expect(new ZonedTimes('Australia/Lord_Howe').instant('2025-04-06', '01:45')).toBe(before);
    // 01:45 exists twice on 2025-04-06 (clocks go back from 02:00 to 01:30): the later one, at +10:30.
    expect(before).toBe(Date.UTC(2025, 3, 5, 15, 15));
  });
});
