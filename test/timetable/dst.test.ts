import ICAL from 'ical.js';
import { describe, expect, it } from 'vitest';
import { renderIcs } from '../../src/feeds/render-ics.ts';
import { expand } from '../../src/timetable/expand.ts';
import type { Occurrence } from '../../src/timetable/types.ts';
import { ZonedTimes } from '../../src/timetable/zoned-time.ts';
import { entry } from './fixtures.ts';

const utc = (text: string) => Date.parse(text);

/** Sunday classes (weekday 7) over a span, at a wall-clock time, in a zone. */
function sundays(
  timezone: string,
  startDate: string,
  finishDate: string,
  beginTime = '10:10',
  endTime = '11:40',
): Occurrence[] {
  return expand([entry({ weekday: 7, startDate, finishDate, beginTime, endTime })], { timezone }).occurrences;
}

function startsUtc(occurrences: readonly Occurrence[]): [string, string, string][] {
  return occurrences.map((o) => [o.date, o.beginTime, new Date(o.startUtc).toISOString()]);
}

/** What an independent reader (ical.js, using our VTIMEZONE) makes of the rendered feed: UTC starts and ends. */
function readBack(occurrences: readonly Occurrence[], timezone: string): [string, string, string][] {
  const ics = renderIcs(occurrences, { name: 'DST', timezone, refreshIntervalMs: 3_600_000, stamp: 0 });
  const calendar = new ICAL.Component(ICAL.parse(ics));
  for (const zone of calendar.getAllSubcomponents('vtimezone')) ICAL.TimezoneService.register(zone);
  return calendar.getAllSubcomponents('vevent').map((component) => {
    const event = new ICAL.Event(component);
    expect(event.startDate.zone?.tzid).toBe(timezone);
    return [
      event.uid,
      new Date(event.startDate.toUnixTime() * 1000).toISOString(),
      new Date(event.endDate.toUnixTime() * 1000).toISOString(),
    ];
  });
}

function expectReadBackAgrees(occurrences: readonly Occurrence[], timezone: string): void {
  expect(readBack(occurrences, timezone)).toEqual(
    occurrences.map((o) => [o.uid, new Date(o.startUtc).toISOString(), new Date(o.endUtc).toISOString()]),
  );
}

describe('DST: a 10:10 class keeps its wall-clock time while the UTC instant shifts', () => {
  it('Europe/Berlin, spring forward on 2025-03-30', () => {
    const occurrences = sundays('Europe/Berlin', '2025-03-23', '2025-04-06');
    expect(startsUtc(occurrences)).toEqual([
      ['2025-03-23', '10:10', '2025-03-23T09:10:00.000Z'],
      ['2025-03-30', '10:10', '2025-03-30T08:10:00.000Z'],
      ['2025-04-06', '10:10', '2025-04-06T08:10:00.000Z'],
    ]);
    expect(occurrences.map((o) => o.endUtc - o.startUtc)).toEqual([5_400_000, 5_400_000, 5_400_000]);
    expectReadBackAgrees(occurrences, 'Europe/Berlin');
  });

  it('Europe/Berlin, fall back on 2025-10-26', () => {
    const occurrences = sundays('Europe/Berlin', '2025-10-19', '2025-11-02');
    expect(startsUtc(occurrences)).toEqual([
      ['2025-10-19', '10:10', '2025-10-19T08:10:00.000Z'],
      ['2025-10-26', '10:10', '2025-10-26T09:10:00.000Z'],
      ['2025-11-02', '10:10', '2025-11-02T09:10:00.000Z'],
    ]);
    expectReadBackAgrees(occurrences, 'Europe/Berlin');
  });

  it('America/New_York, spring forward on 2025-03-09 and fall back on 2025-11-02', () => {
    expect(startsUtc(sundays('America/New_York', '2025-03-02', '2025-03-09'))).toEqual([
      ['2025-03-02', '10:10', '2025-03-02T15:10:00.000Z'],
      ['2025-03-09', '10:10', '2025-03-09T14:10:00.000Z'],
    ]);
    const autumn = sundays('America/New_York', '2025-10-26', '2025-11-02');
    expect(startsUtc(autumn)).toEqual([
      ['2025-10-26', '10:10', '2025-10-26T14:10:00.000Z'],
      ['2025-11-02', '10:10', '2025-11-02T15:10:00.000Z'],
    ]);
    expectReadBackAgrees([...sundays('America/New_York', '2025-03-02', '2025-03-09'), ...autumn], 'America/New_York');
  });

  it('Europe/Moscow has no DST: 10:10 is 07:10 UTC all year', () => {
    const occurrences = expand([entry({ weekday: 7, startDate: '2025-01-05', finishDate: '2025-12-28' })], {
      timezone: 'Europe/Moscow',
    }).occurrences;
    expect(occurrences).toHaveLength(52);
    for (const o of occurrences) expect(new Date(o.startUtc).toISOString()).toBe(`${o.date}T07:10:00.000Z`);
    expectReadBackAgrees(occurrences.slice(10, 14), 'Europe/Moscow');
    expectReadBackAgrees(occurrences.slice(40, 44), 'Europe/Moscow');
  });
});

