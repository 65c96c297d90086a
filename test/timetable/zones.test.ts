import ICAL from 'ical.js';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { renderIcs } from '../../src/feeds/render-ics.ts';
import { expand } from '../../src/timetable/expand.ts';
import { canonicalTimeZone, vtimezone } from '../../src/timetable/vtimezone.ts';
import { entry } from './fixtures.ts';

/**
 * Zones whose rules changed recently or are easy to get wrong: Volgograd back to UTC+3 (2020), Almaty to
 * UTC+5 (2024), Kyiv renamed, Etc/GMT-3 (UTC+3, the sign is inverted by design), Cairo's DST since 2023.
 */
const ZONES = [
  'Europe/Moscow',
  'Europe/Berlin',
  'America/New_York',
  'Europe/Volgograd',
  'Asia/Almaty',
  'Europe/Kyiv',
  'Etc/GMT-3',
  'Africa/Cairo',
  'Asia/Kolkata',
  'Australia/Lord_Howe',
  'Etc/UTC',
];

describe('time zones in feeds', () => {
  it.each(ZONES)('%s: every event read back by ical.js is at the instant the engine computed', (zone) => {
    // Every Sunday of a year at 10:10, so that each DST switch of the year is crossed.
    const { occurrences } = expand([entry({ weekday: 7, startDate: '2025-01-01', finishDate: '2025-12-31' })], {
      timezone: zone,
    });
    const calendar = new ICAL.Component(
      ICAL.parse(renderIcs(occurrences, { name: zone, timezone: zone, refreshIntervalMs: 3_600_000, stamp: 0 })),
    );
    const zones = calendar.getAllSubcomponents('vtimezone');
    expect(zones.map((z) => z.getFirstPropertyValue('tzid'))).toEqual([zone]);
    for (const vtz of zones) ICAL.TimezoneService.register(vtz);
    const read = calendar
      .getAllSubcomponents('vevent')
      .map((vevent) => new ICAL.Event(vevent).startDate.toJSDate().getTime());
    expect(read).toEqual(occurrences.map((occurrence) => occurrence.startUtc));
  });

  it('canonicalises TIMEZONE so that the TZID always has a VTIMEZONE of the same name', () => {
    expect(canonicalTimeZone('europe/moscow')).toBe('Europe/Moscow');
    expect(canonicalTimeZone('US/Eastern')).toBe('America/New_York');
    expect(canonicalTimeZone('UTC')).toBe('Etc/UTC');
    expect(canonicalTimeZone('Mars/Olympus')).toBeUndefined();
    expect(loadConfig({ TIMEZONE: 'europe/berlin' }).timezone).toBe('Europe/Berlin');
    expect(() => vtimezone('US/Eastern')).toThrow(/canonical IANA name/);
  });
});
