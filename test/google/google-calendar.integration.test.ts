// The Google adapter against the fake Google server, through the real client libraries: every method, every
// error class, one request per call (no library retries), and beforeRequest before each request and page.
import { inspect } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { CalendarClient, EventMarker, RemoteEvent } from '../../src/google/calendar-client.ts';
import {
  CalendarGoneError,
  EventExistsError,
  EventMissingError,
  EventRefusedError,
  GoogleConsentError,
  GooglePermanentError,
  GoogleQuotaError,
  GoogleRateLimitError,
  GoogleTransientError,
} from '../../src/google/errors.ts';
import { HASH_KEY, MARKER_KEY } from '../../src/google/event-marker.ts';
import {
  createGoogleCalendar,
  type GoogleCalendarConfig,
  type GoogleCalendarOptions,
} from '../../src/google/google-calendar.ts';
import { type DesiredEvent, fieldsHash } from '../../src/push/desired-events.ts';
import { eventIdFor } from '../../src/push/event-id.ts';
import { type FakeGoogle, type FaultKind, startFakeGoogle } from '../../testkit/fake-google/index.ts';

const MARKER: EventMarker = { key: MARKER_KEY, value: 'group:4242' };

let fake: FakeGoogle;
let config: GoogleCalendarConfig;

beforeAll(async () => {
  fake = await startFakeGoogle({ seed: 7 });
  config = {
    googleClientId: fake.clientId,
    googleClientSecret: fake.clientSecret,
    googleApiRootUrl: fake.rootUrl,
    googleOauthTokenUrl: fake.tokenUrl,
  };
});
afterAll(() => fake.close());
afterEach(() => fake.clearFaults());

/** A calendar client for a fresh fake user, counting beforeRequest calls. */
function connect(options: GoogleCalendarOptions & { refreshToken?: string } = {}): {
  calendar: CalendarClient;
  before: { calls: number };
  user: string;
} {
  const { user, refreshToken } =
    options.refreshToken === undefined ? fake.addUser() : { user: '', refreshToken: options.refreshToken };
  const before = { calls: 0 };
  const calendar = createGoogleCalendar(
    config,
    refreshToken,
    async () => {
      before.calls += 1;
    },
    options,
  );
  return { calendar, before, user };
}

function desired(uid: string, summary = `Class ${uid}`): DesiredEvent {
  const fields = {
    summary,
    location: 'Room 101',
    description: 'Lecture',
    start: { dateTime: '2025-10-01T09:00:00', timeZone: 'Europe/Warsaw' },
    end: { dateTime: '2025-10-01T10:30:00', timeZone: 'Europe/Warsaw' },
  };
  return { id: eventIdFor(uid), fields, hash: fieldsHash(fields) };
}

async function collect(pages: AsyncIterable<RemoteEvent[]>): Promise<RemoteEvent[]> {
  const out: RemoteEvent[] = [];
  for await (const page of pages) out.push(...page);
  return out;
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => expect.unreachable('expected a rejection'),
    (error: unknown) => error,
  );
}

describe('calendars', () => {
  it('creates, gets and deletes a secondary calendar; a deleted one is gone and deleting again is fine', async () => {
    const { calendar, user } = connect();
    const created = await calendar.createCalendar('Group 4242', 'Europe/Warsaw');
    expect(created).toMatchObject({ summary: 'Group 4242', timeZone: 'Europe/Warsaw' });
    expect(fake.calendars(user).map((c) => c.id)).toEqual([created.id]);
    expect(await calendar.getCalendar(created.id)).toEqual(created);
    await calendar.deleteCalendar(created.id);
    await expect(calendar.getCalendar(created.id)).rejects.toBeInstanceOf(CalendarGoneError);
    await calendar.deleteCalendar(created.id);
  });

  it("another user's calendar is not reachable: CalendarGoneError", async () => {
    const other = await connect().calendar.createCalendar('Theirs', 'UTC');
    await expect(connect().calendar.getCalendar(other.id)).rejects.toBeInstanceOf(CalendarGoneError);
  });
});

