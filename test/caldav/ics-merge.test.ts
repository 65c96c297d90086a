import ICAL from 'ical.js';
import { describe, expect, it } from 'vitest';
import { ALARM_PROPERTY, HASH_PROPERTY, MARKER_PROPERTY } from '../../src/caldav/caldav-client.ts';
import { mergeOwned } from '../../src/caldav/ics-merge.ts';
import { parseResource } from '../../src/caldav/ics-resource.ts';
import { resourceOf } from './ics-fixtures.ts';

/** What a person's calendar app makes of our event: an alarm, a colour, categories, a note, a moved start. */
function editedByThem(ics: string): string {
  return ics
    .replace('SUMMARY:Математика (лекция)', 'SUMMARY:Матан!!')
    .replace('DTSTART;TZID=Europe/Moscow:20251001T090000', 'DTSTART;TZID=Europe/Moscow:20251001T080000')
    .replace(/SEQUENCE:\d+/, 'SEQUENCE:5')
    .replace(
      'END:VEVENT',
      [
        'COLOR:tomato',
        'CATEGORIES:Учёба,Важное',
        'COMMENT:взять калькулятор',
        'X-APPLE-TRAVEL-ADVISORY-BEHAVIOR:AUTOMATIC',
        'BEGIN:VALARM',
        'ACTION:DISPLAY',
        'TRIGGER:-PT30M',
        'DESCRIPTION:Скоро пара',
        'END:VALARM',
        'END:VEVENT',
      ].join('\r\n'),
    );
}

function eventOf(ics: string) {
  const calendar = new ICAL.Component(ICAL.parse(ics));
  const events = calendar.getAllSubcomponents('vevent');
  expect(events).toHaveLength(1);
  return { calendar, event: events[0] as ICAL.Component };
}

