import { getVtimezoneComponent } from '@touch4it/ical-timezones';
import ical, { ICalAlarmType, ICalEventStatus, type ICalEventData } from 'ical-generator';
import type { Occurrence } from '../timetable/types.ts';
import { ZonedTimes } from '../timetable/zoned-time.ts';

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
  alarmMinutes?: number;
  /** Extra X- properties of the calendar, e.g. a stale marker; rendered in key order. */
  extra?: Readonly<Record<string, string>>;
}

const PRODUCT_ID = { company: 'timetable-sync', product: 'timetable-sync', language: 'RU' } as const;
const vtimezones = new Map<string, string | null>();

/** VTIMEZONE text of a zone from the bundled zone database, read once per process. */
export function vtimezone(timezone: string): string | null {
  if (!vtimezones.has(timezone)) vtimezones.set(timezone, getVtimezoneComponent(timezone) || null);
  return vtimezones.get(timezone) ?? null;
}

/**
 * The ical-generator event data of occurrences: zoned start and end (luxon values, so the output never
 * depends on the process's own zone), explicit id and DTSTAMP, and the texts computed by the engine.
 */
export function toEventData(occurrences: readonly Occurrence[], meta: CalendarMeta, zonedTimes = new ZonedTimes(meta.timezone)): ICalEventData[] {
  const stamp = new Date(meta.stamp);
  const alarmSeconds = meta.alarmMinutes === undefined ? undefined : meta.alarmMinutes * 60;
  // Wall-clock times are read in each occurrence's own zone, the one its TZID names: an occurrence kept from
  // an older snapshot (e.g. a cancelled one) may carry another zone than the feed's, and reading its
  // "10:10" in the feed's zone would shift it once ical-generator converts it to the TZID zone.
  const zones = new Map([[zonedTimes.timezone, zonedTimes]]);
  const timesIn = (timezone: string): ZonedTimes => {
    let times = zones.get(timezone);
    if (times === undefined) zones.set(timezone, (times = new ZonedTimes(timezone)));
    return times;
  };
  return occurrences.map((occurrence) => ({
    id: occurrence.uid,
    sequence: occurrence.sequence,
    stamp,
    start: timesIn(occurrence.timezone).at(occurrence.date, occurrence.beginTime),
    end: timesIn(occurrence.timezone).at(occurrence.date, occurrence.endTime),
    timezone: occurrence.timezone,
    summary: occurrence.summary,
    location: occurrence.location || null,
    description: occurrence.description || null,
    categories: occurrence.categories.map((name) => ({ name })),
    status: occurrence.status === 'CANCELLED' ? ICalEventStatus.CANCELLED : ICalEventStatus.CONFIRMED,
    alarms: alarmSeconds === undefined || occurrence.status === 'CANCELLED' ? [] : [{ type: ICalAlarmType.display, trigger: alarmSeconds, description: occurrence.summary }],
  }));
}

/** Renders prebuilt event data into an ICS document (the part ical-generator does alone). */
export function renderEventData(events: readonly ICalEventData[], meta: CalendarMeta): string {
  const calendar = ical({
    // ical-generator writes NAME and X-WR-CALNAME verbatim, unlike every other TEXT value: escape here, or a
    // "," or ";" in a group list breaks the value and a line break in a name injects properties.
    name: escapeText(meta.name),
    prodId: PRODUCT_ID,
    ttl: Math.max(60, Math.round(meta.refreshIntervalMs / 1000)),
    // No calendar-level zone name: ical-generator would then write DTSTAMP in the process's local time.
    // Each event carries its TZID instead, and the generator adds one VTIMEZONE per zone used.
    timezone: { name: null, generator: vtimezone },
  });
  calendar.x([['X-WR-TIMEZONE', meta.timezone], ...Object.entries(meta.extra ?? {}).sort(([a], [b]) => (a < b ? -1 : 1))]);
  for (const event of events) calendar.createEvent(event);
  // Every content line ends with CRLF, the last one (END:VCALENDAR) included (RFC 5545 §3.1).
  return `${propertiesFirst(calendar.toString())}\r\n`;
}

/** RFC 5545 TEXT escaping (§3.3.11): backslash, semicolon, comma and line breaks. */
function escapeText(text: string): string {
  return text.replace(/[\\;,]/g, (match) => `\\${match}`).replace(/\r\n|\r|\n/g, '\\n');
}

/**
 * Moves every component's properties in front of its subcomponents, keeping their order otherwise. RFC 5545
 * requires that order (icalbody = calprops component; eventc = eventprop *alarmc), but ical-generator 11
 * writes REFRESH-INTERVAL after the VTIMEZONE, calendar X- properties after the events, and CATEGORIES and
 * STATUS after a VALARM. Works on folded text: a continuation line (leading space) stays with its property.
 */
function propertiesFirst(ics: string): string {
  const logical: string[] = [];
  for (const line of ics.split('\r\n')) {
    if (line.startsWith(' ') && logical.length > 0) logical[logical.length - 1] += `\r\n${line}`;
    else logical.push(line);
  }
  const root = { properties: [] as string[], children: [] as string[] };
  const open = [root];
  for (const line of logical) {
    const current = open[open.length - 1] ?? root;
    if (line.startsWith('BEGIN:')) {
      open.push({ properties: [line], children: [] });
    } else if (line.startsWith('END:') && open.length > 1) {
      open.pop();
      (open[open.length - 1] ?? root).children.push([...current.properties, ...current.children, line].join('\r\n'));
    } else {
      current.properties.push(line);
    }
  }
  return [...root.properties, ...root.children].join('\r\n');
}

/** Renders occurrences as one ICS feed: the same occurrences and meta give byte-identical output. */
export function renderIcs(occurrences: readonly Occurrence[], meta: CalendarMeta, zonedTimes?: ZonedTimes): string {
  return renderEventData(toEventData(occurrences, meta, zonedTimes), meta);
}