describe('events', () => {
  it('inserts with our id, owned fields, marker, hash and default reminders; reads it back', async () => {
    const { calendar } = connect();
    const { id: calendarId } = await calendar.createCalendar('C', 'Europe/Warsaw');
    const event = desired('a');
    await calendar.insertEvent(calendarId, event, MARKER);
    const stored = fake.event(calendarId, event.id);
    expect(stored).toMatchObject({
      id: event.id,
      status: 'confirmed',
      summary: 'Class a',
      location: 'Room 101',
      description: 'Lecture',
    });
    expect(stored?.start).toMatchObject({ timeZone: 'Europe/Warsaw' });
    expect(stored?.reminders).toEqual({ useDefault: true });
    expect(stored?.extendedProperties?.private).toEqual({ [MARKER_KEY]: 'group:4242', [HASH_KEY]: event.hash });
    expect(await calendar.getEvent(calendarId, event.id)).toEqual({
      id: event.id,
      cancelled: false,
      markerValue: 'group:4242',
      hash: event.hash,
    });
    expect(await calendar.getEvent(calendarId, eventIdFor('never'))).toBeUndefined();
    await expect(calendar.insertEvent(calendarId, event, MARKER)).rejects.toBeInstanceOf(EventExistsError);
  });

  it('patches only owned fields, marker and hash: a reminder and a private property of the owner survive', async () => {
    const { calendar } = connect();
    const { id: calendarId } = await calendar.createCalendar('C', 'Europe/Warsaw');
    const event = desired('b');
    await calendar.insertEvent(calendarId, event, MARKER);
    const reminders = { useDefault: false, overrides: [{ method: 'popup', minutes: 15 }] };
    fake.ownerEditEvent(calendarId, event.id, {
      reminders,
      colorId: '5',
      extendedProperties: { private: { mine: 'yes' } },
    });
    const changed = desired('b', 'Moved class');
    await calendar.patchEvent(calendarId, changed, MARKER);
    const stored = fake.event(calendarId, event.id);
    expect(stored).toMatchObject({ summary: 'Moved class', colorId: '5', reminders });
    expect(stored?.extendedProperties?.private).toEqual({
      mine: 'yes',
      [MARKER_KEY]: 'group:4242',
      [HASH_KEY]: changed.hash,
    });
    await expect(calendar.patchEvent(calendarId, desired('missing'), MARKER)).rejects.toBeInstanceOf(EventMissingError);
  });

  it('deletes (410 answers gone, 404 missing, neither throws); a deleted id cannot be inserted again but can be revived', async () => {
    const { calendar } = connect();
    const { id: calendarId } = await calendar.createCalendar('C', 'UTC');
    const event = desired('c');
    await calendar.insertEvent(calendarId, event, MARKER);
    expect(await calendar.deleteEvent(calendarId, event.id)).toBe('deleted');
    expect(await calendar.getEvent(calendarId, event.id)).toMatchObject({ id: event.id, cancelled: true });
    fake.resetCounts();
    expect(await calendar.deleteEvent(calendarId, event.id)).toBe('gone'); // 410 deleted
    expect(await calendar.deleteEvent(calendarId, eventIdFor('never'))).toBe('missing'); // 404 notFound
    expect(fake.counts().errors).toEqual({ '410 deleted': 1, '404 notFound': 1 });
    await expect(calendar.insertEvent(calendarId, event, MARKER)).rejects.toBeInstanceOf(EventExistsError);
    const revived = desired('c', 'Back again');
    await calendar.reviveEvent(calendarId, revived, MARKER);
    expect(fake.event(calendarId, event.id)).toMatchObject({ status: 'confirmed', summary: 'Back again' });
    expect(await calendar.getEvent(calendarId, event.id)).toEqual({
      id: event.id,
      cancelled: false,
      markerValue: 'group:4242',
      hash: revived.hash,
    });
  });

  it('revives an event the owner deleted, with default reminders again', async () => {
    const { calendar } = connect();
    const { id: calendarId } = await calendar.createCalendar('C', 'UTC');
    const event = desired('d');
    await calendar.insertEvent(calendarId, event, MARKER);
    fake.ownerEditEvent(calendarId, event.id, { reminders: { useDefault: false, overrides: [] } });
    fake.ownerDeleteEvent(calendarId, event.id);
    await calendar.reviveEvent(calendarId, event, MARKER);
    expect(fake.event(calendarId, event.id)).toMatchObject({ status: 'confirmed', reminders: { useDefault: true } });
  });

  it('lists every event with our marker, cancelled ones included, page by page with beforeRequest per page', async () => {
    const { calendar, before } = connect({ pageSize: 2 });
    const { id: calendarId } = await calendar.createCalendar('C', 'UTC');
    const ours = ['e1', 'e2', 'e3', 'e4', 'e5'].map((uid) => desired(uid));
    for (const event of ours) await calendar.insertEvent(calendarId, event, MARKER);
    await calendar.insertEvent(calendarId, desired('other'), { key: MARKER_KEY, value: 'teacher:17' });
    fake.ownerInsertEvent(calendarId, {
      summary: 'Dentist',
      start: { dateTime: '2025-10-02T10:00:00Z' },
      end: { dateTime: '2025-10-02T11:00:00Z' },
    });
    await calendar.deleteEvent(calendarId, ours[4]?.id ?? '');
    fake.resetCounts();
    const callsBefore = before.calls;
    const listed = await collect(calendar.listMarkedEvents(calendarId, MARKER));
    const expected = ours.map((event, i) => ({
      id: event.id,
      cancelled: i === 4,
      markerValue: 'group:4242',
      hash: event.hash,
    }));
    expect(listed).toEqual(expected);
    expect(fake.counts().byMethod).toEqual({ 'events.list': 3 });
    expect(before.calls - callsBefore).toBe(3);
  });

  it('an empty list is one request', async () => {
    const { calendar } = connect();
    const { id: calendarId } = await calendar.createCalendar('C', 'UTC');
    fake.resetCounts();
    expect(await collect(calendar.listMarkedEvents(calendarId, MARKER))).toEqual([]);
    expect(fake.counts().total).toBe(1);
  });

  it('a calendar the owner deleted: writes and lists answer CalendarGoneError, an event delete answers missing (404)', async () => {
    const { calendar } = connect();
    const { id: calendarId } = await calendar.createCalendar('C', 'UTC');
    await calendar.insertEvent(calendarId, desired('f0'), MARKER);
    fake.ownerDeleteCalendar(calendarId);
    await expect(calendar.insertEvent(calendarId, desired('f'), MARKER)).rejects.toBeInstanceOf(CalendarGoneError);
    await expect(collect(calendar.listMarkedEvents(calendarId, MARKER))).rejects.toBeInstanceOf(CalendarGoneError);
    // Google cannot tell "never there" from "the calendar is gone" here: the sync asks calendars.get after it.
    expect(await calendar.deleteEvent(calendarId, desired('f0').id)).toBe('missing');
    await expect(calendar.getCalendar(calendarId)).rejects.toBeInstanceOf(CalendarGoneError);
    await calendar.deleteCalendar(calendarId);
  });
});

