/**
 * Google push end to end: the simulator's timetable, real refresh and push workers on real Redis, the real
 * Google adapter talking HTTP to the fake Google server. Write counts come from the fake, which sees every
 * request the service sends.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { RefreshJobResult } from '../../src/jobs/contract.ts';
import { enqueueRefresh } from '../../src/jobs/queues.ts';
import { eventIdFor } from '../../src/push/event-id.ts';
import { FOREIGN } from '../../src/push/push-diff.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { occurrenceUid } from '../../src/timetable/expand.ts';
import type { SourceKey } from '../../src/timetable/source.ts';
import type { FakeEvent } from '../../testkit/fake-google/index.ts';
import { readEvents } from '../jobs/helpers.ts';
import { jobEnded } from '../support/jobs.ts';
import { storedIcs } from '../support/stored-feed.ts';
import { type Connected, PushHarness } from './push-harness.ts';

let h: PushHarness;

beforeAll(async () => {
  h = await PushHarness.start();
});
afterAll(async () => {
  await h?.close();
});
beforeEach(() => {
  h.fake.clearFaults();
  h.fake.resetCounts();
});

const json = { 'content-type': 'application/json' };
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what is looked for.
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f]/;

/** Moves a class to 18:00–19:30 in the simulator. */
async function moveClass(entryId: number): Promise<void> {
  await h.sim.raw(`/_sim/entries/${entryId}`, {
    method: 'PATCH',
    headers: json,
    body: JSON.stringify({ begin_time_schedule: '18:00', end_time_schedule: '19:30' }),
  });
}

/** A connected small group with one extra one-day class already pushed; counters zeroed afterwards. */
async function withOneDayClass(): Promise<{ target: Connected; entryId: number; eventId: string; pushes: number }> {
  const source = await h.smallGroup(1);
  const { target } = await h.connect(source);
  const added = await h.addOneDayClass(source);
  await h.refresh(source);
  const [, push] = await h.settled(target.id, 2);
  expect(push?.result).toMatchObject({ inserted: 1, writes: 1, reads: 0 });
  expect(h.fake.event(target.calendarId, added.eventId)).toMatchObject({
    status: 'confirmed',
    summary: expect.stringContaining('Extra seminar'),
  });
  h.fake.resetCounts();
  return { target, ...added, pushes: 2 };
}

/** Refreshes a source with another context's workers (see `restartedWith`). */
async function refreshWith(ctx: ServiceContext, source: SourceKey): Promise<unknown> {
  const id = await enqueueRefresh(ctx.queues, ctx.config, source, { reason: 'resync', now: h.clock.now });
  const { job, state } = await jobEnded(ctx.queues.refresh, id);
  expect(state).toBe('completed');
  return job.returnvalue;
}

