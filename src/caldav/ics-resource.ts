/**
 * The CalDAV resources of a feed's occurrences (pure): one VCALENDAR per occurrence with the VTIMEZONE of its
 * zone and one VEVENT, worded as the feed words it (UID, SEQUENCE, TZID times, SUMMARY with the cancelled
 * prefix as the Google push has it, LOCATION, DESCRIPTION, STATUS), plus our marker and the digest of the
 * fields we own. Strict servers want exactly this (RFC 4791 §4.1: one UID per resource; RFC 5545: DTSTAMP,
 * a VTIMEZONE for every TZID, CRLF, lines folded at 75 octets).
 *
 * The UID is the feed's own, in a calendar of ours and in one a person gave alike: it names the class, and
 * a server that refuses a UID already used elsewhere in the account (iCloud, Fastmail) answers a conflict
 * that the push records for that one event instead of writing a second copy.
 */
import { foldLines } from '../feeds/fold-lines.ts';
import { alarmOf, fieldsHash, ownedFields, shownOccurrences } from '../push/desired-events.ts';
import { eventIdFor } from '../push/event-id.ts';
import type { Occurrence } from '../timetable/types.ts';
import { vtimezone } from '../timetable/vtimezone.ts';
import {
  ALARM_PROPERTY,
  type DesiredResource,
  HASH_PROPERTY,
  MARKER_PROPERTY,
  RESOURCE_PREFIX,
} from './caldav-client.ts';
import { escapeText, placedLines, unescapeText } from './ics-lines.ts';

const PRODUCT_ID = '-//timetable-sync//timetable-sync CalDAV//RU';

/** How resources are worded. */
export interface ResourceOptions {
  /** `CANCELLED_TITLE_PREFIX`: a cancelled class keeps its event with this before its title; '' leaves it out. */
  cancelledPrefix: string;
  /** The timetable's zone, for an occurrence that names none. */
  timeZone: string;
  /**
   * A reminder this many minutes before each class (the target's feed options), when set: one VALARM of ours,
   * marked with {@link ALARM_PROPERTY}. A cancelled class gets none.
   */
  alarmMinutes?: number | undefined;
  /** DTSTAMP, epoch ms (default: now); fixed in tests so that the same input gives the same text. */
  stamp?: number | undefined;
}

/** The resource name stem of an occurrence UID: `tts-` + its Google event id (lower-case base32hex). */
export function resourceIdFor(uid: string): string {
  return RESOURCE_PREFIX + eventIdFor(uid);
}

/**
 * The resources a calendar should hold for `occurrences` of `source`: one per occurrence every kind shows
 * (`shownOccurrences`: a UID seen twice keeps its first occurrence; cancelled ones prefixed, or left out with an
 * empty prefix), in the university's zone where an occurrence names none.
 */
export function desiredResources(
  occurrences: readonly Occurrence[],
  source: string,
  options: ResourceOptions,
): DesiredResource[] {
  const stamp = utcStamp(options.stamp ?? Date.now());
  return shownOccurrences(occurrences, options.cancelledPrefix).map((occurrence) => {
    const shown: Occurrence = { ...occurrence, timezone: occurrence.timezone || options.timeZone };
    const hash = resourceHash(shown, options.alarmMinutes);
    return {
      id: resourceIdFor(occurrence.uid),
      uid: occurrence.uid,
      ics: renderResource(shown, { source, hash, stamp, alarmMinutes: options.alarmMinutes }),
      hash,
    };
  });
}

/**
 * The digest of what we own in an event: the core's {@link fieldsHash} of the texts and zoned times (22 base64url
 * characters, never a space), and the reminder when we write one. Without one it is the digest resources had
 * before targets followed options, so that they are not written again.
 */
export function resourceHash(occurrence: Occurrence, alarmMinutes: number | undefined): string {
  const alarm = alarmOf(occurrence, alarmMinutes);
  return fieldsHash(alarm === undefined ? ownedFields(occurrence) : { ...ownedFields(occurrence), reminder: alarm });
}

/** What {@link renderResource} writes besides the occurrence. */
interface RenderContext {
  source: string;
  hash: string;
  /** DTSTAMP value, `YYYYMMDDTHHMMSSZ`. */
  stamp: string;
  alarmMinutes: number | undefined;
}

/** One occurrence as a whole resource: VCALENDAR, VTIMEZONE, VEVENT; CRLF, folded. */
function renderResource(occurrence: Occurrence, context: RenderContext): string {
  const zone = occurrence.timezone;
  const cancelled = occurrence.status === 'CANCELLED';
  const event = [
    'BEGIN:VEVENT',
    `UID:${escapeText(occurrence.uid)}`,
    `SEQUENCE:${occurrence.sequence}`,
    `DTSTAMP:${context.stamp}`,
    `DTSTART;TZID=${zone}:${localStamp(occurrence.date, occurrence.beginTime)}`,
    `DTEND;TZID=${zone}:${localStamp(occurrence.date, occurrence.endTime)}`,
    `SUMMARY:${escapeText(occurrence.summary)}`,
    ...(occurrence.location ? [`LOCATION:${escapeText(occurrence.location)}`] : []),
    ...(occurrence.description ? [`DESCRIPTION:${escapeText(occurrence.description)}`] : []),
    `STATUS:${cancelled ? 'CANCELLED' : 'CONFIRMED'}`,
    `${MARKER_PROPERTY}:${escapeText(context.source)}`,
    `${HASH_PROPERTY}:${context.hash}`,
    ...(context.alarmMinutes === undefined || cancelled
      ? []
      : [
          'BEGIN:VALARM',
          'ACTION:DISPLAY',
          `TRIGGER:-PT${context.alarmMinutes}M`,
          `DESCRIPTION:${escapeText(occurrence.summary)}`,
          `${ALARM_PROPERTY}:1`,
          'END:VALARM',
        ]),
    'END:VEVENT',
  ];
  const text = ['BEGIN:VCALENDAR', 'VERSION:2.0', `PRODID:${PRODUCT_ID}`, 'CALSCALE:GREGORIAN', vtimezone(zone)]
    .concat(event, 'END:VCALENDAR')
    .join('\r\n');
  return `${foldLines(text)}\r\n`;
}

/** `2025-09-01` + `10:10` → `20250901T101000` (local time; the TZID says whose). */
function localStamp(date: string, time: string): string {
  return `${date.replaceAll('-', '')}T${time.replace(':', '')}00`;
}

/** Epoch ms → `20250901T071000Z`. */
function utcStamp(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 19).replace(/[-:]/g, '')}Z`;
}

/** What a resource says about itself: its VEVENT's UID, our marker and our digest, when present. */
export interface ResourceIdentity {
  uid?: string | undefined;
  markerValue?: string | undefined;
  hash?: string | undefined;
}

/** Reads UID, {@link MARKER_PROPERTY} and {@link HASH_PROPERTY} of the first VEVENT (not of its alarms). */
export function parseResource(ics: string): ResourceIdentity {
  const identity: ResourceIdentity = {};
  let events = 0;
  for (const line of placedLines(ics)) {
    if (line.name === 'BEGIN' && line.path.at(-1) === 'VEVENT') events++;
    if (events !== 1 || line.path.at(-1) !== 'VEVENT') continue;
    if (line.name === 'UID') identity.uid ??= unescapeText(line.value);
    else if (line.name === MARKER_PROPERTY) identity.markerValue ??= unescapeText(line.value);
    else if (line.name === HASH_PROPERTY) identity.hash ??= line.value.trim();
  }
  return identity;
}
