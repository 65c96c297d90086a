/**
 * The admin routes of CalDAV targets against a real Radicale: the password is checked before anything is
 * stored, a calendar of ours is made with MKCALENDAR and deleted on disconnect, and in a calendar we were given
 * only our own resources go, the person's own events stay.
 */
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MkcalendarRefusedError } from '../../src/caldav/errors.ts';
import { buildApp } from '../../src/http/app.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { type Radicale, startRadicale } from '../../testkit/radicale.ts';
import { BEARER } from '../admin/admin-app.ts';
import { MemoryCalDav } from '../caldav/memory-caldav.ts';
import { testContext } from '../support/service.ts';
import { memoryLogger } from '../upstream/local-server.ts';
import { storeTimetable } from './helpers.ts';

const USER = 'alice';
const PASSWORD = 'app-password-1-secret';
const WRONG = 'not-the-app-password';

let radicale: Radicale;
let ctx: ServiceContext;
let app: FastifyInstance;
let closeContext: () => Promise<void>;
let logs: () => string;

beforeAll(async () => {
  radicale = await startRadicale({ users: { [USER]: PASSWORD, bob: 'bob-secret-password' } });
  const log = memoryLogger();
  logs = log.output;
  const opened = await testContext({ LOG_LEVEL: 'debug' }, { logger: log.logger });
  ctx = opened.context;
  closeContext = opened.close;
  app = await buildApp(ctx, { logger: log.logger });
  await app.ready();
  await storeTimetable(ctx, 'group:4242');
  await storeTimetable(ctx, 'group:4243', undefined, { name: 'ИВТ-22' });
}, 60_000);

afterAll(async () => {
  const output = logs?.() ?? '';
  await app?.close();
  await closeContext?.();
  await radicale?.close();
  // No password ever reaches a log line.
  for (const secret of [PASSWORD, WRONG]) expect(output).not.toContain(secret);
});

function register(payload: Record<string, unknown>, headers: Record<string, string> = BEARER) {
  return app.inject({ method: 'POST', url: '/admin/caldav-targets', headers, payload });
}

