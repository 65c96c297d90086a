import { describe, expect, it } from 'vitest';
import { client, eventBody, failure, fake, googleError, userWithCalendar } from './helpers.ts';

describe('fake Google: calendars', () => {
  it('creates, reads and deletes a calendar; afterwards it is 404 notFound', async () => {
    const google = await fake();
    const { api, user, calendarId } = await userWithCalendar(google);
    expect(calendarId).toMatch(/^c_[0-9a-f]{32}@group\.calendar\.google\.com$/);
    const got = await api.calendars.get({ calendarId });
    expect(got.data).toMatchObject({ id: calendarId, summary: 'Group 4242', timeZone: 'Europe/Moscow' });
    expect(google.calendars(user)).toEqual([
      { id: calendarId, owner: user, summary: 'Group 4242', timeZone: 'Europe/Moscow' },
    ]);
    const deleted = await api.calendars.delete({ calendarId });
    expect(deleted.status).toBe(204);
    expect(await failure(api.calendars.get({ calendarId }))).toMatchObject({
      status: 404,
      body: googleError(404, 'notFound'),
    });
    expect(await failure(api.events.list({ calendarId }))).toMatchObject({ status: 404 });
    expect(google.calendars()).toEqual([]);
  });

  it('patches and updates a calendar like Google: a title is required, other users get 404', async () => {
    const google = await fake();
    const { api, user, calendarId } = await userWithCalendar(google);
    const patched = await api.calendars.patch({ calendarId, requestBody: { summary: '09-351' } });
    expect(patched.data).toMatchObject({ id: calendarId, summary: '09-351', timeZone: 'Europe/Moscow' });
    expect(google.calendars(user)[0]).toMatchObject({ summary: '09-351', timeZone: 'Europe/Moscow' });
    // PATCH changes only what it is given; PUT replaces the resource and needs its title.
    await api.calendars.patch({ calendarId, requestBody: { description: 'Расписание' } });
    expect((await api.calendars.get({ calendarId })).data).toMatchObject({
      summary: '09-351',
      description: 'Расписание',
    });
    const updated = await api.calendars.update({ calendarId, requestBody: { summary: '09-352', timeZone: 'UTC' } });
    expect(updated.data).toMatchObject({ summary: '09-352', timeZone: 'UTC' });
    expect(updated.data.description).toBeUndefined();
    for (const call of [
      api.calendars.patch({ calendarId, requestBody: { summary: '' } }),
      api.calendars.update({ calendarId, requestBody: { timeZone: 'UTC' } }),
    ])
      expect(await failure(call)).toMatchObject({ status: 400, body: googleError(400, 'required') });
    const other = client(google, google.addUser().refreshToken);
    expect(await failure(other.calendars.patch({ calendarId, requestBody: { summary: 'x' } }))).toMatchObject({
      status: 404,
      body: googleError(404, 'notFound'),
    });
    expect(google.counts().byMethod).toMatchObject({ 'calendars.patch': 4, 'calendars.update': 2 });
  });

  it('hides calendars of other users (scope calendar.app.created) and requires a title', async () => {
    const google = await fake();
    const { calendarId } = await userWithCalendar(google);
    const other = client(google, google.addUser().refreshToken);
    expect(await failure(other.calendars.get({ calendarId }))).toMatchObject({
      status: 404,
      body: googleError(404, 'notFound'),
    });
    expect(await failure(other.events.insert({ calendarId, requestBody: eventBody('abcde') }))).toMatchObject({
      status: 404,
    });
    expect(await failure(other.calendars.insert({ requestBody: { timeZone: 'UTC' } }))).toMatchObject({
      status: 400,
      body: googleError(400, 'required'),
    });
  });

  it('answers 404 for a calendar the owner deleted in the UI', async () => {
    const google = await fake();
    const { api, calendarId } = await userWithCalendar(google);
    await api.events.insert({ calendarId, requestBody: eventBody('abcde') });
    google.ownerDeleteCalendar(calendarId);
    expect(await failure(api.events.insert({ calendarId, requestBody: eventBody('abcdf') }))).toMatchObject({
      status: 404,
    });
    // An event of the deleted calendar is 404 too, like a never-used id (not 410 like a deleted event).
    expect(await failure(api.events.delete({ calendarId, eventId: 'abcde' }))).toMatchObject({
      status: 404,
      body: googleError(404, 'notFound'),
    });
  });
});