describe('requests and beforeRequest', () => {
  it('calls beforeRequest once before every API request (token refreshes excluded)', async () => {
    const { calendar, before } = connect();
    fake.resetCounts();
    const { id: calendarId } = await calendar.createCalendar('C', 'UTC');
    await calendar.insertEvent(calendarId, desired('g'), MARKER);
    await calendar.getEvent(calendarId, desired('g').id);
    await calendar.patchEvent(calendarId, desired('g', 'x'), MARKER);
    await calendar.deleteEvent(calendarId, desired('g').id);
    await calendar.deleteEvent(calendarId, desired('g').id);
    const counts = fake.counts();
    expect(counts.total).toBe(6);
    expect(counts.tokenRequests).toBe(1);
    expect(before.calls).toBe(6);
  });

  it('waits for beforeRequest: when it fails, nothing is sent', async () => {
    const { refreshToken } = fake.addUser();
    const calendar = createGoogleCalendar(config, refreshToken, () => Promise.reject(new Error('budget closed')));
    fake.resetCounts();
    await expect(calendar.createCalendar('C', 'UTC')).rejects.toThrow('budget closed');
    expect(fake.counts()).toMatchObject({ total: 0, tokenRequests: 0 });
  });

  it('refreshes an access token Google stopped accepting and retries that request once', async () => {
    const { calendar, before } = connect();
    const { id: calendarId } = await calendar.createCalendar('C', 'UTC');
    fake.expireAccessTokens();
    fake.resetCounts();
    const callsBefore = before.calls;
    expect(await calendar.getCalendar(calendarId)).toMatchObject({ id: calendarId });
    expect(fake.counts()).toMatchObject({ total: 2, tokenRequests: 1, errors: { '401 authError': 1 } });
    expect(before.calls - callsBefore).toBe(2);
  });
});