describe('Google push through the adapter and the fake Google', () => {
  it("first sync: the new calendar holds exactly the feed's confirmed classes, one insert each", async () => {
    const source = await h.smallGroup(2);
    const { target, push } = await h.connect(source);
    expect(push).toMatchObject({ state: 'completed', attemptsMade: 1 });
    const desired = await h.desired(source);
    expect(desired.length).toBeGreaterThan(5);
    // The feed as ical.js reads it says the same as the occurrences the push worked from.
    expect(await h.feedEvents(source)).toEqual(desired);
    expect(h.calendar(target.calendarId)).toEqual(desired);
    const counts = h.fake.counts();
    expect(counts.byMethod).toEqual({ 'calendars.insert': 1, 'events.list': 1, 'events.insert': desired.length });
    expect(counts.errors).toEqual({});
    // One token per adapter: the connection's, the push's.
    expect(counts.tokenRequests).toBe(2);
    expect(push.result).toMatchObject({
      reconciled: true,
      desired: desired.length,
      inserted: desired.length,
      writes: desired.length,
      reads: 1,
    });
    expect(h.fake.calendars(target.user)).toEqual([
      expect.objectContaining({ id: target.calendarId, timeZone: h.ctx.config.timezone }),
    ]);
    for (const event of h.fake.events(target.calendarId)) {
      expect(event.extendedProperties?.private).toMatchObject({
        timetableSync: source,
        timetableSyncHash: expect.any(String),
      });
      expect(event.start.timeZone).toBe(h.ctx.config.timezone);
      expect(event.reminders).toEqual({ useDefault: true });
    }
    expect(await h.ctx.google.targets.index(target.id).size()).toBe(desired.length);
    expect(await h.ctx.google.targets.get(target.id)).toMatchObject({
      status: 'active',
      reconcileRequested: false,
      lastPush: { reason: 'connect', inserted: desired.length },
    });
  });

  it('a moved class is exactly one events.patch and no other request', async () => {
    const { target, entryId, eventId, pushes } = await withOneDayClass();
    await moveClass(entryId);
    await h.refresh(target.source);
    const push = (await h.settled(target.id, pushes + 1)).at(-1);
    expect(push?.result).toMatchObject({ patched: 1, inserted: 0, deleted: 0, writes: 1, reads: 0 });
    const counts = h.fake.counts();
    expect(counts.byMethod).toEqual({ 'events.patch': 1 });
    expect(counts.total).toBe(1);
    expect(h.fake.event(target.calendarId, eventId)?.start.dateTime).toMatch(/^2025-10-15T18:00:00/);
    expect(h.calendar(target.calendarId)).toEqual(await h.desired(target.source));
  });

  it('a cancelled class is one events.patch titling it cancelled, and one events.delete when it leaves the feed', async () => {
    const { target, entryId, eventId, pushes } = await withOneDayClass();
    const before = h.fake.event(target.calendarId, eventId)?.summary;
    await h.sim.deleteEntry(entryId);
    const refresh = (await h.refresh(target.source)) as RefreshJobResult;
    expect(refresh).toMatchObject({ outcome: 'published', changes: { removed: 1, moved: 0, added: 0, changed: 0 } });
    const push = (await h.settled(target.id, pushes + 1)).at(-1);
    expect(push?.result).toMatchObject({ patched: 1, deleted: 0, writes: 1, reads: 0 });
    expect(h.fake.counts().byMethod).toEqual({ 'events.patch': 1 });
    expect(h.fake.event(target.calendarId, eventId)).toMatchObject({
      status: 'confirmed',
      summary: `Отменено: ${before}`,
    });
    expect(h.calendar(target.calendarId)).toEqual(await h.desired(target.source));
    // Once CANCELLED_RETENTION has passed, the class leaves the feed, and Google deletes it.
    h.fake.resetCounts();
    h.clock.now += h.ctx.config.cancelledRetentionMs + 60_000;
    try {
      await h.refresh(target.source);
      const gone = (await h.settled(target.id, pushes + 2)).at(-1);
      expect(gone?.result).toMatchObject({ deleted: 1, writes: 1 });
      expect(h.fake.counts().byMethod).toEqual({ 'events.delete': 1 });
      expect(h.fake.event(target.calendarId, eventId)?.status).toBe('cancelled');
      expect(h.calendar(target.calendarId).some((event) => event.id === eventId)).toBe(false);
    } finally {
      h.clock.now -= h.ctx.config.cancelledRetentionMs + 60_000;
    }
  });

  it('a cancelled class whose time came while the feed showed it stays, cancelled, in the feed and Google', async () => {
    const { target, entryId, eventId, pushes } = await withOneDayClass();
    const start = h.clock.now;
    // Cancelled on 10 October: CANCELLED_RETENTION (14 days) outlasts the class of 15 October.
    h.clock.now = Date.parse('2025-10-10T12:00:00Z');
    try {
      await h.sim.deleteEntry(entryId);
      await h.refresh(target.source);
      await h.settled(target.id, pushes + 1);
      const cancelled = h.fake.event(target.calendarId, eventId);
      expect(cancelled?.summary).toMatch(/^Отменено: /);
      h.fake.resetCounts();
      h.clock.now = Date.parse('2025-10-25T12:00:00Z');
      // Nothing expires: the feed is not even rendered again, and Google keeps the event as it was.
      expect(await h.refresh(target.source)).toMatchObject({ outcome: 'unchanged', pushJobs: 0 });
      const feed = readEvents(await storedIcs(h.ctx.feeds, target.source));
      expect(feed.filter((event) => event.uid.startsWith(`${entryId}-`))).toEqual([
        expect.objectContaining({ status: 'CANCELLED', summary: cancelled?.summary }),
      ]);
      const reconcile = await h.push(target, 'reconcile');
      expect(reconcile.result).toMatchObject({ writes: 0 });
      expect(h.fake.event(target.calendarId, eventId)).toEqual(cancelled);
      expect(h.calendar(target.calendarId)).toEqual(await h.desired(target.source));
    } finally {
      h.clock.now = start;
    }
  });

  it('the past is history: a room change and a deletion leave ended events untouched in the feed and Google', async () => {
    const source = await h.smallGroup(1);
    // Two classes of the whole autumn term: a month of them has taken place by the test clock (1 October).
    const termLong = (day: number, subject: string) =>
      h.sim.addEntry({
        groupIds: [Number(source.split(':')[1])],
        subject_name: subject,
        start_day_schedule: '2025-09-01',
        finish_day_schedule: '2025-12-28',
        day_week_schedule: day,
        time_interval_id: 3,
      });
    const moved = await termLong(2, 'Term seminar');
    const deleted = await termLong(4, 'Term lecture');
    const { target } = await h.connect(source);
    const now = h.clock.now;
    const entryOf = new Map<string, number>();
    for (const occurrence of await h.occurrences(source)) entryOf.set(eventIdFor(occurrence.uid), occurrence.entryId);
    const ofEntry = (id: number) => (event: { id: string }) => entryOf.get(event.id) === id;
    const ended = (event: FakeEvent) => Date.parse(event.end.dateTime ?? '') <= now;
    const before = h.fake.events(target.calendarId);
    const endedBefore = before.filter(ended);
    expect(endedBefore.filter(ofEntry(moved.id)).length).toBeGreaterThan(0);
    expect(endedBefore.filter(ofEntry(deleted.id)).length).toBeGreaterThan(0);
    const feedEnded = async () =>
      readEvents(await storedIcs(h.ctx.feeds, source)).filter((event) => Date.parse(event.end) <= now);
    const feedBefore = await feedEnded();
    expect(feedBefore.length).toBe(endedBefore.length);
    h.fake.resetCounts();

    await h.sim.raw(`/_sim/entries/${moved.id}`, {
      method: 'PATCH',
      headers: json,
      body: JSON.stringify({ num_auditorium_schedule: '999' }),
    });
    await h.sim.deleteEntry(deleted.id);
    const refresh = (await h.refresh(source)) as RefreshJobResult;
    const push = (await h.settled(target.id, 2)).at(-1);
    const coming = (id: number) => before.filter(ofEntry(id)).filter((event) => !ended(event)).length;
    expect(refresh.changes).toEqual({ added: 0, removed: coming(deleted.id), moved: coming(moved.id), changed: 0 });
    // The coming classes of the deleted entry stay in Google, retitled as cancelled, while the feed keeps them.
    expect(push?.result).toMatchObject({ patched: coming(moved.id) + coming(deleted.id), deleted: 0, inserted: 0 });
    const comingDeleted = h.fake
      .events(target.calendarId)
      .filter(ofEntry(deleted.id))
      .filter((event) => !ended(event));
    expect(comingDeleted.length).toBe(coming(deleted.id));
    expect(comingDeleted.every((event) => event.summary?.startsWith('Отменено: '))).toBe(true);

    // Google: every ended event exactly as it was, none patched or deleted.
    expect(h.fake.events(target.calendarId).filter(ended)).toEqual(endedBefore);
    expect(h.calendar(target.calendarId)).toEqual(await h.desired(source));
    const comingMoved = h.fake
      .events(target.calendarId)
      .filter(ofEntry(moved.id))
      .filter((event) => !ended(event));
    expect(comingMoved.every((event) => event.location?.endsWith('999'))).toBe(true);
    // The feed: the same classes before the refresh, CONFIRMED, the same SEQUENCE.
    expect(await feedEnded()).toEqual(feedBefore);
    expect(feedBefore.every((event) => event.status === 'CONFIRMED')).toBe(true);
  });

  it('a class added on a date already past reaches Google with the refresh that shows it in the feed', async () => {
    const source = await h.smallGroup(1);
    const { target } = await h.connect(source);
    const pushes = (await h.settled(target.id, 1)).length;
    // 15 September has ended by the test clock (1 October): the new entry has no past to keep, so the feed
    // shows it, while the change record (what changes from now on) is empty.
    const date = '2025-09-15';
    const { id } = await h.sim.addEntry({
      groupIds: [Number(source.split(':')[1])],
      subject_name: 'Makeup seminar',
      start_day_schedule: date,
      finish_day_schedule: date,
      day_week_schedule: 1,
      time_interval_id: 2,
    });
    h.fake.resetCounts();
    const refresh = (await h.refresh(source)) as RefreshJobResult;
    expect(refresh).toMatchObject({ outcome: 'published', pushJobs: 1 });
    expect(refresh.changes).toBeUndefined();
    const [push] = (await h.settled(target.id, pushes + 1)).slice(pushes);
    expect(push?.result).toMatchObject({ inserted: 1, writes: 1 });
    expect(h.fake.event(target.calendarId, eventIdFor(occurrenceUid(id, date)))).toMatchObject({
      summary: expect.stringContaining('Makeup seminar'),
    });
    expect(h.calendar(target.calendarId)).toEqual(await h.desired(source));
  });

  it('new settings re-title the cancelled classes in Google: CANCELLED_TITLE_PREFIX changed, then emptied', async () => {
    const { target, entryId, eventId, pushes } = await withOneDayClass();
    const before = h.fake.event(target.calendarId, eventId)?.summary;
    await h.sim.deleteEntry(entryId);
    await h.refresh(target.source);
    await h.settled(target.id, pushes + 1);
    expect(h.fake.event(target.calendarId, eventId)?.summary).toBe(`Отменено: ${before}`);
    h.fake.resetCounts();
    // Same timetable, new settings: the feed is rendered again, and Google must follow without a reconcile.
    await h.restartedWith({ CANCELLED_TITLE_PREFIX: '[X] ' }, async (ctx) => {
      const refresh = (await refreshWith(ctx, target.source)) as RefreshJobResult;
      expect(refresh).toMatchObject({ outcome: 'published', pushJobs: 1 });
      const push = (await h.settled(target.id, pushes + 2)).at(-1);
      expect(push?.result).toMatchObject({ reconciled: false, patched: 1, writes: 1, reads: 0 });
      expect(h.fake.event(target.calendarId, eventId)).toMatchObject({ status: 'confirmed', summary: `[X] ${before}` });
    });
    expect(h.fake.counts().byMethod).toEqual({ 'events.patch': 1 });
    // Emptied: cancelled classes are no longer shown as events, so Google deletes them.
    await h.restartedWith({ CANCELLED_TITLE_PREFIX: '' }, async (ctx) => {
      await refreshWith(ctx, target.source);
      const push = (await h.settled(target.id, pushes + 3)).at(-1);
      expect(push?.result).toMatchObject({ deleted: 1, writes: 1 });
      expect(h.fake.event(target.calendarId, eventId)?.status).toBe('cancelled');
    });
  });

  it('an unchanged timetable costs no write: a resync queues no push, a push and a reconcile write nothing', async () => {
    const source = await h.smallGroup(2);
    const { target } = await h.connect(source);
    h.fake.resetCounts();
    expect(await h.refresh(source)).toMatchObject({ outcome: 'unchanged', pushJobs: 0 });
    const push = await h.push(target, 'refresh');
    expect(push.result).toMatchObject({
      reconciled: false,
      writes: 0,
      reads: 0,
      unchanged: (await h.desired(source)).length,
    });
    expect(h.fake.counts()).toMatchObject({ total: 0, tokenRequests: 0 });
    const reconcile = await h.push(target, 'reconcile');
    expect(reconcile.result).toMatchObject({ reconciled: true, writes: 0, reads: 1 });
    const counts = h.fake.counts();
    expect(counts.byMethod).toEqual({ 'events.list': 1 });
    expect(counts.writes).toBe(0);
    expect(h.calendar(target.calendarId)).toEqual(await h.desired(source));
  });

  it('a reminder, a colour and a private property the user added survive a patch', async () => {
    const { target, entryId, eventId, pushes } = await withOneDayClass();
    const reminders = { useDefault: false, overrides: [{ method: 'popup', minutes: 42 }] };
    h.fake.ownerEditEvent(target.calendarId, eventId, {
      reminders,
      colorId: '11',
      extendedProperties: { private: { userNote: 'bring a laptop' } },
    });
    await moveClass(entryId);
    await h.refresh(target.source);
    await h.settled(target.id, pushes + 1);
    expect(h.fake.counts().byMethod).toEqual({ 'events.patch': 1 });
    const event = h.fake.event(target.calendarId, eventId);
    expect(event?.start.dateTime).toMatch(/^2025-10-15T18:00:00/);
    expect(event).toMatchObject({ reminders, colorId: '11' });
    expect(event?.extendedProperties?.private).toMatchObject({
      userNote: 'bring a laptop',
      timetableSync: target.source,
    });
  });

  it('events the user made in the calendar without our marker are never touched, even at an id we want', async () => {
    const source = await h.smallGroup(1);
    const added = await h.addOneDayClass(source);
    await h.refresh(source);
    const account = h.fake.addUser();
    const calendar = h.fake.createCalendar(account.user, 'My own calendar', h.ctx.config.timezone);
    const time = (hour: string) => ({ dateTime: `2025-10-15T${hour}:00:00`, timeZone: h.ctx.config.timezone });
    const lunch = h.fake.ownerInsertEvent(calendar.id, {
      summary: 'Lunch with Ann',
      start: time('12'),
      end: time('13'),
    });
    // An id our sync wants, already taken by an event of the user's: a conflict, left alone.
    const taken = h.fake.ownerInsertEvent(calendar.id, {
      id: added.eventId,
      summary: 'Dentist',
      start: time('09'),
      end: time('10'),
    });
    const { target, push } = await h.connect(source, { calendarId: calendar.id, user: account });
    expect(push.result).toMatchObject({ conflicts: 1 });
    const desired = await h.desired(source);
    const ours = desired.filter((event) => event.id !== added.eventId);
    expect(h.calendar(calendar.id).filter((event) => event.id !== lunch.id && event.id !== taken.id)).toEqual(ours);
    // The taken id is remembered as someone else's, so that later pushes do not ask again.
    expect(await h.ctx.google.targets.index(target.id).read()).toEqual(
      new Map([
        ...ours.map((event): [string, unknown] => [event.id, expect.stringMatching(/^[\w-]{22}$/)]),
        [added.eventId, FOREIGN],
      ]),
    );
    // A reconcile does not list them (the list asks for our marker): it asks once more, and a cancellation does not
    // delete them.
    const reconcile = await h.push(target, 'reconcile');
    expect(reconcile.result).toMatchObject({ reconciled: true, conflicts: 1 });
    expect((await h.ctx.google.targets.index(target.id).read()).get(added.eventId)).toBe(FOREIGN);
    await h.sim.deleteEntry(added.entryId);
    h.fake.resetCounts();
    await h.refresh(source);
    await h.settled(target.id, 3);
    expect(h.fake.counts().byMethod['events.delete']).toBeUndefined();
    expect(h.fake.event(calendar.id, lunch.id)).toEqual(lunch);
    expect(h.fake.event(calendar.id, taken.id)).toEqual(taken);
    expect(h.calendar(calendar.id)).toHaveLength(ours.length + 2);
  });

  it("a legacy deployment's control characters never reach Google", async () => {
    const source = await h.smallGroup(1);
    const groupId = Number(source.split(':')[1]);
    // An id divisible by 3: the legacy dialect ends its subject with a bell.
    await h.sim.addEntry({
      id: 9_000_000,
      groupIds: [groupId],
      subject_name: 'Extra seminar',
      start_day_schedule: '2025-10-15',
      finish_day_schedule: '2025-10-15',
      day_week_schedule: 3,
      time_interval_id: 2,
    });
    const dialect = (name: string) =>
      h.sim.raw('/_sim/dialect', { method: 'PUT', headers: json, body: JSON.stringify({ dialect: name }) });
    await dialect('legacy');
    try {
      expect(await (await fetch(`${h.simUrl}/groups/${groupId}/schedule`)).text()).toContain('Extra seminar\\u0007');
      const { target } = await h.connect(source);
      const events = h.fake.events(target.calendarId);
      expect(events.map((event) => event.summary)).toContain('Extra seminar (практика)');
      for (const event of events)
        for (const text of [event.summary, event.description, event.location]) expect(text ?? '').not.toMatch(CONTROL);
    } finally {
      await dialect('standard');
    }
  });
});