/** Basic-auth request to Radicale as a person's own client would send it. */
function dav(method: string, url: string, body?: string, user = USER, password = PASSWORD): Promise<Response> {
  return fetch(url, {
    method,
    headers: {
      authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`,
      ...(body === undefined ? {} : { 'content-type': 'text/calendar; charset=utf-8' }),
    },
    ...(body === undefined ? {} : { body }),
  });
}

/** The names of the files Radicale keeps for a collection (its resources). */
async function filesOf(user: string, slug: string): Promise<string[]> {
  return (await readdir(radicale.collectionDir(user, slug))).filter((name) => !name.startsWith('.')).sort();
}

function event(uid: string, summary: string, extra = ''): string {
  return [
    'BEGIN:VCALENDAR',
    'VERSION:2.0',
    'PRODID:-//test//person//EN',
    'BEGIN:VEVENT',
    `UID:${uid}`,
    'DTSTAMP:20250901T080000Z',
    'DTSTART:20250915T090000Z',
    'DTEND:20250915T103000Z',
    `SUMMARY:${summary}`,
    ...(extra === '' ? [] : [extra]),
    'END:VEVENT',
    'END:VCALENDAR',
    '',
  ].join('\r\n');
}

/** The slug of a collection URL (`…/alice/<slug>/`). */
function slugOf(calendarUrl: string): string {
  return calendarUrl.replace(/\/$/, '').split('/').pop() ?? '';
}

describe('admin CalDAV target routes', () => {
  it('need the admin token, every one of them', async () => {
    const id = 'A'.repeat(22);
    for (const request of [
      { method: 'POST' as const, url: '/admin/caldav-targets', payload: { source: 'group:1' } },
      { method: 'GET' as const, url: '/admin/caldav-targets' },
      { method: 'GET' as const, url: `/admin/caldav-targets/${id}` },
      { method: 'DELETE' as const, url: `/admin/caldav-targets/${id}` },
    ]) {
      const answer = await app.inject({ ...request, headers: { authorization: 'Bearer wrong' } });
      expect(answer.statusCode, `${request.method} ${request.url}`).toBe(401);
    }
  });

  it('refuses a wrong password with a stable code, in Russian when asked, and stores nothing', async () => {
    const answer = await register(
      { source: 'group:4242', url: radicale.url, username: USER, password: WRONG },
      { ...BEARER, 'accept-language': 'ru' },
    );
    expect(answer.statusCode).toBe(422);
    expect(answer.json()).toMatchObject({ code: 'CALDAV_CREDENTIALS_REFUSED' });
    expect(answer.json().error).toMatch(/^Сервер не принял логин или пароль приложения/);
    expect(answer.body).not.toContain(WRONG);
    const page = await app.inject({ method: 'GET', url: '/admin/caldav-targets', headers: BEARER });
    expect(page.json()).toMatchObject({ total: 0, targets: [] });
    expect(await ctx.caldav.targets.idsForSource('group:4242')).toEqual([]);
    // No calendar was made either: Alice's home holds nothing of ours.
    const home = radicale.collectionDir(USER, '');
    const made = existsSync(home) ? await readdir(home) : [];
    expect(made.filter((name) => name.startsWith('timetable-sync'))).toEqual([]);
  });

  it('refuses bodies that are not the contract’s, and URLs it will not ask', async () => {
    const base = { source: 'group:4242', url: radicale.url, username: USER, password: PASSWORD };
    for (const payload of [
      { ...base, password: undefined },
      { ...base, extra: 1 },
      { ...base, url: 42 },
    ]) {
      const answer = await register(payload);
      expect(answer.statusCode, JSON.stringify(payload)).toBe(400);
      expect(answer.json().code).toBe('INVALID_BODY');
    }
    const withLogin = await register({ ...base, url: radicale.url.replace('http://', `http://${USER}:x@`) });
    expect(withLogin.statusCode).toBe(400);
    expect(withLogin.json().code).toBe('CALDAV_URL_REFUSED');
    const ftp = await register({ ...base, url: 'ftp://example.org/' });
    expect(ftp.json().code).toBe('CALDAV_URL_REFUSED');
  });

  it('connects with the right password: makes our calendar, stores the target, queues its push; GET shows its state; DELETE removes the calendar', async () => {
    const answer = await register({ source: 'group:4242', url: radicale.url, username: USER, password: PASSWORD });
    expect(answer.statusCode).toBe(201);
    const body = answer.json() as { id: string; calendarUrl: string; reused: boolean };
    expect(body.reused).toBe(false);
    expect(answer.headers.location).toBe(`/admin/caldav-targets/${body.id}`);
    expect(answer.body).not.toContain(PASSWORD);
    // MKCALENDAR made a collection of ours under Alice's home, named by the target.
    expect(body.calendarUrl).toBe(`${radicale.url}${USER}/timetable-sync-${body.id}/`);
    expect(existsSync(radicale.collectionDir(USER, slugOf(body.calendarUrl)))).toBe(true);
    const propfind = await dav('PROPFIND', body.calendarUrl);
    expect(propfind.status).toBe(207);
    expect(await propfind.text()).toContain('ИВТ-21');

    const target = await ctx.caldav.targets.get(body.id);
    expect(target).toMatchObject({
      source: 'group:4242',
      calendarId: body.calendarUrl,
      calendarOwned: true,
      calendarName: 'ИВТ-21',
      details: { username: USER },
      status: 'active',
    });
    expect((await ctx.caldav.targets.credential(body.id))?.secret).toBe(PASSWORD);
    const stored = JSON.stringify(await ctx.redis.hgetall(ctx.keys.caldavTarget(body.id)));
    expect(stored).not.toContain(PASSWORD);
    expect(await ctx.registry.isActive('group:4242')).toBe(true);
    const pushes = await ctx.queues
      .pushQueue('caldav')
      .getJobs(['waiting', 'delayed', 'prioritized', 'active', 'completed']);
    expect(pushes.map((job) => job.data)).toContainEqual(
      expect.objectContaining({ target: body.id, reason: 'connect' }),
    );

    const state = await app.inject({ method: 'GET', url: `/admin/caldav-targets/${body.id}`, headers: BEARER });
    expect(state.statusCode).toBe(200);
    expect(state.json()).toMatchObject({
      id: body.id,
      kind: 'caldav',
      source: 'group:4242',
      calendarUrl: body.calendarUrl,
      calendarOwned: true,
      status: 'active',
      statusReason: null,
      needsPassword: false,
      pausedUntil: null,
      // Shown for every kind: nothing pushed yet (no worker here), and the first push lists the calendar.
      lastRefusals: [],
      reconcileRequested: true,
      indexSize: 0,
    });
    const { pendingChanges } = state.json() as { pendingChanges: { insert: number; patch: number; delete: number } };
    // Nothing pushed yet (no worker here): every class of the stored timetable is still to be written.
    expect(pendingChanges.insert).toBeGreaterThan(0);
    expect(state.body).not.toContain(PASSWORD);

    const again = await register({ source: 'group:4242', url: radicale.url, username: USER, password: PASSWORD });
    expect(again.statusCode).toBe(201);
    expect(again.json()).toEqual({ id: body.id, calendarUrl: body.calendarUrl, reused: true });

    const removed = await app.inject({ method: 'DELETE', url: `/admin/caldav-targets/${body.id}`, headers: BEARER });
    expect(removed.statusCode).toBe(204);
    expect(existsSync(radicale.collectionDir(USER, slugOf(body.calendarUrl)))).toBe(false);
    expect((await dav('PROPFIND', body.calendarUrl)).status).toBe(404);
    const gone = await app.inject({ method: 'GET', url: `/admin/caldav-targets/${body.id}`, headers: BEARER });
    expect(gone.statusCode).toBe(404);
    expect(gone.json().code).toBe('CALDAV_TARGET_NOT_FOUND');
    const twice = await app.inject({ method: 'DELETE', url: `/admin/caldav-targets/${body.id}`, headers: BEARER });
    expect(twice.json().code).toBe('CALDAV_TARGET_NOT_FOUND');
  });

  it('connecting again after our calendar was deleted on the server makes a new one for the same target', async () => {
    const first = await register({ source: 'group:4243', url: radicale.url, username: USER, password: PASSWORD });
    expect(first.statusCode).toBe(201);
    const { id, calendarUrl } = first.json() as { id: string; calendarUrl: string };
    // The person deletes the calendar in their app; the next push found it gone.
    expect((await dav('DELETE', calendarUrl)).status).toBe(200);
    await ctx.caldav.targets.markStatus(id, 'calendar-deleted', 'the calendar is gone', Date.now());

    const again = await register({ source: 'group:4243', url: radicale.url, username: USER, password: PASSWORD });
    expect(again.statusCode).toBe(201);
    const body = again.json() as { id: string; calendarUrl: string; reused: boolean };
    expect(body).toMatchObject({ id, reused: true });
    expect(body.calendarUrl).not.toBe(calendarUrl);
    expect(existsSync(radicale.collectionDir(USER, slugOf(body.calendarUrl)))).toBe(true);
    expect(await ctx.caldav.targets.get(id)).toMatchObject({
      status: 'active',
      calendarId: body.calendarUrl,
      calendarOwned: true,
    });
    expect(
      (await app.inject({ method: 'DELETE', url: `/admin/caldav-targets/${id}`, headers: BEARER })).statusCode,
    ).toBe(204);
  });

  it('in a calendar it is given, removes only its own resources on disconnect: the person’s event stays', async () => {
    const calendarUrl = `${radicale.url}bob/personal/`;
    const made = await fetch(calendarUrl, {
      method: 'MKCALENDAR',
      headers: { authorization: `Basic ${Buffer.from('bob:bob-secret-password').toString('base64')}` },
    });
    expect(made.status).toBe(201);
    const bob = (method: string, url: string, body?: string) => dav(method, url, body, 'bob', 'bob-secret-password');
    expect((await bob('PUT', `${calendarUrl}dentist.ics`, event('dentist-1', 'Зубной врач'))).status).toBe(201);

    const notCalendar = await register({
      source: 'group:4243',
      url: radicale.url,
      username: 'bob',
      password: 'bob-secret-password',
      calendarUrl: `${radicale.url}bob/nothing-here/`,
    });
    expect(notCalendar.statusCode).toBe(422);
    expect(notCalendar.json().code).toBe('CALDAV_CALENDAR_NOT_FOUND');

    const answer = await register({
      source: 'group:4243',
      url: radicale.url,
      username: 'bob',
      password: 'bob-secret-password',
      calendarUrl,
    });
    expect(answer.statusCode).toBe(201);
    const { id } = answer.json() as { id: string; calendarUrl: string };
    expect(answer.json().calendarUrl).toBe(calendarUrl);
    expect(await ctx.caldav.targets.get(id)).toMatchObject({ calendarOwned: false, calendarId: calendarUrl });

    // What a push of ours left there: one resource our index knows, one whose index entry a crash lost, both
    // named and marked as ours; and a resource named like ours that someone else wrote (no marker).
    const ours = event('ours-1', 'Физика', 'X-TIMETABLE-SYNC-SOURCE:group:4243');
    const put = await bob('PUT', `${calendarUrl}tts-aaaa.ics`, ours);
    expect(put.status).toBe(201);
    await ctx.caldav.targets.index(id).set('tts-aaaa', `digest ${put.headers.get('etag') ?? ''}`);
    expect(
      (await bob('PUT', `${calendarUrl}tts-bbbb.ics`, event('ours-2', 'Химия', 'X-TIMETABLE-SYNC-SOURCE:group:4243')))
        .status,
    ).toBe(201);
    expect((await bob('PUT', `${calendarUrl}tts-cccc.ics`, event('theirs-1', 'Чужое'))).status).toBe(201);

    const removed = await app.inject({ method: 'DELETE', url: `/admin/caldav-targets/${id}`, headers: BEARER });
    expect(removed.statusCode).toBe(204);
    expect(await filesOf('bob', 'personal')).toEqual(['dentist.ics', 'tts-cccc.ics']);
    const dentist = await bob('GET', `${calendarUrl}dentist.ics`);
    expect(await dentist.text()).toContain('Зубной врач');
    expect(await ctx.caldav.targets.get(id)).toBeUndefined();
  });
});

