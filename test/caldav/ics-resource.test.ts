import ICAL from 'ical.js';
import { describe, expect, it } from 'vitest';
import { ALARM_PROPERTY, HASH_PROPERTY, MARKER_PROPERTY } from '../../src/caldav/caldav-client.ts';
import { IcsNestingError, placedLines } from '../../src/caldav/ics-lines.ts';
import { desiredResources, parseResource, resourceIdFor } from '../../src/caldav/ics-resource.ts';
import { fieldsHash, ownedFields } from '../../src/push/desired-events.ts';
import { eventIdFor } from '../../src/push/event-id.ts';
import { occurrence, resourceOf, STAMP } from './ics-fixtures.ts';

/** The resource parsed by ical.js (a strict reader): its calendar, its one VEVENT. */
function parsed(ics: string) {
  const calendar = new ICAL.Component(ICAL.parse(ics));
  const events = calendar.getAllSubcomponents('vevent');
  expect(events).toHaveLength(1);
  return { calendar, event: events[0] as ICAL.Component };
}

describe('desiredResources', () => {
  it('writes one VEVENT with its VTIMEZONE, DTSTAMP, zoned times, texts, status, marker and digest', () => {
    const resource = resourceOf({ location: 'ауд. 101, корпус 2; этаж 3' });
    expect(resource.id).toBe(`tts-${eventIdFor('4711-2025-10-01')}`);
    expect(resource.uid).toBe('4711-2025-10-01');
    const { calendar, event } = parsed(resource.ics);
    const zones = calendar.getAllSubcomponents('vtimezone');
    expect(zones.map((zone) => zone.getFirstPropertyValue('tzid'))).toEqual(['Europe/Moscow']);
    expect(calendar.getFirstPropertyValue('version')).toBe('2.0');
    expect(calendar.getFirstPropertyValue('prodid')).toBeTruthy();
    expect(event.getFirstPropertyValue('uid')).toBe('4711-2025-10-01');
    expect(String(event.getFirstPropertyValue('dtstamp'))).toBe('2025-09-01T12:00:00Z');
    expect(event.getFirstPropertyValue('sequence')).toBe(2);
    const start = event.getFirstProperty('dtstart');
    expect(start?.getParameter('tzid')).toBe('Europe/Moscow');
    expect(String(start?.getFirstValue())).toBe('2025-10-01T09:00:00');
    expect(String(event.getFirstPropertyValue('dtend'))).toBe('2025-10-01T10:35:00');
    // The instant is right: 09:00 in Moscow is 06:00 UTC.
    const icalEvent = new ICAL.Event(event);
    icalEvent.startDate.zone = new ICAL.Timezone(zones[0] as ICAL.Component);
    expect(icalEvent.startDate.toUnixTime() * 1000).toBe(Date.UTC(2025, 9, 1, 6));
    expect(event.getFirstPropertyValue('summary')).toBe('Математика (лекция)');
    expect(event.getFirstPropertyValue('location')).toBe('ауд. 101, корпус 2; этаж 3');
    expect(event.getFirstPropertyValue('description')).toBe('Иванов И. И.');
    expect(event.getFirstPropertyValue('status')).toBe('CONFIRMED');
    expect(event.getFirstPropertyValue(MARKER_PROPERTY.toLowerCase())).toBe('group:4242');
    expect(event.getFirstPropertyValue(HASH_PROPERTY.toLowerCase())).toBe(resource.hash);
    expect(resource.hash).toMatch(/^[\w-]{22}$/);
  });

  it('ends every line with CRLF and folds lines longer than 75 octets', () => {
    const { ics } = resourceOf({ description: 'Очень длинное описание занятия '.repeat(10) });
    expect(ics.endsWith('END:VCALENDAR\r\n')).toBe(true);
    expect(ics.replace(/\r\n/g, '')).not.toMatch(/[\r\n]/);
    const lines = ics.split('\r\n');
    expect(lines.some((line) => line.startsWith(' '))).toBe(true);
    for (const line of lines) expect(Buffer.byteLength(line)).toBeLessThanOrEqual(75);
    expect(parsed(ics).event.getFirstPropertyValue('description')).toBe('Очень длинное описание занятия '.repeat(10));
  });

  it('prefixes a cancelled class as the Google push does, or leaves it out with an empty prefix', () => {
    const cancelled = occurrence({ status: 'CANCELLED' });
    const [prefixed] = desiredResources([cancelled], 'group:1', {
      cancelledPrefix: 'Отменено: ',
      timeZone: 'Europe/Moscow',
      stamp: STAMP,
    });
    const { event } = parsed(prefixed?.ics ?? '');
    expect(event.getFirstPropertyValue('summary')).toBe('Отменено: Математика (лекция)');
    expect(event.getFirstPropertyValue('status')).toBe('CANCELLED');
    expect(prefixed?.hash).not.toBe(resourceOf().hash);
    expect(desiredResources([cancelled], 'group:1', { cancelledPrefix: '', timeZone: 'Europe/Moscow' })).toEqual([]);
  });

  it('keeps the first occurrence of a UID seen twice, and gives each UID its own resource name', () => {
    const resources = desiredResources(
      [occurrence({ uid: 'a' }), occurrence({ uid: 'a', location: 'other' }), occurrence({ uid: 'b' })],
      'group:1',
      { cancelledPrefix: '', timeZone: 'Europe/Moscow', stamp: STAMP },
    );
    expect(resources.map((one) => one.id)).toEqual([resourceIdFor('a'), resourceIdFor('b')]);
    expect(parseResource(resources[0]?.ics ?? '').uid).toBe('a');
    expect(resources[0]?.ics).toContain('LOCATION:ауд. 101');
  });

  it('changes the digest with what we own only (time, title, room, description, alarm), not the stamp', () => {
    const base = resourceOf();
    expect(resourceOf({}, { stamp: STAMP + 1000 }).hash).toBe(base.hash);
    expect(resourceOf({ categories: ['семинар'], sequence: 7 }).hash).toBe(base.hash);
    for (const changed of [
      resourceOf({ location: 'ауд. 202' }),
      resourceOf({ beginTime: '09:10' }),
      resourceOf({ summary: 'Физика' }),
      resourceOf({ description: '' }),
      resourceOf({}, { alarmMinutes: 15 }),
    ])
      expect(changed.hash).not.toBe(base.hash);
  });

  it('adds a reminder when the source asks for one, but not to a cancelled class', () => {
    const { event } = parsed(resourceOf({}, { alarmMinutes: 15 }).ics);
    const alarms = event.getAllSubcomponents('valarm');
    expect(alarms).toHaveLength(1);
    expect(String(alarms[0]?.getFirstPropertyValue('trigger'))).toBe('-PT15M');
    expect(resourceOf({ status: 'CANCELLED' }, { alarmMinutes: 15 }).ics).not.toContain('VALARM');
    expect(alarms[0]?.getFirstPropertyValue(ALARM_PROPERTY.toLowerCase())).toBe('1');
  });

  it('keeps the digest of a resource without an alarm as it was before alarms were ours', () => {
    // Fixed: the digest resources were pushed with; a change would write every resource of every target again.
    expect(resourceOf().hash).toBe(fieldsHash(ownedFields(occurrence())));
    expect(resourceOf({ status: 'CANCELLED' }, { alarmMinutes: 15 }).hash).toBe(
      resourceOf({ status: 'CANCELLED' }).hash,
    );
  });
});

