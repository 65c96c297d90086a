import ical, { ICalAlarmType, type ICalEventData, ICalEventStatus } from 'ical-generator';
import type { Occurrence } from '../timetable/types.ts';
import { vtimezone } from '../timetable/vtimezone.ts';
import { ZonedTimes } from '../timetable/zoned-time.ts';
import { foldLines } from './fold-lines.ts';

/** Calendar-level data of one feed. */
export interface CalendarMeta {
  /** X-WR-CALNAME: the group's or teacher's name. */
  name: string;
  /** IANA zone of the events: TZID, VTIMEZONE and X-WR-TIMEZONE. */
  timezone: string;
  /** REFRESH-INTERVAL and X-PUBLISHED-TTL. */
  refreshIntervalMs: number;
  /** DTSTAMP of every event, passed explicitly so that identical input renders identical bytes. */
  stamp: number;
  /** A reminder this many minutes before each class (VALARM), per subscriber. */
  alarmMinutes?: number | undefined;
  /** Extra X- properties of the calendar, e.g. a stale marker; rendered in key order. */
  extra?: Readonly<Record<string, string>> | undefined;
}

const PRODUCT_ID = '-//timetable-sync//timetable-sync//RU';

/**
 * The ical-generator event data of occurrences: zoned start and end (luxon values, so the output never
 * depends on the process's own zone), explicit id and DTSTAMP, and the texts computed by the engine.
 */
export function toEventData(
  occurrences: readonly Occurrence[],
  meta: CalendarMeta,
  zonedTimes = ZonedTimes.shared(meta.timezone),
): ICalEventData[] {
  const stamp = new Date(meta.stamp);
  const alarmSeconds = meta.alarmMinutes === undefined ? undefined : meta.alarmMinutes * 60;
  // Wall-clock times are read in each occurrence's own zone, the one its TZID names: an occurrence kept from
  // an older snapshot (e.g. a cancelled one) may carry another zone than the feed's, and reading its
  // "10:10" in the feed's zone would shift it once ical-generator converts it to the TZID zone.
  const timesIn = (timezone: string): ZonedTimes =>
    timezone === zonedTimes.timezone ? zonedTimes : ZonedTimes.shared(timezone);
  // Occurrences of one entry share their categories array: convert each array once.
  const categoriesOf = new Map<readonly string[], { name: string }[]>();
  const categories = (list: readonly string[]) => {
    let converted = categoriesOf.get(list);
    if (converted === undefined) {
      converted = list.map((name) => ({ name }));
      categoriesOf.set(list, converted);
    }
    return converted;
  };
  return occurrences.map((occurrence) => {
    const [start, end] = timesIn(occurrence.timezone).span(occurrence.date, occurrence.beginTime, occurrence.endTime);
    return {
      id: occurrence.uid,
      sequence: occurrence.sequence,
      stamp,
      start,
      end,
      timezone: occurrence.timezone,
      summary: occurrence.summary,
      location: occurrence.location || null,
      description: occurrence.description || null,
      categories: categories(occurrence.categories),
      status: occurrence.status === 'CANCELLED' ? ICalEventStatus.CANCELLED : ICalEventStatus.CONFIRMED,
      alarms:
        alarmSeconds === undefined || occurrence.status === 'CANCELLED'
          ? []
          : [{ type: ICalAlarmType.display, trigger: alarmSeconds, description: occurrence.summary }],
    };
  });
}

/** An RFC 5545 duration of whole seconds, as ical-generator writes it: 1800 → PT30M, 90000 → P1DT1H. */
export function icalDuration(totalSeconds: number): string {
  const days = Math.floor(totalSeconds / 86_400);
  const hours = Math.floor((totalSeconds % 86_400) / 3_600);
  const minutes = Math.floor((totalSeconds % 3_600) / 60);
  const seconds = totalSeconds % 60;
  const time = `${hours ? `${hours}H` : ''}${minutes ? `${minutes}M` : ''}${seconds ? `${seconds}S` : ''}`;
  return `P${days ? `${days}D` : ''}${time || !days ? `T${time || '0S'}` : ''}`;
}

/** The calendar's own properties, in RFC 5545 order (calprops before any component). */
function calendarProperties(meta: CalendarMeta): string[] {
  const ttl = icalDuration(Math.max(60, Math.round(meta.refreshIntervalMs / 1000)));
  // ical-generator would write NAME and X-WR-CALNAME verbatim: a "," or ";" in a group list would break the
  // value and a line break in a name would inject properties, so every value here is escaped.
  const extra = Object.entries(meta.extra ?? {}).sort(([a], [b]) => (a < b ? -1 : 1));
  return [
    'BEGIN:VCALENDAR',
    'VERSION:2.0',
    `PRODID:${PRODUCT_ID}`,
    `NAME:${escapeText(meta.name)}`,
    `X-WR-CALNAME:${escapeText(meta.name)}`,
    `REFRESH-INTERVAL;VALUE=DURATION:${ttl}`,
    `X-PUBLISHED-TTL:${ttl}`,
    `X-WR-TIMEZONE:${escapeText(meta.timezone)}`,
    ...extra.map(([key, value]) => `${key.toUpperCase()}:${escapeText(value)}`),
  ];
}

/**
 * Renders prebuilt event data into an ICS document. ical-generator writes every event (dates, escaping,
 * alarms); the calendar around them is written here, because ical-generator 11 puts calendar properties
 * after the VTIMEZONE and the events, where RFC 5545 (icalbody = calprops component) does not allow them.
 */
export function renderEventData(events: readonly ICalEventData[], meta: CalendarMeta): string {
  const calendar = ical();
  const zones = new Set<string>();
  const body = events.map((data) => {
    if (typeof data.timezone === 'string') zones.add(data.timezone);
    return alarmsLast(calendar.createEvent(data).toString());
  });
  const vtimezones = [...zones].map(vtimezone);
  const text = `${[...calendarProperties(meta), ...vtimezones, ''].join('\r\n') + body.join('')}END:VCALENDAR`;
  // Every content line ends with CRLF, the last one (END:VCALENDAR) included (RFC 5545 §3.1).
  return `${foldLines(text)}\r\n`;
}

/** RFC 5545 TEXT escaping (§3.3.11): backslash, semicolon, comma and line breaks. */
function escapeText(text: string): string {
  return text.replace(/[\\;,]/g, (match) => `\\${match}`).replace(/\r\n|\r|\n/g, '\\n');
}

/**
 * Moves an event's VALARMs after its own properties (RFC 5545: eventc = eventprop *alarmc); ical-generator
 * writes CATEGORIES and STATUS after them. Events without an alarm are returned as they are.
 */
function alarmsLast(event: string): string {
  // Whole lines only (each starts after a CRLF), so no text inside a value can be mistaken for one.
  const first = event.indexOf('\r\nBEGIN:VALARM\r\n');
  if (first === -1) return event;
  const last = event.lastIndexOf('\r\nEND:VALARM\r\n') + '\r\nEND:VALARM'.length;
  const end = event.lastIndexOf('\r\nEND:VEVENT');
  return event.slice(0, first) + event.slice(last, end) + event.slice(first, last) + event.slice(end);
}

/** Renders occurrences as one ICS feed: the same occurrences and meta give byte-identical output. */
export function renderIcs(occurrences: readonly Occurrence[], meta: CalendarMeta, zonedTimes?: ZonedTimes): string {
  return renderEventData(toEventData(occurrences, meta, zonedTimes), meta);
}