describe('a server that makes no calendar for us', () => {
  it('answers the account’s event calendars to pick from, stores nothing, then connects to the one picked', async () => {
    const mine = 'https://dav.test/alice/events-1/';
    const server = new MemoryCalDav([mine, 'https://dav.test/alice/events-2/']);
    server.faults = [
      {
        method: 'makeCalendar',
        when: 'before',
        error: new MkcalendarRefusedError('MKCALENDAR: 403', { status: 403, host: 'dav.test' }),
      },
    ];
    const opened = await testContext({}, { caldavFactory: () => server });
    const memoryApp = await buildApp(opened.context, { logger: memoryLogger().logger });
    try {
      await memoryApp.ready();
      await storeTimetable(opened.context, 'group:4242');
      const body = { source: 'group:4242', url: 'https://dav.test/', username: 'alice', password: 'app-password' };
      const refused = await memoryApp.inject({
        method: 'POST',
        url: '/admin/caldav-targets',
        headers: BEARER,
        payload: body,
      });
      expect(refused.statusCode).toBe(422);
      expect(refused.json()).toMatchObject({ code: 'CALDAV_NO_CALENDAR' });
      expect((refused.json() as { calendars: { url: string }[] }).calendars.map((calendar) => calendar.url)).toEqual([
        mine,
        'https://dav.test/alice/events-2/',
      ]);
      expect(await opened.context.caldav.targets.idsForSource('group:4242')).toEqual([]);

      const picked = await memoryApp.inject({
        method: 'POST',
        url: '/admin/caldav-targets',
        headers: BEARER,
        payload: { ...body, calendarUrl: mine },
      });
      expect(picked.statusCode).toBe(201);
      expect(picked.json()).toMatchObject({ calendarUrl: mine, reused: false });
      const { id } = picked.json() as { id: string };
      expect(await opened.context.caldav.targets.get(id)).toMatchObject({ calendarOwned: false, calendarId: mine });
    } finally {
      await memoryApp.close();
      await opened.close();
    }
  });
});
