/**
 * What a push target's calendar should hold, derived from a feed's occurrences (pure): the events, the fields of
 * each that we own, and their digest. Every calendar kind writes these; how it marks them as ours is its own.
 */
import { createHash } from 'node:crypto';
import { shownSummary } from '../timetable/event-text.ts';
import type { Occurrence } from '../timetable/types.ts';
import { eventIdFor } from './event-id.ts';

/**
 * The fields of an event this service owns. Everything else (colour, attendees…) is the user's, and so are the
 * reminders unless the target follows feed options (`reminder`).
 */
export interface OwnedEventFields {
  summary: string;
  location: string;
  description: string;
  /** Local wall-clock time without offset (`2025-10-01T09:00:00`) in `timeZone` (an IANA zone). */
  start: { dateTime: string; timeZone: string };
  end: { dateTime: string; timeZone: string };
  /**
   * The event's reminder when the reminders are ours (a target with feed options): minutes before the class,
   * `default` for the calendar's own, or `none` (a cancelled class rings for nobody). Absent: the reminders are
   * the user's and never written after insert.
   */
  reminder?: EventReminder | undefined;
}

/** A reminder we set: one popup that many minutes before, the calendar's default reminders, or none at all. */
export type EventReminder = number | 'default' | 'none';

/**
 * Whose reminders an event gets: absent, the calendar's and the user's (targets connected before push followed
 * options); present, ours: `alarmMinutes` before each class, or the calendar's default without it.
 */
export interface OwnedReminders {
  alarmMinutes?: number | undefined;
}

/** An event as this service wants it in a calendar. */
export interface DesiredEvent {
  /** Deterministic base32hex id derived from the occurrence UID (`event-id.ts`). */
  id: string;
  fields: OwnedEventFields;
  /** Digest of `fields`, kept with the event so that a listing tells which version it holds. */
  hash: string;
}

/** The fields of an occurrence that we own: text, and local start and end in the timetable's zone. */
export function ownedFields(occurrence: Occurrence, reminders?: OwnedReminders): OwnedEventFields {
  const { date, timezone } = occurrence;
  const fields: OwnedEventFields = {
    summary: occurrence.summary,
    location: occurrence.location,
    description: occurrence.description,
    start: { dateTime: `${date}T${occurrence.beginTime}:00`, timeZone: timezone },
    end: { dateTime: `${date}T${occurrence.endTime}:00`, timeZone: timezone },
  };
  if (reminders !== undefined) fields.reminder = reminderOf(occurrence, reminders.alarmMinutes);
  return fields;
}

/**
 * The reminder of an occurrence whose reminders are ours: `alarmMinutes` before it, the calendar's default
 * without them, and none on a cancelled class (the calendar's default would ring for a class nobody holds).
 */
function reminderOf(occurrence: Occurrence, alarmMinutes: number | undefined): EventReminder {
  if (occurrence.status === 'CANCELLED') return 'none';
  return alarmMinutes ?? 'default';
}

/**
 * The minutes of the alarm an occurrence carries: `alarmMinutes`, except on a cancelled class (which rings for
 * nobody, as in the feed, whose cancelled events carry no VALARM either).
 */
export function alarmOf(occurrence: Occurrence, alarmMinutes: number | undefined): number | undefined {
  return occurrence.status === 'CANCELLED' ? undefined : alarmMinutes;
}

/**
 * Digest of owned fields: SHA-256 of their JSON in a fixed key order, base64url, 22 characters (132 bits).
 * The key order is spelled out so that a change in how fields are built never changes the digest by accident.
 * The reminder counts only when it is not the calendar's default: the events of targets without options, or with
 * options but no alarm, keep the digests they were pushed with (no write on upgrade), and an alarm set, changed or
 * removed changes the digest, so that the next push writes it (or the calendar's default back); so does `none`,
 * which only a cancelled class of a target with options has.
 */
export function fieldsHash(fields: OwnedEventFields): string {
  const parts: unknown[] = [
    fields.summary,
    fields.location,
    fields.description,
    fields.start.dateTime,
    fields.start.timeZone,
    fields.end.dateTime,
    fields.end.timeZone,
  ];
  if (fields.reminder !== undefined && fields.reminder !== 'default') parts.push(fields.reminder);
  const canonical = JSON.stringify(parts);
  return createHash('sha256').update(canonical).digest('base64url').slice(0, 22);
}

/**
 * The occurrences a calendar should hold, as every kind shows them: the confirmed ones, and the cancelled ones
 * (kept in feeds for `CANCELLED_RETENTION`, or for good once their time has come) titled with
 * `cancelledTitlePrefix`, so that a cancelled class says so in the calendar too until it leaves the feed. With an
 * empty prefix, cancelled occurrences are left out and their events deleted: an event looking like any other
 * class would say it still takes place. An occurrence UID seen twice keeps its first occurrence.
 */
export function shownOccurrences(occurrences: readonly Occurrence[], cancelledTitlePrefix: string): Occurrence[] {
  const seen = new Set<string>();
  const shown: Occurrence[] = [];
  for (const occurrence of occurrences) {
    if (seen.has(occurrence.uid)) continue;
    if (occurrence.status !== 'CONFIRMED' && cancelledTitlePrefix === '') continue;
    seen.add(occurrence.uid);
    shown.push({ ...occurrence, summary: shownSummary(occurrence, cancelledTitlePrefix) });
  }
  return shown;
}

/**
 * The events a calendar should hold ({@link shownOccurrences}), each with its id, owned fields and their digest;
 * with `reminders`, each carries ours (see {@link OwnedReminders}).
 */
export function desiredEvents(
  occurrences: readonly Occurrence[],
  cancelledTitlePrefix: string,
  reminders?: OwnedReminders,
): DesiredEvent[] {
  return shownOccurrences(occurrences, cancelledTitlePrefix).map((occurrence) => {
    const fields = ownedFields(occurrence, reminders);
    return { id: eventIdFor(occurrence.uid), fields, hash: fieldsHash(fields) };
  });
}