describe('DST: local times that do not exist, or exist twice', () => {
  it('02:30 on a spring-forward Sunday does not exist: it moves forward by the gap (03:30 summer time)', () => {
    const [berlin] = sundays('Europe/Berlin', '2025-03-30', '2025-03-30', '02:30', '04:00');
    expect(berlin).toMatchObject({
      beginTime: '02:30',
      endTime: '04:00',
      startUtc: utc('2025-03-30T01:30:00Z'),
      endUtc: utc('2025-03-30T02:00:00Z'),
    });
    const [newYork] = sundays('America/New_York', '2025-03-09', '2025-03-09', '02:30', '04:00');
    expect(newYork).toMatchObject({ startUtc: utc('2025-03-09T07:30:00Z'), endUtc: utc('2025-03-09T08:00:00Z') });
    const times = new ZonedTimes('Europe/Berlin');
    expect(times.at('2025-03-30', '02:30').toFormat('HH:mm ZZ')).toBe('03:30 +02:00');
    // RFC 5545 §3.3.5 reads a non-existent local time with the offset before the gap: the same instant.
    expectReadBackAgrees([berlin as Occurrence], 'Europe/Berlin');
  });

  it('02:30 on a fall-back Sunday exists twice: the engine takes the later (standard time) instant', () => {
    // The zone tables' rule (src/timetable/zone-offsets.ts): the later instant, whatever the season the
    // process started in; ical.js reads our feed the same way. RFC 5545 §3.3.5 would say the first
    // occurrence (00:30Z); no real timetable has classes in that hour.
    const [berlin] = sundays('Europe/Berlin', '2025-10-26', '2025-10-26', '02:30', '03:10');
    expect(berlin?.startUtc).toBe(utc('2025-10-26T01:30:00Z'));
    expectReadBackAgrees([berlin as Occurrence], 'Europe/Berlin');
  });

  it('rejects an unknown zone', () => {
    expect(() => expand([entry()], { timezone: 'Mars/Olympus_Mons' })).toThrow(RangeError);
  });
});

describe('a class starting inside a DST gap', () => {
  it('keeps its length from the moved start instead of ending before it begins', () => {
    // 2025-03-30 02:30 does not exist in Berlin; the class moves to 03:30 and still lasts 45 minutes.
    const [gap] = expand(
      [entry({ weekday: 7, startDate: '2025-03-30', finishDate: '2025-03-30', beginTime: '02:30', endTime: '03:15' })],
      { timezone: 'Europe/Berlin' },
    ).occurrences;
    expect(gap?.startUtc).toBe(Date.UTC(2025, 2, 30, 1, 30));
    expect((gap?.endUtc ?? 0) - (gap?.startUtc ?? 0)).toBe(45 * 60_000);
    const ics = renderIcs(gap ? [gap] : [], {
      name: 'gap',
      timezone: 'Europe/Berlin',
      refreshIntervalMs: 3_600_000,
      stamp: 0,
    });
    expect(ics).toContain('DTSTART;TZID=Europe/Berlin:20250330T033000');
    expect(ics).toContain('DTEND;TZID=Europe/Berlin:20250330T041500');
  });
});
