/** Calendars and their events, per user, with Google's rules for ids, deletion, PATCH and listing. */
import { randomBytes } from 'node:crypto';
import {
  deepMerge,
  EVENT_ID,
  type JsonObject,
  matchesProperties,
  validateEvent,
  writableFields,
} from './event-rules.ts';
import { apiErrors } from './reply.ts';

/** A calendar as the fake stores it. */
export interface StoredCalendar {
  id: string;
  owner: string;
  summary: string;
  timeZone: string;
  description?: string;
  etag: string;
  /** Events by id, in insertion order; `seq` orders pages. */
  events: Map<string, { seq: number; resource: JsonObject }>;
}

/** The query of events.list the fake understands. */
export interface ListQuery {
  privateExtendedProperty: string[];
  sharedExtendedProperty: string[];
  showDeleted: boolean;
  maxResults: number;
  pageToken?: string;
}

const BASE32HEX = '0123456789abcdefghijklmnopqrstuv';

/** A random base32hex string (Google's alphabet for generated event ids). */
export function randomBase32hex(length: number): string {
  return [...randomBytes(length)].map((byte) => BASE32HEX[byte % 32]).join('');
}

/** The state of every calendar. `owner` undefined means "the account owner, outside the API" (no checks). */
export class CalendarState {
  private readonly calendars = new Map<string, StoredCalendar>();
  private readonly now: () => number;
  private seq = 0;

  constructor(now: () => number) {
    this.now = now;
  }

  private stamp(): { iso: string; etag: string } {
    this.seq += 1;
    const now = this.now();
    return { iso: new Date(now).toISOString(), etag: `"${now * 1000 + (this.seq % 1000)}"` };
  }

  /** calendars.insert. */
  createCalendar(owner: string, body: JsonObject): JsonObject {
    if (typeof body.summary !== 'string' || body.summary === '') throw apiErrors.required('Missing title.');
    const timeZone = typeof body.timeZone === 'string' ? body.timeZone : 'UTC';
    const id = `c_${randomBytes(16).toString('hex')}@group.calendar.google.com`;
    const calendar: StoredCalendar = {
      id,
      owner,
      summary: body.summary,
      timeZone,
      etag: this.stamp().etag,
      events: new Map(),
    };
    if (typeof body.description === 'string') calendar.description = body.description;
    this.calendars.set(id, calendar);
    return calendarResource(calendar);
  }

  /** The calendar, if `owner` (when given) can see it; else 404 notFound. */
  calendar(owner: string | undefined, calendarId: string): StoredCalendar {
    const calendar = this.calendars.get(calendarId);
    if (!calendar || (owner !== undefined && calendar.owner !== owner)) throw apiErrors.notFound();
    return calendar;
  }

  /** calendars.get. */
  getCalendar(owner: string | undefined, calendarId: string): JsonObject {
    return calendarResource(this.calendar(owner, calendarId));
  }

  /**
   * calendars.patch (only the fields sent change) and calendars.update (the resource replaced: a missing summary
   * is 400 required, like a missing or empty one on insert; an unset description is removed). 404 notFound for a
   * calendar the user cannot see.
   */
  changeCalendar(
    owner: string | undefined,
    calendarId: string,
    body: JsonObject,
    mode: 'patch' | 'update',
  ): JsonObject {
    const calendar = this.calendar(owner, calendarId);
    const summary = body.summary;
    if (summary === '' || (summary === undefined && mode === 'update')) throw apiErrors.required('Missing title.');
    if (summary !== undefined && typeof summary !== 'string') throw apiErrors.invalid('Invalid value for: summary');
    if (typeof summary === 'string') calendar.summary = summary;
    if (typeof body.timeZone === 'string') calendar.timeZone = body.timeZone;
    if (typeof body.description === 'string') calendar.description = body.description;
    else if (mode === 'update') delete calendar.description;
    calendar.etag = this.stamp().etag;
    return calendarResource(calendar);
  }

  /** calendars.delete: the calendar and its events are gone; later requests answer 404. */
  deleteCalendar(owner: string | undefined, calendarId: string): void {
    this.calendar(owner, calendarId);
    this.calendars.delete(calendarId);
  }

  /** Every calendar (of one user). */
  allCalendars(user?: string): StoredCalendar[] {
    return [...this.calendars.values()].filter((calendar) => user === undefined || calendar.owner === user);
  }

  /** events.insert: 409 when the id exists, even as a cancelled event. */
  insertEvent(owner: string | undefined, calendarId: string, body: JsonObject): JsonObject {
    const calendar = this.calendar(owner, calendarId);
    const id = body.id ?? randomBase32hex(26);
    if (typeof id !== 'string' || !EVENT_ID.test(id)) throw apiErrors.invalidId();
    const fields = validateEvent(writableFields(body), calendar.timeZone);
    if (calendar.events.has(id)) throw apiErrors.duplicate();
    const { iso, etag } = this.stamp();
    const resource: JsonObject = {
      kind: 'calendar#event',
      etag,
      id,
      htmlLink: `https://www.google.com/calendar/event?eid=${Buffer.from(`${id} ${calendarId}`).toString('base64url')}`,
      created: iso,
      updated: iso,
      creator: { email: `${calendar.owner}@example.com` },
      organizer: { email: calendarId, displayName: calendar.summary, self: true },
      iCalUID: `${id}@google.com`,
      sequence: 0,
      eventType: 'default',
      ...fields,
    };
    calendar.events.set(id, { seq: this.seq, resource });
    return structuredClone(resource);
  }