describe('fake Google: events', () => {
  it('inserts with our id and answers the full resource, dateTime normalised to the zone offset', async () => {
    const google = await fake();
    const { api, calendarId } = await userWithCalendar(google);
    const { data } = await api.events.insert({
      calendarId,
      requestBody: eventBody('0123456789abcdefghijklmnopqrstuv'),
    });
    expect(data).toMatchObject({
      kind: 'calendar#event',
      id: '0123456789abcdefghijklmnopqrstuv',
      status: 'confirmed',
      start: { dateTime: '2025-10-01T09:00:00+03:00', timeZone: 'Europe/Moscow' },
      end: { dateTime: '2025-10-01T10:30:00+03:00', timeZone: 'Europe/Moscow' },
      reminders: { useDefault: true },
      extendedProperties: { private: { timetableSync: 'group:4242', timetableSyncHash: 'h1' } },
      sequence: 0,
      iCalUID: '0123456789abcdefghijklmnopqrstuv@google.com',
    });
    expect(typeof data.etag).toBe('string');
    expect((await api.events.get({ calendarId, eventId: data.id ?? '' })).data).toEqual(data);
    expect(google.event(calendarId, data.id ?? '')).toEqual(data);
  });

  it.each(['ABCDE', 'abcd', 'abcdw', 'abc-def', 'x'.repeat(6), '0'.repeat(1025)])(
    'refuses the event id %j with 400 invalid',
    async (id) => {
      const google = await fake();
      const { api, calendarId } = await userWithCalendar(google);
      const answer = await failure(api.events.insert({ calendarId, requestBody: eventBody(id) }));
      expect(answer).toMatchObject({ status: 400, body: googleError(400, 'invalid') });
      expect(answer.body).toMatchObject({ error: { message: 'Invalid resource id value.' } });
    },
  );

  it('validates times as Google does', async () => {
    const google = await fake();
    const { api, calendarId } = await userWithCalendar(google);
    const noZone = eventBody('abcde', { start: { dateTime: '2025-10-01T09:00:00' } });
    expect(await failure(api.events.insert({ calendarId, requestBody: noZone }))).toMatchObject({
      status: 400,
      body: googleError(400, 'required'),
    });
    const { end: _end, ...noEnd } = eventBody('abcde');
    expect(await failure(api.events.insert({ calendarId, requestBody: noEnd }))).toMatchObject({ status: 400 });
    const backwards = eventBody('abcde', { end: { dateTime: '2025-10-01T08:00:00+03:00' } });
    expect(await failure(api.events.insert({ calendarId, requestBody: backwards }))).toMatchObject({ status: 400 });
    const offset = eventBody('abcde', {
      start: { dateTime: '2025-10-01T06:00:00Z' },
      end: { dateTime: '2025-10-01T07:00:00Z' },
    });
    const { data } = await api.events.insert({ calendarId, requestBody: offset });
    expect(data.start).toEqual({ dateTime: '2025-10-01T09:00:00+03:00' }); // the calendar's zone
  });

  it('keeps a deleted event as cancelled: get shows it, delete again is 410, insert again is 409', async () => {
    const google = await fake();
    const { api, calendarId } = await userWithCalendar(google);
    await api.events.insert({ calendarId, requestBody: eventBody('abcde') });
    expect((await api.events.delete({ calendarId, eventId: 'abcde' })).status).toBe(204);
    expect((await api.events.get({ calendarId, eventId: 'abcde' })).data.status).toBe('cancelled');
    expect(await failure(api.events.delete({ calendarId, eventId: 'abcde' }))).toMatchObject({
      status: 410,
      body: googleError(410, 'deleted'),
    });
    expect(await failure(api.events.insert({ calendarId, requestBody: eventBody('abcde') }))).toMatchObject({
      status: 409,
      body: googleError(409, 'duplicate'),
    });
    expect(google.events(calendarId)).toEqual([]);
    expect(google.events(calendarId, { includeCancelled: true }).map((event) => event.status)).toEqual(['cancelled']);
  });

  it('answers 404 notFound for get, patch, update and delete of an id never used', async () => {
    const google = await fake();
    const { api, calendarId } = await userWithCalendar(google);
    const id = { calendarId, eventId: 'neverused' };
    for (const call of [
      api.events.get(id),
      api.events.patch({ ...id, requestBody: { summary: 'x' } }),
      api.events.update({ ...id, requestBody: eventBody('neverused') }),
      api.events.delete(id),
    ]) {
      expect(await failure(call)).toMatchObject({ status: 404, body: googleError(404, 'notFound') });
    }
  });

  it('patch deep-merges: the owner’s reminders and private properties survive, arrays replace, null clears', async () => {
    const google = await fake();
    const { api, calendarId } = await userWithCalendar(google);
    await api.events.insert({ calendarId, requestBody: eventBody('abcde', { colorId: '5' }) });
    google.ownerEditEvent(calendarId, 'abcde', {
      reminders: { useDefault: false, overrides: [{ method: 'popup', minutes: 10 }] },
      extendedProperties: { private: { ownerNote: 'bring laptop' } },
    });
    const { data } = await api.events.patch({
      calendarId,
      eventId: 'abcde',
      requestBody: {
        summary: 'Moved',
        start: { dateTime: '2025-10-01T11:00:00', timeZone: 'Europe/Moscow' },
        end: { dateTime: '2025-10-01T12:30:00', timeZone: 'Europe/Moscow' },
        extendedProperties: { private: { timetableSyncHash: 'h2' } },
        colorId: null,
      } as never,
    });
    expect(data).toMatchObject({
      summary: 'Moved',
      location: 'Room 101',
      reminders: { useDefault: false, overrides: [{ method: 'popup', minutes: 10 }] },
      extendedProperties: {
        private: { timetableSync: 'group:4242', timetableSyncHash: 'h2', ownerNote: 'bring laptop' },
      },
      start: { dateTime: '2025-10-01T11:00:00+03:00' },
      sequence: 1,
    });
    expect(data.colorId).toBeUndefined();
    const replaced = await api.events.patch({
      calendarId,
      eventId: 'abcde',
      requestBody: { reminders: { overrides: [] } },
    });
    expect(replaced.data.reminders).toEqual({ useDefault: false, overrides: [] });
  });

  it('update (PUT) replaces every writable field and revives a cancelled event', async () => {
    const google = await fake();
    const { api, calendarId } = await userWithCalendar(google);
    const first = await api.events.insert({ calendarId, requestBody: eventBody('abcde', { colorId: '5' }) });
    google.ownerDeleteEvent(calendarId, 'abcde');
    const { data } = await api.events.update({
      calendarId,
      eventId: 'abcde',
      requestBody: eventBody('abcde', { summary: 'Back' }),
    });
    expect(data).toMatchObject({ id: 'abcde', status: 'confirmed', summary: 'Back', created: first.data.created });
    expect(data.colorId).toBeUndefined();
    expect(data.etag).not.toBe(first.data.etag);
    const cancelled = await api.events.update({
      calendarId,
      eventId: 'abcde',
      requestBody: eventBody('abcde', { status: 'cancelled' }),
    });
    expect(cancelled.data.status).toBe('cancelled');
  });
});

describe('fake Google: owner actions and inspection', () => {
  it('are not counted and name what is missing', async () => {
    const google = await fake();
    const { calendarId } = await userWithCalendar(google);
    google.resetCounts();
    const own = google.ownerInsertEvent(calendarId, {
      summary: 'Dentist',
      start: { date: '2025-10-02' },
      end: { date: '2025-10-03' },
    });
    expect(own.id).toMatch(/^[0-9a-v]{26}$/);
    expect(own.extendedProperties).toBeUndefined();
    expect(google.event(calendarId, 'neverused')).toBeUndefined();
    expect(() => google.events('c_missing@group.calendar.google.com')).toThrow(/calendar c_missing.*Not Found/);
    google.ownerDeleteEvent(calendarId, own.id);
    expect(() => google.ownerDeleteEvent(calendarId, own.id)).toThrow(/Resource has been deleted/);
    expect(google.counts().total).toBe(0);
  });
});