describe('mergeOwned', () => {
  const original = resourceOf();
  const theirs = editedByThem(original.ics);
  const ours = resourceOf({ location: 'ауд. 303', beginTime: '09:10', sequence: 3 });

  it('keeps their alarm, colour, categories and other properties', () => {
    const { event } = eventOf(mergeOwned(theirs, ours.ics));
    expect(event.getFirstPropertyValue('color')).toBe('tomato');
    expect(event.getFirstProperty('categories')?.getValues()).toEqual(['Учёба', 'Важное']);
    expect(event.getFirstPropertyValue('comment')).toBe('взять калькулятор');
    expect(event.getFirstPropertyValue('x-apple-travel-advisory-behavior')).toBe('AUTOMATIC');
    const alarms = event.getAllSubcomponents('valarm');
    expect(alarms).toHaveLength(1);
    expect(String(alarms[0]?.getFirstPropertyValue('trigger'))).toBe('-PT30M');
    expect(alarms[0]?.getFirstPropertyValue('description')).toBe('Скоро пара');
  });

  it('puts our time, title, room, description, status, marker and digest in place of theirs', () => {
    const merged = mergeOwned(theirs, ours.ics);
    const { calendar, event } = eventOf(merged);
    expect(String(event.getFirstPropertyValue('dtstart'))).toBe('2025-10-01T09:10:00');
    expect(event.getFirstProperty('dtstart')?.getParameter('tzid')).toBe('Europe/Moscow');
    expect(String(event.getFirstPropertyValue('dtend'))).toBe('2025-10-01T10:35:00');
    expect(event.getFirstPropertyValue('summary')).toBe('Математика (лекция)');
    expect(event.getFirstPropertyValue('location')).toBe('ауд. 303');
    expect(event.getFirstPropertyValue('description')).toBe('Иванов И. И.');
    expect(event.getFirstPropertyValue('status')).toBe('CONFIRMED');
    expect(event.getAllProperties('dtstart')).toHaveLength(1);
    expect(event.getAllProperties('summary')).toHaveLength(1);
    expect(event.getFirstPropertyValue('uid')).toBe('4711-2025-10-01');
    expect(calendar.getAllSubcomponents('vtimezone')).toHaveLength(1);
    expect(parseResource(merged)).toEqual({ uid: '4711-2025-10-01', markerValue: 'group:4242', hash: ours.hash });
    expect(merged.match(new RegExp(`^${MARKER_PROPERTY}:`, 'gm'))).toHaveLength(1);
    expect(merged.match(new RegExp(`^${HASH_PROPERTY}:`, 'gm'))).toHaveLength(1);
  });

  it('raises SEQUENCE above theirs (and never below ours), and takes our DTSTAMP', () => {
    expect(eventOf(mergeOwned(theirs, ours.ics)).event.getFirstPropertyValue('sequence')).toBe(6);
    const later = resourceOf({ sequence: 9 }, { stamp: Date.UTC(2025, 9, 5) });
    const { event } = eventOf(mergeOwned(theirs, later.ics));
    expect(event.getFirstPropertyValue('sequence')).toBe(9);
    expect(String(event.getFirstPropertyValue('dtstamp'))).toBe('2025-10-05T00:00:00Z');
  });

  it('drops what we own that ours leaves out (a room removed), and their DURATION for our DTEND', () => {
    const withDuration = theirs.replace(/^DTEND[^\r\n]*\r\n/m, 'DURATION:PT2H\r\n');
    const { event } = eventOf(mergeOwned(withDuration, resourceOf({ location: '' }).ics));
    expect(event.getFirstProperty('location')).toBeNull();
    expect(event.getFirstProperty('duration')).toBeNull();
    expect(String(event.getFirstPropertyValue('dtend'))).toBe('2025-10-01T10:35:00');
  });

  it('adds our VTIMEZONE when their copy lost it, and writes CRLF lines folded at 75 octets', () => {
    const zoneless = theirs.replace(/BEGIN:VTIMEZONE[\s\S]*END:VTIMEZONE\r\n/, '');
    expect(zoneless).not.toContain('VTIMEZONE');
    const merged = mergeOwned(zoneless, resourceOf({ description: 'Длинное описание '.repeat(12) }).ics);
    const { calendar, event } = eventOf(merged);
    expect(calendar.getAllSubcomponents('vtimezone').map((zone) => zone.getFirstPropertyValue('tzid'))).toEqual([
      'Europe/Moscow',
    ]);
    expect(event.getFirstPropertyValue('description')).toBe('Длинное описание '.repeat(12));
    expect(merged.endsWith('END:VCALENDAR\r\n')).toBe(true);
    for (const line of merged.split('\r\n')) expect(Buffer.byteLength(line)).toBeLessThanOrEqual(75);
  });

  it('answers ours when theirs holds no event', () => {
    expect(mergeOwned('BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n', ours.ics)).toBe(ours.ics);
  });

  it('replaces our alarm with the new one (or none) and keeps theirs, whatever order they came in', () => {
    const alarmed = editedByThem(resourceOf({}, { alarmMinutes: 15 }).ics);
    const triggers = (ics: string) =>
      eventOf(ics)
        .event.getAllSubcomponents('valarm')
        .map(
          (alarm) =>
            `${alarm.getFirstPropertyValue('trigger')}${alarm.hasProperty(ALARM_PROPERTY.toLowerCase()) ? ' ours' : ''}`,
        )
        .sort();
    expect(triggers(alarmed)).toEqual(['-PT15M ours', '-PT30M']);
    const moved = resourceOf({ location: 'ауд. 303' }, { alarmMinutes: 10 });
    expect(triggers(mergeOwned(alarmed, moved.ics))).toEqual(['-PT10M ours', '-PT30M']);
    expect(triggers(mergeOwned(alarmed, resourceOf({ location: 'ауд. 303' }).ics))).toEqual(['-PT30M']);
    // A resource written before it had alarms of ours gets one, theirs stay.
    expect(triggers(mergeOwned(theirs, moved.ics))).toEqual(['-PT10M ours', '-PT30M']);
  });
});