describe('classification', () => {
  const cases: [FaultKind, new (...args: never[]) => Error, string | undefined][] = [
    ['429', GoogleRateLimitError, 'rateLimitExceeded'],
    ['403-rate', GoogleRateLimitError, 'rateLimitExceeded'],
    ['403-user-rate', GoogleRateLimitError, 'userRateLimitExceeded'],
    ['403-quota', GoogleQuotaError, 'quotaExceeded'],
    ['500', GoogleTransientError, 'backendError'],
    ['503', GoogleTransientError, 'backendError'],
    ['reset', GoogleTransientError, undefined],
  ];
  it.each(cases.map(([kind, errorClass, reason]) => ({ kind, errorClass, name: errorClass.name, reason })))(
    'fault $kind → $name after exactly one request',
    async ({ kind, errorClass, reason }) => {
      // A GET: the library would retry it on 429, 5xx and resets if its retries were on.
      const { calendar } = connect();
      const { id: calendarId } = await calendar.createCalendar('C', 'UTC');
      fake.inject({ kind, methods: ['calendars.get'] });
      fake.resetCounts();
      const error = await rejection(calendar.getCalendar(calendarId));
      expect(error).toBeInstanceOf(errorClass);
      if (reason !== undefined) expect(error).toMatchObject({ reason });
      expect(fake.counts()).toMatchObject({ total: 1, tokenRequests: 0 });
      expect((error as Error).message).toMatch(/^Google calendars\.get: /);
    },
  );

  it('a 429 carries Retry-After in milliseconds', async () => {
    const { calendar } = connect();
    fake.inject({ kind: '429', methods: ['calendars.insert'] });
    expect(await rejection(calendar.createCalendar('C', 'UTC'))).toMatchObject({ status: 429, retryAfterMs: 1000 });
  });

  it('the per-user quota (600/min at Google) answers GoogleRateLimitError', async () => {
    const small = await startFakeGoogle({ userQuotaPerMinute: 2 });
    try {
      const { refreshToken } = small.addUser();
      const smallConfig = { ...config, googleApiRootUrl: small.rootUrl, googleOauthTokenUrl: small.tokenUrl };
      const calendar = createGoogleCalendar(smallConfig, refreshToken, async () => undefined);
      const { id } = await calendar.createCalendar('C', 'UTC');
      await calendar.getCalendar(id);
      expect(await rejection(calendar.getCalendar(id))).toMatchObject({
        name: 'GoogleRateLimitError',
        status: 403,
        reason: 'userRateLimitExceeded',
      });
      expect(small.counts().quotaErrors).toBe(1);
    } finally {
      await small.close();
    }
  });

  it('a timeout is transient, one request', async () => {
    const { calendar } = connect({ timeoutMs: 1_000 });
    await calendar.createCalendar('warm-up', 'UTC');
    fake.latency(3_000);
    fake.resetCounts();
    expect(await rejection(calendar.createCalendar('C', 'UTC'))).toMatchObject({
      name: 'GoogleTransientError',
      message: 'Google calendars.insert: timed out',
    });
    expect(fake.counts().total).toBe(1);
  });

  it('a revoked refresh token: GoogleConsentError, no API request, and the token is not in the error', async () => {
    const { refreshToken } = fake.addUser();
    fake.revoke(refreshToken);
    const { calendar } = connect({ refreshToken });
    fake.resetCounts();
    const error = await rejection(calendar.createCalendar('C', 'UTC'));
    expect(error).toBeInstanceOf(GoogleConsentError);
    expect(error).toMatchObject({ status: 400, reason: 'invalid_grant' });
    expect(fake.counts()).toMatchObject({ total: 0, tokenRequests: 1 });
    expect(inspect(error, { depth: 20 })).not.toContain(refreshToken);
  });

  it('a token endpoint 500 is transient and not retried by the library', async () => {
    const { calendar } = connect();
    fake.inject({ kind: '500', methods: ['token'] });
    fake.resetCounts();
    expect(await rejection(calendar.createCalendar('C', 'UTC'))).toBeInstanceOf(GoogleTransientError);
    expect(fake.counts()).toMatchObject({ total: 0, tokenRequests: 1 });
  });

  it('a grant without the calendar scope: GoogleConsentError (403 insufficientPermissions)', async () => {
    const { refreshToken } = fake.addUser({ scopes: ['openid'] });
    const error = await rejection(connect({ refreshToken }).calendar.createCalendar('C', 'UTC'));
    expect(error).toBeInstanceOf(GoogleConsentError);
    expect(error).toMatchObject({ status: 403, reason: 'insufficientPermissions' });
  });

  it('a wrong client secret is our misconfiguration, not the user: GooglePermanentError', async () => {
    const { refreshToken } = fake.addUser();
    const calendar = createGoogleCalendar(
      { ...config, googleClientSecret: 'wrong' },
      refreshToken,
      async () => undefined,
    );
    expect(await rejection(calendar.createCalendar('C', 'UTC'))).toMatchObject({
      name: 'GooglePermanentError',
      status: 401,
      reason: 'invalid_client',
    });
    // Also during an event write: the client is the problem, not the event (a push stops instead of refusing events one
    // by one).
    expect(await rejection(calendar.insertEvent('any@group.calendar.google.com', desired('c'), MARKER))).toMatchObject({
      name: 'GooglePermanentError',
      reason: 'invalid_client',
    });
  });

  it('an invalid event id is a permanent 400 of that event alone (EventRefusedError)', async () => {
    const { calendar } = connect();
    const { id: calendarId } = await calendar.createCalendar('C', 'UTC');
    const bad = { ...desired('i'), id: 'NOT-base32hex' };
    expect(await rejection(calendar.insertEvent(calendarId, bad, MARKER))).toMatchObject({
      name: 'EventRefusedError',
      status: 400,
      reason: 'invalid',
    });
  });

  /** Each write of one event, as the sync sends it. */
  const writes: Record<
    string,
    (calendar: CalendarClient, calendarId: string, event: DesiredEvent) => Promise<unknown>
  > = {
    'events.insert': (calendar, calendarId, event) => calendar.insertEvent(calendarId, event, MARKER),
    'events.patch': (calendar, calendarId, event) => calendar.patchEvent(calendarId, event, MARKER),
    'events.update': (calendar, calendarId, event) => calendar.reviveEvent(calendarId, event, MARKER),
    'events.delete': (calendar, calendarId, event) => calendar.deleteEvent(calendarId, event.id),
  };
  // Only answers about the event itself may leave the other events to be written; losing writer access must stop the
  // push.
  const answers: [FaultKind, number, string, typeof EventRefusedError | typeof GooglePermanentError][] = [
    ['400', 400, 'invalid', EventRefusedError],
    ['403-non-organizer', 403, 'forbiddenForNonOrganizer', EventRefusedError],
    ['403-forbidden', 403, 'forbidden', GooglePermanentError],
    ['403-required-access', 403, 'requiredAccessLevel', GooglePermanentError],
  ];
  const writeCases = Object.keys(writes).flatMap((method) =>
    answers.map(([kind, status, reason, errorClass]) => ({
      method,
      kind,
      status,
      reason,
      errorClass,
      name: errorClass.name,
    })),
  );
  it.each(writeCases)(
    '$method answering $status $reason → $name',
    async ({ method, kind, status, reason, errorClass, name }) => {
      const { calendar } = connect();
      const { id: calendarId } = await calendar.createCalendar('C', 'UTC');
      // The event exists, so that without the fault every write would succeed.
      const event = desired(`w-${method}-${kind}`);
      await calendar.insertEvent(calendarId, event, MARKER);
      fake.inject({ kind, methods: [method], eventIds: [event.id] });
      fake.resetCounts();
      const error = await rejection((writes[method] ?? expect.unreachable(method))(calendar, calendarId, event));
      expect(error).toBeInstanceOf(errorClass);
      // By name, not instanceof alone: EventRefusedError is a GooglePermanentError too.
      expect(error).toMatchObject({ name, status, reason });
      expect(fake.counts()).toMatchObject({ total: 1, errors: { [`${status} ${reason}`]: 1 } });
    },
  );
});