describe('a class sent as one row per group, in a teacher feed and in Google', () => {
  const SUBJECT = 'Merged seminar';
  /** One row of a Saturday seminar from 6 Sep: by the test clock (1 October) 4 Saturdays have ended, 13 to come. */
  const seminar = (teacherId: number, groupId: number) =>
    h.sim.addEntry({
      groupIds: [groupId],
      teacher_id: teacherId,
      subject_name: SUBJECT,
      subject_kind_name: 'семинар',
      day_week_schedule: 6,
      type_week_schedule: 0,
      begin_time_schedule: '19:00',
      end_time_schedule: '20:30',
      start_day_schedule: '06.09.25',
      finish_day_schedule: '27.12.25',
      num_auditorium_schedule: '1205',
      note_schedule: '',
    });

  async function people(teacherIndex: number) {
    const [first, second] = await h.sim.groups();
    const employees = await h.sim.employees();
    const teacher = employees[teacherIndex];
    const other = employees[teacherIndex + 1];
    if (!first || !second || !teacher || !other) throw new Error('the simulator has too few groups or employees');
    return { first, second, teacher, other };
  }

  /** The seminar as the teacher's feed and Google show it. */
  async function seen(target: Connected) {
    const feed = readEvents(await storedIcs(h.ctx.feeds, target.source)).filter((event) =>
      event.summary.includes(SUBJECT),
    );
    const google = h.fake.events(target.calendarId).filter((event) => event.summary?.includes(SUBJECT));
    return { feed, google };
  }

  /** Both before and after show the same 17 events under the same UIDs, the ended ones untouched, none cancelled. */
  async function expectKept(before: Awaited<ReturnType<typeof seen>>, after: Awaited<ReturnType<typeof seen>>) {
    const now = h.clock.now;
    const endedFeed = (event: { end: string }) => Date.parse(event.end) <= now;
    const endedGoogle = (event: FakeEvent) => Date.parse(event.end.dateTime ?? '') <= now;
    expect(after.feed.map((event) => event.uid)).toEqual(before.feed.map((event) => event.uid));
    expect(after.feed.filter(endedFeed)).toEqual(before.feed.filter(endedFeed));
    expect(after.feed.filter(endedFeed)).toHaveLength(4);
    expect(after.feed.every((event) => event.status === 'CONFIRMED')).toBe(true);
    expect(after.google.filter(endedGoogle)).toEqual(before.google.filter(endedGoogle));
    expect(after.google.map((event) => event.id).sort()).toEqual(before.google.map((event) => event.id).sort());
    expect(after.google.some((event) => event.summary?.startsWith('Отменено: '))).toBe(false);
  }

  it('the lowest row deleted mid-term: the same events, the past untouched, nothing cancelled', async () => {
    const { first, second, teacher } = await people(0);
    const rows = [await seminar(teacher.id, first.id), await seminar(teacher.id, second.id)];
    const lowest = Math.min(...rows.map((row) => row.id));
    const { target } = await h.connect(`employee:${teacher.id}`);
    const before = await seen(target);
    expect(before.feed).toHaveLength(17);
    expect(before.feed.every((event) => event.uid.startsWith(`${lowest}-`))).toBe(true);
    expect(before.google).toHaveLength(17);
    h.fake.resetCounts();

    await h.sim.deleteEntry(lowest);
    const refresh = (await h.refresh(target.source)) as RefreshJobResult;
    expect(refresh.changes).toEqual({ added: 0, removed: 0, moved: 0, changed: 13 });
    const push = (await h.settled(target.id, 2)).at(-1);
    expect(push?.result).toMatchObject({ patched: 13, inserted: 0, deleted: 0 });
    await expectKept(before, await seen(target));
    for (const row of rows) await h.sim.deleteEntry(row.id).catch(() => undefined);
  });

  it('a row with a lower id joins, then the row that gave the id leaves: the same events throughout', async () => {
    const { first, second, teacher, other } = await people(2);
    // The lower row is another teacher's at first, so the teacher's feed publishes the class under the higher.
    const lower = await seminar(other.id, first.id);
    const higher = await seminar(teacher.id, second.id);
    expect(lower.id).toBeLessThan(higher.id);
    const { target } = await h.connect(`employee:${teacher.id}`);
    const before = await seen(target);
    expect(before.feed).toHaveLength(17);
    expect(before.feed.every((event) => event.uid.startsWith(`${higher.id}-`))).toBe(true);
    h.fake.resetCounts();

    await h.sim.raw(`/_sim/entries/${lower.id}`, {
      method: 'PATCH',
      headers: json,
      body: JSON.stringify({ teacher_id: teacher.id }),
    });
    expect(((await h.refresh(target.source)) as RefreshJobResult).changes).toEqual({
      added: 0,
      removed: 0,
      moved: 0,
      changed: 13,
    });
    expect((await h.settled(target.id, 2)).at(-1)?.result).toMatchObject({ patched: 13, inserted: 0, deleted: 0 });
    const joined = await seen(target);
    await expectKept(before, joined);
    expect(joined.google.at(-1)?.description).toContain(first.name);

    await h.sim.deleteEntry(higher.id);
    await h.refresh(target.source);
    expect((await h.settled(target.id, 3)).at(-1)?.result).toMatchObject({ patched: 13, inserted: 0, deleted: 0 });
    await expectKept(before, await seen(target));
    await h.sim.deleteEntry(lower.id);
  });
});