describe('parseResource', () => {
  it('reads UID, marker and digest of the VEVENT, unfolding and unescaping, not those of an alarm', () => {
    const resource = resourceOf({ uid: 'uid,with;specials' });
    expect(parseResource(resource.ics)).toEqual({
      uid: 'uid,with;specials',
      markerValue: 'group:4242',
      hash: resource.hash,
    });
    const folded = ['BEGIN:VCALENDAR', 'BEGIN:VEVENT', 'BEGIN:VALARM', 'UID:alarm', 'END:VALARM', 'UID:long', ' -uid']
      .concat(['X-TIMETABLE-SYNC-SOURCE:group:1', 'END:VEVENT', 'END:VCALENDAR'])
      .join('\n');
    expect(parseResource(folded)).toEqual({ uid: 'long-uid', markerValue: 'group:1' });
    expect(parseResource('BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n')).toEqual({});
  });
});

describe('placedLines on hostile calendar data', () => {
  it('refuses components nested deeper than 8 with a typed error, and keeps the lines of real data', () => {
    expect(() => placedLines('BEGIN:A\r\n'.repeat(20_000))).toThrow(IcsNestingError);
    expect(() => placedLines('BEGIN:A\r\n'.repeat(9))).toThrow(IcsNestingError);
    const eight = placedLines(`${'BEGIN:A\r\n'.repeat(8)}X:1\r\n${'END:A\r\n'.repeat(8)}`);
    expect(eight.find((line) => line.name === 'X')?.path).toHaveLength(8);
    const lines = placedLines(
      'BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUID:1\r\nBEGIN:VALARM\r\nEND:VALARM\r\nEND:VEVENT\r\n',
    );
    expect(lines.map((line) => line.path.join('/'))).toEqual([
      'VCALENDAR',
      'VCALENDAR/VEVENT',
      'VCALENDAR/VEVENT',
      'VCALENDAR/VEVENT/VALARM',
      'VCALENDAR/VEVENT/VALARM',
      'VCALENDAR/VEVENT',
    ]);
  });
});
