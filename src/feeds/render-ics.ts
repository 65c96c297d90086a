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

/**
 * Renders occurrences as one ICS feed: the same occurrences and meta give byte-identical output, the bytes
 * ical-generator writes (see {@link renderEventData}). Events without an alarm in a named zone (every event a
 * publication stores) are written by {@link EventWriter}, the rest by ical-generator.
 */
export function renderIcs(occurrences: readonly Occurrence[], meta: CalendarMeta, zonedTimes?: ZonedTimes): string {
  if (meta.alarmMinutes !== undefined || occurrences.some((occurrence) => !EventWriter.writes(occurrence)))
    return renderEventData(toEventData(occurrences, meta, zonedTimes), meta);
  const writer = new EventWriter(meta, zonedTimes ?? ZonedTimes.shared(meta.timezone));
  const zones = new Set<string>();
  let body = '';
  for (const occurrence of occurrences) {
    zones.add(occurrence.timezone);
    body += writer.event(occurrence);
  }
  const head = foldLines([...calendarProperties(meta), ...[...zones].map(vtimezone), ''].join('\r\n'));
  return `${head}${body}END:VCALENDAR\r\n`;
}

/**
 * Writes events as ical-generator 11 does for the event data {@link toEventData} makes without an alarm, folded
 * (RFC 5545 §3.1) line by line, which is what folding the whole text gives. ical-generator built every event
 * as an object, formatted each date with luxon and escaped each text again; a feed repeats the same few texts
 * (a weekly class's title, place and notes) and dates over and over, so each is written once per feed here.
 * Rendering was the largest part of a first publication's CPU.
 */
class EventWriter {
  /**
   * Whether an occurrence is written here: in a named zone (ical-generator writes UTC times otherwise), and with
   * no empty category (which ical-generator refuses).
   */
  static writes(occurrence: Occurrence): boolean {
    return occurrence.timezone !== '' && occurrence.timezone !== 'UTC' && !occurrence.categories.includes('');
  }

  private readonly stampLine: string;
  private readonly zonedTimes: ZonedTimes;
  // Lines by property and raw value, and wall-clock texts by zone and instant: a feed repeats them.
  private readonly lines = new Map<string, Map<string, string>>();
  private readonly categoryLines = new Map<readonly string[], string>();
  private readonly times = new Map<string, Map<number, string>>();

  constructor(meta: CalendarMeta, zonedTimes: ZonedTimes) {
    this.stampLine = `DTSTAMP:${utcStamp(new Date(meta.stamp))}\r\n`;
    this.zonedTimes = zonedTimes;
  }

  event(occurrence: Occurrence): string {
    const { timezone } = occurrence;
    const times = timezone === this.zonedTimes.timezone ? this.zonedTimes : ZonedTimes.shared(timezone);
    let [start, end] = times.spanUtc(occurrence.date, occurrence.beginTime, occurrence.endTime);
    // ical-generator swaps a start after the end (a class whose end time comes before its start).
    if (start > end) [start, end] = [end, start];
    let text = `BEGIN:VEVENT\r\n${this.line('UID:', occurrence.uid, false)}SEQUENCE:${occurrence.sequence}\r\n${this.stampLine}`;
    text += `DTSTART;TZID=${this.wallClock(times, start)}\r\nDTEND;TZID=${this.wallClock(times, end)}\r\n`;
    text += this.line('SUMMARY:', occurrence.summary, true);
    if (occurrence.location) text += this.line('LOCATION:', occurrence.location, true);
    if (occurrence.description) text += this.line('DESCRIPTION:', occurrence.description, true);
    if (occurrence.categories.length > 0) text += this.categories(occurrence.categories);
    return `${text}STATUS:${occurrence.status === 'CANCELLED' ? 'CANCELLED' : 'CONFIRMED'}\r\nEND:VEVENT\r\n`;
  }

  /** A property's whole line, its value escaped (as TEXT) or not, folded, with its CRLF; each built once. */
  private line(name: string, value: string, escaped: boolean): string {
    let byValue = this.lines.get(name);
    if (byValue === undefined) {
      byValue = new Map();
      this.lines.set(name, byValue);
    }
    let line = byValue.get(value);
    if (line === undefined) {
      line = `${foldLines(name + (escaped ? escapeText(value) : value))}\r\n`;
      byValue.set(value, line);
    }
    return line;
  }

  private categories(list: readonly string[]): string {
    let line = this.categoryLines.get(list);
    if (line === undefined) {
      line = this.line('CATEGORIES:', list.map(escapeText).join(','), false);
      this.categoryLines.set(list, line);
    }
    return line;
  }

  /**
   * `<zone>:YYYYMMDDTHHMMSS`, the wall-clock time of an instant in the zone, as luxon computes it for the
   * zoned values {@link toEventData} gives ical-generator (the instant plus the zone's offset, in minutes).
   */
  private wallClock(times: ZonedTimes, instant: number): string {
    let byInstant = this.times.get(times.timezone);
    if (byInstant === undefined) {
      byInstant = new Map();
      this.times.set(times.timezone, byInstant);
    }
    let text = byInstant.get(instant);
    if (text === undefined) {
      const wall = new Date(instant + (times.offsetAt(instant) / 60_000) * 60 * 1000);
      text = `${times.timezone}:${pad(wall.getUTCFullYear(), 4)}${pad(wall.getUTCMonth() + 1, 2)}${pad(wall.getUTCDate(), 2)}T${pad(wall.getUTCHours(), 2)}${pad(wall.getUTCMinutes(), 2)}${pad(wall.getUTCSeconds(), 2)}`;
      byInstant.set(instant, text);
    }
    return text;
  }
}

function pad(value: number, digits: number): string {
  return String(value).padStart(digits, '0');
}

/** A DTSTAMP value: the UTC date-time of `date`, as ical-generator writes a `Date` outside any zone. */
function utcStamp(date: Date): string {
  return `${pad(date.getUTCFullYear(), 4)}${pad(date.getUTCMonth() + 1, 2)}${pad(date.getUTCDate(), 2)}T${pad(date.getUTCHours(), 2)}${pad(date.getUTCMinutes(), 2)}${pad(date.getUTCSeconds(), 2)}Z`;
}
