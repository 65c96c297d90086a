/**
 * Our own view of a Google calendar. The rest of the service talks to this interface, never to SDK types;
 * `google-calendar.ts` implements it over `@googleapis/calendar`, and tests may implement it over anything.
 */
import type { DesiredEvent } from '../push/desired-events.ts';

/** The private extended property that marks events this service created: key, and value (the source key). */
export interface EventMarker {
  key: string;
  value: string;
}

/** An event as Google holds it, reduced to what a sync needs. */
export interface RemoteEvent {
  id: string;
  /** Google keeps deleted events as `status: cancelled`; their ids cannot be inserted again. */
  cancelled: boolean;
  /** The private extended property of our marker, if the event carries one (any source). */
  markerValue?: string;
  /** Our digest of the owned fields, from the private extended properties. */
  hash?: string;
}

/** What a delete found: the event deleted now, already deleted (410), or not there (404). */
export type DeleteOutcome = 'deleted' | 'gone' | 'missing';

/** A secondary calendar. */
export interface CalendarInfo {
  id: string;
  summary: string;
  timeZone?: string;
}

/**
 * One Google account's calendars, already authorised. Every method is one API request (list: one per page)
 * and throws the typed errors of `errors.ts`.
 */
export interface CalendarClient {
  /** Creates a secondary calendar and answers its id. */
  createCalendar(summary: string, timeZone: string): Promise<CalendarInfo>;
  /** The calendar, or {@link CalendarGoneError} when it was deleted or is not reachable by this account. */
  getCalendar(calendarId: string): Promise<CalendarInfo>;
  /** Renames a calendar (its summary, nothing else); {@link CalendarGoneError} when it is gone or not reachable. */
  renameCalendar(calendarId: string, summary: string): Promise<CalendarInfo>;
  /** Deletes a secondary calendar; one that is already gone counts as deleted. */
  deleteCalendar(calendarId: string): Promise<void>;
  /**
   * Inserts with the event's own id, marker and hash; {@link EventExistsError} when the id is taken (even by a
   * cancelled event).
   */
  insertEvent(calendarId: string, event: DesiredEvent, marker: EventMarker): Promise<void>;
  /** The event (cancelled ones included), or undefined when the id was never used. */
  getEvent(calendarId: string, eventId: string): Promise<RemoteEvent | undefined>;
  /**
   * Patches only the owned fields, the marker and the hash (a user's reminders, colour and notes survive); {@link
   * EventMissingError} on 404.
   */
  patchEvent(calendarId: string, event: DesiredEvent, marker: EventMarker): Promise<void>;
  /** Replaces an event whose id is taken by a cancelled event of ours, bringing it back as confirmed. */
  reviveEvent(calendarId: string, event: DesiredEvent, marker: EventMarker): Promise<void>;
  /**
   * Deletes an event: `deleted`, or `gone` when Google answered 410 (deleted before), or `missing` when it
   * answered 404 (the id was never used, or the whole calendar is gone: Google answers 404 for its events too).
   */
  deleteEvent(calendarId: string, eventId: string): Promise<DeleteOutcome>;
  /** Every event (cancelled ones included) carrying `marker`: one array per page, each page one API request. */
  listMarkedEvents(calendarId: string, marker: EventMarker): AsyncIterable<RemoteEvent[]>;
}

/** Called before every API request (the request budget waits here). Token refreshes do not count. */
export type BeforeRequest = () => Promise<void>;

/** Builds a {@link CalendarClient} for one refresh token. */
export type CalendarClientFactory = (refreshToken: string, beforeRequest: BeforeRequest) => CalendarClient;
