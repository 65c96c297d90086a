/**
 * An in-memory {@link CalendarClient} with Google's semantics as the adapter reports them: ids must be
 * base32hex; a deleted event stays as cancelled and its id cannot be inserted again (409, even cancelled);
 * deleting twice answers `gone` (410), a never-used id `missing` (404); patch merges (owned fields, marker
 * and hash replaced, everything else kept); revive (PUT) replaces the whole body and confirms the event.
 */
import type {
  CalendarClient,
  CalendarInfo,
  DeleteOutcome,
  EventMarker,
  RemoteEvent,
} from '../../src/google/calendar-client.ts';
import { CalendarGoneError, EventExistsError, EventMissingError, EventRefusedError } from '../../src/google/errors.ts';
import { HASH_KEY, MARKER_KEY } from '../../src/google/event-marker.ts';
import type { DesiredEvent, OwnedEventFields } from '../../src/push/desired-events.ts';

/** An event as the fake keeps it. */
export interface StoredEvent {
  id: string;
  status: 'confirmed' | 'cancelled';
  fields: OwnedEventFields;
  /** Private extended properties. */
  private: Record<string, string>;
  /** What the owner added (reminders, colour…): kept by patch, dropped by a full update. */
  extra: Record<string, unknown>;
}

/** Methods of {@link CalendarClient} that send requests. */
export type Method =
  | 'createCalendar'
  | 'getCalendar'
  | 'renameCalendar'
  | 'deleteCalendar'
  | 'insertEvent'
  | 'getEvent'
  | 'patchEvent'
  | 'reviveEvent'
  | 'deleteEvent'
  | 'listPage';

/** A fault: call number `at` of `method` (counted over the fake's life) throws `error` instead of running. */
interface Fault {
  method: Method;
  at: number;
  error: Error;
}

const ID = /^[0-9a-v]{5,1024}$/;

/** The in-memory calendar service of one Google account. */
export class MemoryCalendar implements CalendarClient {
  readonly calendars = new Map<string, { info: CalendarInfo; events: Map<string, StoredEvent> }>();
  /** Requests per method, faulted ones included. */
  readonly calls = new Map<Method, number>();
  /** Every request's method, in the order sent. */
  readonly sent: Method[] = [];
  /** Successful changes to event data (insert, patch, revive, delete of a live event). */
  mutations = 0;
  faults: Fault[] = [];
  /** Events per listing page. */
  pageSize = 2500;
  /** Milliseconds every request takes (so that requests overlap). */
  latencyMs = 0;
  /** Milliseconds a write of one event takes, instead of {@link latencyMs}. */
  readonly eventLatencyMs = new Map<string, number>();
  /** Awaited before every request, like the adapter's `BeforeRequest` (the request budget). */
  beforeRequest: (() => Promise<void>) | undefined;
  /** Event ids whose every write (insert, patch, revive, delete) is refused with the error given. */
  readonly refusing = new Map<string, Error>();
  /** Ids Google keeps reserved after purging their events: an insert answers 409, a get finds nothing. */
  readonly reserved = new Set<string>();
  /** Calendars the owner deleted: as through the adapter, a delete of one of their events answers 404. */
  private readonly ownerDeleted = new Set<string>();
  private nextCalendar = 1;

  constructor(calendarIds: string[] = []) {
    for (const id of calendarIds) this.calendars.set(id, { info: { id, summary: id }, events: new Map() });
  }

  count(method: Method): number {
    return this.calls.get(method) ?? 0;
  }

  /** Requests of every method. */
  total(): number {
    return [...this.calls.values()].reduce((sum, n) => sum + n, 0);
  }

  /** The `nth` call of `method` from now on (1-based) throws `error` instead of running. */
  fail(method: Method, error: Error, nth = 1): void {
    this.faults.push({ method, at: this.count(method) + nth, error });
  }

  events(calendarId: string, includeCancelled = false): StoredEvent[] {
    return [...this.calendar(calendarId).events.values()].filter(
      (event) => includeCancelled || event.status === 'confirmed',
    );
  }

  event(calendarId: string, id: string): StoredEvent | undefined {
    return this.calendars.get(calendarId)?.events.get(id);
  }

  /** The owner deletes the calendar: every request about it fails, except that deleting an event answers `missing`. */
  ownerDeleteCalendar(calendarId: string): void {
    this.calendars.delete(calendarId);
    this.ownerDeleted.add(calendarId);
  }

  /** The owner's own event (no marker), outside the API. */
  ownerInsert(calendarId: string, id: string, privateProperties: Record<string, string> = {}): void {
    this.calendar(calendarId).events.set(id, {
      id,
      status: 'confirmed',
      fields: FOREIGN_FIELDS,
      private: privateProperties,
      extra: {},
    });
  }

  async createCalendar(summary: string, timeZone: string): Promise<CalendarInfo> {
    await this.request('createCalendar');
    const info = { id: `cal${this.nextCalendar++}@group.calendar.google.com`, summary, timeZone };
    this.calendars.set(info.id, { info, events: new Map() });
    return info;
  }

  async getCalendar(calendarId: string): Promise<CalendarInfo> {
    await this.request('getCalendar');
    return this.calendar(calendarId).info;
  }