  private stored(
    owner: string | undefined,
    calendarId: string,
    eventId: string,
  ): { resource: JsonObject; zone: string } {
    const calendar = this.calendar(owner, calendarId);
    const entry = calendar.events.get(eventId);
    if (!entry) throw apiErrors.notFound();
    return { resource: entry.resource, zone: calendar.timeZone };
  }

  /** events.get: cancelled events are returned too (status `cancelled`); never-existing ids are 404. */
  getEvent(owner: string | undefined, calendarId: string, eventId: string): JsonObject {
    return structuredClone(this.stored(owner, calendarId, eventId).resource);
  }

  /** events.patch: deep merge (objects merge, arrays and scalars replace, null clears), works on cancelled events. */
  patchEvent(owner: string | undefined, calendarId: string, eventId: string, body: JsonObject): JsonObject {
    const { resource, zone } = this.stored(owner, calendarId, eventId);
    const merged = deepMerge(resource, writableFields(body));
    return this.replaceFields(resource, validateEvent(writableFields(merged), zone));
  }

  /** events.update (PUT): the body replaces every writable field; status defaults to confirmed (revives). */
  updateEvent(owner: string | undefined, calendarId: string, eventId: string, body: JsonObject): JsonObject {
    const { resource, zone } = this.stored(owner, calendarId, eventId);
    return this.replaceFields(resource, validateEvent(writableFields(body), zone));
  }

  private replaceFields(resource: JsonObject, fields: JsonObject): JsonObject {
    const timesChanged = JSON.stringify([resource.start, resource.end]) !== JSON.stringify([fields.start, fields.end]);
    const keep = ['kind', 'id', 'htmlLink', 'created', 'creator', 'organizer', 'iCalUID', 'eventType', 'sequence'];
    for (const key of Object.keys(resource)) if (!keep.includes(key)) delete resource[key];
    const { iso, etag } = this.stamp();
    const sequence = typeof resource.sequence === 'number' ? resource.sequence : 0;
    Object.assign(resource, fields, { etag, updated: iso, sequence: timesChanged ? sequence + 1 : sequence });
    return structuredClone(resource);
  }

  /** events.delete: the event stays as `cancelled`; deleting it again is 410, a never-existing id 404. */
  deleteEvent(owner: string | undefined, calendarId: string, eventId: string): void {
    const { resource } = this.stored(owner, calendarId, eventId);
    if (resource.status === 'cancelled') throw apiErrors.deleted();
    const { iso, etag } = this.stamp();
    Object.assign(resource, { status: 'cancelled', updated: iso, etag });
  }

  /** events.list: filters, then pages in insertion order; the page token is the last position served. */
  listEvents(owner: string | undefined, calendarId: string, query: ListQuery): JsonObject {
    const calendar = this.calendar(owner, calendarId);
    const after = query.pageToken === undefined ? 0 : decodePageToken(query.pageToken);
    const matching = [...calendar.events.values()].filter(
      ({ seq, resource }) =>
        seq > after &&
        (query.showDeleted || resource.status !== 'cancelled') &&
        matchesProperties(resource, 'private', query.privateExtendedProperty) &&
        matchesProperties(resource, 'shared', query.sharedExtendedProperty),
    );
    const page = matching.slice(0, query.maxResults);
    const last = page.at(-1);
    const answer: JsonObject = {
      kind: 'calendar#events',
      etag: this.stamp().etag,
      summary: calendar.summary,
      updated: new Date(this.now()).toISOString(),
      timeZone: calendar.timeZone,
      accessRole: 'owner',
      defaultReminders: [{ method: 'popup', minutes: 30 }],
      items: page.map(({ resource }) => structuredClone(resource)),
    };
    if (matching.length > page.length && last)
      answer.nextPageToken = Buffer.from(`seq:${last.seq}`).toString('base64url');
    return answer;
  }
}

function decodePageToken(token: string): number {
  const match = /^seq:(\d+)$/.exec(Buffer.from(token, 'base64url').toString('utf8'));
  if (!match?.[1]) throw apiErrors.invalid('Invalid page token value.');
  return Number(match[1]);
}

function calendarResource(calendar: StoredCalendar): JsonObject {
  const resource: JsonObject = {
    kind: 'calendar#calendar',
    etag: calendar.etag,
    id: calendar.id,
    summary: calendar.summary,
    timeZone: calendar.timeZone,
  };
  if (calendar.description !== undefined) resource.description = calendar.description;
  return resource;
}