  async renameCalendar(calendarId: string, summary: string): Promise<CalendarInfo> {
    await this.request('renameCalendar');
    const stored = this.calendar(calendarId);
    stored.info = { ...stored.info, summary };
    return stored.info;
  }

  async deleteCalendar(calendarId: string): Promise<void> {
    await this.request('deleteCalendar');
    this.calendars.delete(calendarId);
  }

  async insertEvent(calendarId: string, event: DesiredEvent, marker: EventMarker): Promise<void> {
    await this.request('insertEvent', event.id);
    if (!ID.test(event.id))
      throw new EventRefusedError('events.insert: Invalid resource id value.', { status: 400, reason: 'invalid' });
    const events = this.calendar(calendarId).events;
    if (events.has(event.id) || this.reserved.has(event.id))
      throw new EventExistsError('events.insert: The requested identifier already exists.', {
        status: 409,
        reason: 'duplicate',
      });
    events.set(event.id, {
      id: event.id,
      status: 'confirmed',
      fields: event.fields,
      private: ours(event, marker),
      extra: {},
    });
    this.mutations += 1;
  }

  async getEvent(calendarId: string, eventId: string): Promise<RemoteEvent | undefined> {
    await this.request('getEvent');
    const stored = this.calendar(calendarId).events.get(eventId);
    return stored && remote(stored, MARKER_KEY);
  }

  async patchEvent(calendarId: string, event: DesiredEvent, marker: EventMarker): Promise<void> {
    await this.request('patchEvent', event.id);
    const stored = this.calendar(calendarId).events.get(event.id);
    if (!stored) throw new EventMissingError('events.patch: Not Found', { status: 404, reason: 'notFound' });
    stored.fields = event.fields;
    stored.private = { ...stored.private, ...ours(event, marker) };
    this.mutations += 1;
  }

  async reviveEvent(calendarId: string, event: DesiredEvent, marker: EventMarker): Promise<void> {
    await this.request('reviveEvent', event.id);
    const events = this.calendar(calendarId).events;
    if (!events.has(event.id))
      throw new EventMissingError('events.update: Not Found', { status: 404, reason: 'notFound' });
    events.set(event.id, {
      id: event.id,
      status: 'confirmed',
      fields: event.fields,
      private: ours(event, marker),
      extra: {},
    });
    this.mutations += 1;
  }

  async deleteEvent(calendarId: string, eventId: string): Promise<DeleteOutcome> {
    await this.request('deleteEvent', eventId);
    // Google answers events.delete with 404 for a deleted calendar, and the adapter reports that as `missing`.
    if (this.ownerDeleted.has(calendarId)) return 'missing';
    const stored = this.calendar(calendarId).events.get(eventId);
    if (!stored) return 'missing';
    if (stored.status === 'cancelled') return 'gone';
    stored.status = 'cancelled';
    this.mutations += 1;
    return 'deleted';
  }

  async *listMarkedEvents(calendarId: string, marker: EventMarker): AsyncIterable<RemoteEvent[]> {
    const all = [...this.calendar(calendarId).events.values()].filter(
      (event) => event.private[marker.key] === marker.value,
    );
    for (let start = 0; start === 0 || start < all.length; start += this.pageSize) {
      await this.request('listPage');
      yield all.slice(start, start + this.pageSize).map((event) => remote(event, marker.key));
    }
  }

  private calendar(calendarId: string): { info: CalendarInfo; events: Map<string, StoredEvent> } {
    const calendar = this.calendars.get(calendarId);
    if (!calendar)
      throw new CalendarGoneError(`calendar ${calendarId}: Not Found`, { status: 404, reason: 'notFound' });
    return calendar;
  }

  /** Counts a request of `method` (a write of `eventId`), then throws its fault or the event's refusal, if any. */
  private async request(method: Method, eventId?: string): Promise<void> {
    await this.beforeRequest?.();
    const call = this.count(method) + 1;
    this.calls.set(method, call);
    this.sent.push(method);
    const latencyMs = (eventId === undefined ? undefined : this.eventLatencyMs.get(eventId)) ?? this.latencyMs;
    if (latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, latencyMs));
    const fault = this.faults.find((candidate) => candidate.method === method && candidate.at === call);
    if (fault) throw fault.error;
    const refusal = eventId === undefined ? undefined : this.refusing.get(eventId);
    if (refusal) throw refusal;
  }
}

const FOREIGN_FIELDS: OwnedEventFields = {
  summary: 'Dentist',
  location: '',
  description: '',
  start: { dateTime: '2025-10-01T09:00:00', timeZone: 'UTC' },
  end: { dateTime: '2025-10-01T10:00:00', timeZone: 'UTC' },
};

function ours(event: DesiredEvent, marker: EventMarker): Record<string, string> {
  return { [marker.key]: marker.value, [HASH_KEY]: event.hash };
}

function remote(stored: StoredEvent, markerKey: string): RemoteEvent {
  const markerValue = stored.private[markerKey];
  const hash = stored.private[HASH_KEY];
  return {
    id: stored.id,
    cancelled: stored.status === 'cancelled',
    ...(markerValue === undefined ? {} : { markerValue }),
    ...(hash === undefined ? {} : { hash }),
  };
}
