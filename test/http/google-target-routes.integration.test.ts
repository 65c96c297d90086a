import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { TARGET_ID } from '../../src/store/push-target-store.ts';
import { BEARER } from '../admin/admin-app.ts';
import { type GoogleApp, startGoogleApp, storedText } from './google-helpers.ts';
import { storeTimetable } from './helpers.ts';

let g: GoogleApp;
/** Every refresh token the tests used: none may reach a log line or an answer. */
const secrets: string[] = [];

beforeAll(async () => {
  g = await startGoogleApp();
});
afterAll(async () => {
  const output = g.logs();
  await g.close();
  expect(output).toContain('google target connected');
  for (const secret of secrets) expect(output).not.toContain(secret);
});
beforeEach(() => {
  g.fake.clearFaults();
});

/** A Google user of the fake with a refresh token of their own. */
function googleUser(): { user: string; refreshToken: string } {
  const added = g.fake.addUser();
  secrets.push(added.refreshToken);
  return added;
}

function register(payload: unknown, headers: Record<string, string> = BEARER) {
  return g.app.inject({
    method: 'POST',
    url: '/admin/google-targets',
    headers,
    payload: payload as Record<string, unknown>,
  });
}

describe('admin Google target routes', () => {
  it('need the admin token, every one of them', async () => {
    const id = 'A'.repeat(22);
    const requests = [
      { method: 'POST' as const, url: '/admin/google-targets', payload: { source: 'group:1', refreshToken: 'x' } },
      { method: 'GET' as const, url: '/admin/google-targets' },
      { method: 'GET' as const, url: `/admin/google-targets/${id}` },
      { method: 'DELETE' as const, url: `/admin/google-targets/${id}` },
    ];
    for (const request of requests) {
      for (const headers of [{}, { authorization: 'Bearer wrong' }]) {
        const answer = await g.app.inject({ ...request, headers });
        expect(answer.statusCode, `${request.method} ${request.url}`).toBe(401);
        expect(answer.json().error).toMatch(/admin/);
      }
    }
    expect(g.fake.counts().total).toBe(0);
  });
});

describe('POST /admin/google-targets', () => {
  it('creates a calendar named after the timetable, stores the target and queues its first push', async () => {
    const { user, refreshToken } = googleUser();
    await storeTimetable(g.ctx, 'group:4242');
    const answer = await register({ source: 'group:4242', refreshToken });
    expect(answer.statusCode).toBe(201);
    const body = answer.json() as { id: string; calendarId: string; reused: boolean };
    expect(Object.keys(body).sort()).toEqual(['calendarId', 'id', 'reused']);
    expect(body.reused).toBe(false);
    expect(body.id).toMatch(TARGET_ID);
    expect(answer.headers.location).toBe(`/admin/google-targets/${body.id}`);
    expect(answer.body).not.toContain(refreshToken);

    expect(g.fake.calendars(user)).toEqual([expect.objectContaining({ id: body.calendarId, summary: 'ИВТ-21' })]);
    const target = await g.ctx.google.targets.get(body.id);
    expect(target).toMatchObject({
      source: 'group:4242',
      calendarId: body.calendarId,
      calendarOwned: true,
      calendarName: 'ИВТ-21',
      status: 'active',
    });
    expect(target?.details.googleUser).toBeUndefined();
    expect(target?.details.budgetKey).toMatch(/^token:[0-9a-f]{16}$/);
    expect((await g.ctx.google.targets.credential(body.id))?.secret).toBe(refreshToken);
    expect(await storedText(g.ctx)).not.toContain(refreshToken);
    expect(await g.ctx.registry.isActive('group:4242')).toBe(true);
    const pushes = await g.ctx.queues.pushQueue('google').getJobs(['waiting', 'delayed', 'prioritized']);
    expect(pushes.map((job) => job.data)).toContainEqual({ target: body.id, source: 'group:4242', reason: 'connect' });
  });

  it('uses an existing calendar that the token can reach, without owning it', async () => {
    const { user, refreshToken } = googleUser();
    const mine = g.fake.createCalendar(user, 'Mine', 'Europe/Moscow');
    const answer = await register({ source: 'employee:17', refreshToken, calendarId: mine.id });
    expect(answer.statusCode).toBe(201);
    const { id, calendarId } = answer.json() as { id: string; calendarId: string };
    expect(calendarId).toBe(mine.id);
    expect(await g.ctx.google.targets.get(id)).toMatchObject({ calendarOwned: false, calendarName: 'Mine' });
    // Not ours: never deleted, even when asked.
    expect(
      (
        await g.app.inject({
          method: 'DELETE',
          url: `/admin/google-targets/${id}?deleteCalendar=true`,
          headers: BEARER,
        })
      ).statusCode,
    ).toBe(204);
    expect(g.fake.calendars(user).map((calendar) => calendar.id)).toEqual([mine.id]);
  });

  it('answers a second registration of one token for one source and calendar with the first target (a retried request makes no second calendar)', async () => {
    const { user, refreshToken } = googleUser();
    const mine = g.fake.createCalendar(user, 'Mine');
    const [first, again] = await Promise.all([
      register({ source: 'group:4243', refreshToken }),
      register({ source: 'group:4243', refreshToken }),
    ]);
    // The contract (docs/design.md) answers 201 to every registration; `reused` tells the repeat from the first.
    expect([first.statusCode, again.statusCode]).toEqual([201, 201]);
    expect([first, again].map((answer) => (answer.json() as { reused: boolean }).reused).sort()).toEqual([false, true]);
    const ids = [first, again].map((answer) => (answer.json() as { id: string }).id);
    expect(ids[0]).toBe(ids[1]);
    const given = await register({ source: 'group:4243', refreshToken, calendarId: mine.id });
    expect(given.statusCode).toBe(201);
    const givenAgain = await register({ source: 'group:4243', refreshToken, calendarId: mine.id });
    expect(givenAgain.statusCode).toBe(201);
    expect(givenAgain.json()).toEqual({ id: (given.json() as { id: string }).id, calendarId: mine.id, reused: true });
    // One calendar of ours plus the user's own; two targets (ours, and the one pushing into the given calendar).
    expect(g.fake.calendars(user)).toHaveLength(2);
    expect(
      (await g.ctx.google.targets.page(0, 500)).targets.filter((target) => target.source === 'group:4243'),
    ).toHaveLength(2);
    // Another token of the same user is another registration (without a Google user id, the token is all we know).
    const other = g.fake.addUser();
    secrets.push(other.refreshToken);
    expect((await register({ source: 'group:4243', refreshToken: other.refreshToken })).statusCode).toBe(201);
  });

  it('a repeated registration of a working target changes nothing: no new token version, no lifted quota pause, no push', async () => {
    const { refreshToken } = googleUser();
    const first = await register({ source: 'group:4245', refreshToken });
    expect(first.statusCode).toBe(201);
    const { id } = first.json() as { id: string };
    const pausedUntil = Date.now() + 3_600_000;
    await g.ctx.google.targets.markStatus(id, 'paused', 'quota', Date.now(), { pausedUntil });
    await g.ctx.queues.pushQueue('google').drain();
    const before = await g.ctx.google.targets.get(id);
    const again = await register({ source: 'group:4245', refreshToken });
    expect(again.statusCode).toBe(201);
    expect(again.json()).toMatchObject({ id, reused: true });
    expect(await g.ctx.google.targets.get(id)).toMatchObject({
      status: 'paused',
      pausedUntil,
      credentialVersion: before?.credentialVersion,
      reconcileRequested: before?.reconcileRequested,
    });
    expect(await g.ctx.queues.pushQueue('google').getJobs(['waiting', 'delayed', 'prioritized'])).toEqual([]);
  });

  it('re-registering a given calendar marked deleted asks Google again, and takes it back once it is reachable', async () => {
    const { user, refreshToken } = googleUser();
    const mine = g.fake.createCalendar(user, 'Shared again');
    const first = await register({ source: 'group:4246', refreshToken, calendarId: mine.id });
    const { id } = first.json() as { id: string };
    await g.ctx.google.targets.markStatus(
      id,
      'calendar-deleted',
      'the calendar was deleted or is no longer reachable',
      Date.now(),
    );
    const again = await register({ source: 'group:4246', refreshToken, calendarId: mine.id });
    expect(again.statusCode).toBe(201);
    expect(again.json()).toEqual({ id, calendarId: mine.id, reused: true });
    expect(await g.ctx.google.targets.get(id)).toMatchObject({
      status: 'active',
      calendarId: mine.id,
      calendarOwned: false,
      reconcileRequested: true,
    });
  });

  it('answers 400 for a calendar it was given and can no longer reach, instead of making one of its own', async () => {
    const { user, refreshToken } = googleUser();
    const mine = g.fake.createCalendar(user, 'Mine');
    expect((await register({ source: 'group:4244', refreshToken, calendarId: mine.id })).statusCode).toBe(201);
    g.fake.ownerDeleteCalendar(mine.id);
    const again = await register({ source: 'group:4244', refreshToken, calendarId: mine.id });
    expect(again.statusCode).toBe(400);
    expect(g.fake.calendars(user)).toEqual([]);
  });

  it('answers 400 naming calendarId when the token cannot reach that calendar', async () => {
    const { refreshToken } = googleUser();
    const other = googleUser();
    const theirs = g.fake.createCalendar(other.user, 'Theirs');
    for (const calendarId of [theirs.id, 'missing@group.calendar.google.com']) {
      const answer = await register({ source: 'group:1', refreshToken, calendarId });
      expect(answer.statusCode).toBe(400);
      expect(answer.json()).toEqual({
        error: 'calendarId: calendar not found or not accessible with this refresh token',
        code: 'CALENDAR_NOT_FOUND',
      });
    }
    expect((await g.ctx.google.targets.page(0, 500)).targets.filter((target) => target.source === 'group:1')).toEqual(
      [],
    );
  });

  it('answers 400 for a refresh token Google refuses', async () => {
    const { refreshToken } = googleUser();
    g.fake.revoke(refreshToken);
    for (const token of [refreshToken, 'never-issued-token']) {
      const answer = await register({ source: 'group:2', refreshToken: token });
      expect(answer.statusCode).toBe(400);
      expect(answer.json().error).toMatch(/^refreshToken: Google refused the refresh token \(invalid_grant\)/);
      expect(answer.body).not.toContain(token);
    }
  });

  it('answers 400 naming the field for a bad body, never quoting the token', async () => {
    const token = 'secret-refresh-token-value';
    const cases: Array<[unknown, RegExp]> = [
      [{ refreshToken: token }, /^source: is required/],
      [{ source: 'group:x', refreshToken: token }, /^source: "group:x" is not a source/],
      [{ source: `personal:${'Z'.repeat(22)}`, refreshToken: token }, /^source: no subscription/],
      [{ source: 'group:1' }, /^refreshToken: is required/],
      [{ source: 'group:1', refreshToken: '' }, /^refreshToken: must not be empty/],
      [{ source: 'group:1', refreshToken: 42 }, /^refreshToken: must be a string/],
      [{ source: 'group:1', refreshToken: token, calendarId: '' }, /^calendarId: must not be empty/],
      [{ source: 'group:1', refreshToken: token, extra: 1 }, /extra/],
      [[1, 2], /body must be JSON/],
    ];
    for (const [payload, pattern] of cases) {
      const answer = await register(payload);
      expect(answer.statusCode, JSON.stringify(payload)).toBe(400);
      expect(answer.json().error, JSON.stringify(payload)).toMatch(pattern);
      expect(answer.body).not.toContain(token);
    }
  });

  it('answers 502 when Google fails to create the calendar, and stores nothing', async () => {
    const { user, refreshToken } = googleUser();
    g.fake.inject({ kind: '500', methods: ['calendars.insert'] });
    const answer = await register({ source: 'group:3', refreshToken });
    expect(answer.statusCode).toBe(502);
    expect(answer.json().error).toMatch(/^Google failed/);
    expect(g.fake.calendars(user)).toEqual([]);
  });
});

describe('POST /admin/google-targets for a source the university does not know', () => {
  it('answers 404 and creates nothing: no calendar, no target, no source', async () => {
    const { user, refreshToken } = googleUser();
    const source = 'group:1000000000000099';
    const answer = await register({ source, refreshToken });
    expect(answer.statusCode).toBe(404);
    expect(answer.json()).toEqual({
      error: 'group 1000000000000099 is not known to the university: Группа не найдена',
      code: 'SOURCE_NOT_FOUND',
    });
    expect(g.fake.calendars(user)).toEqual([]);
    expect(await g.ctx.google.targets.idsForSource(source)).toEqual([]);
    expect(await g.ctx.registry.get(source)).toBeUndefined();
    expect(await g.ctx.registry.isActive(source)).toBe(false);
    // Asked again: answered from the remembered 404, without another refresh.
    const queued = await g.ctx.queues.refresh.getJobCountByTypes('completed', 'failed', 'waiting', 'prioritized');
    expect((await register({ source, refreshToken })).statusCode).toBe(404);
    expect(await g.ctx.queues.refresh.getJobCountByTypes('completed', 'failed', 'waiting', 'prioritized')).toBe(queued);
  });
});

describe('GET /admin/google-targets', () => {
  it('pages the targets in order of creation and shows one without any secret', async () => {
    const made: string[] = [];
    for (const source of ['group:31', 'group:32', 'group:33']) {
      const answer = await register({ source, refreshToken: googleUser().refreshToken });
      made.push((answer.json() as { id: string }).id);
    }
    const all = (await g.app.inject({ method: 'GET', url: '/admin/google-targets?limit=500', headers: BEARER })).json();
    const ids = all.targets.map((target: { id: string }) => target.id);
    expect(ids.filter((id: string) => made.includes(id))).toEqual(made);
    expect(all).toMatchObject({ offset: 0, limit: 500, total: ids.length });

    const index = ids.indexOf(made[1]);
    const page = (
      await g.app.inject({ method: 'GET', url: `/admin/google-targets?offset=${index}&limit=1`, headers: BEARER })
    ).json();
    expect(page.targets.map((target: { id: string }) => target.id)).toEqual([made[1]]);
    expect(
      (await g.app.inject({ method: 'GET', url: '/admin/google-targets?limit=0', headers: BEARER })).json(),
    ).toEqual({ error: 'limit: must be at least 1', code: 'INVALID_QUERY' });

    await g.ctx.google.targets.index(made[0] ?? '').set('a'.repeat(52), 'digest');
    await g.ctx.google.targets.markStatus(made[0] ?? '', 'paused', 'Calendar usage limits exceeded', 1_000, {
      pausedUntil: Date.UTC(2030, 0, 1),
    });
    const one = await g.app.inject({ method: 'GET', url: `/admin/google-targets/${made[0]}`, headers: BEARER });
    expect(one.statusCode).toBe(200);
    expect(one.json()).toMatchObject({
      id: made[0],
      source: 'group:31',
      status: 'paused',
      statusReason: 'Calendar usage limits exceeded',
      pausedUntil: '2030-01-01T00:00:00.000Z',
      calendarOwned: true,
      indexSize: 1,
      pendingPush: { state: 'waiting' },
      // Fetched (an empty timetable here) before the target was made: the indexed event is one to delete.
      pendingChanges: { insert: 0, patch: 0, delete: 1, refused: 0 },
      lastPush: null,
      lastError: null,
    });
    expect(one.body).not.toMatch(/refreshToken|manageToken|budgetKey/);
    for (const secret of secrets) expect(one.body + JSON.stringify(all)).not.toContain(secret);

    expect(
      (await g.app.inject({ method: 'GET', url: `/admin/google-targets/${'C'.repeat(22)}`, headers: BEARER }))
        .statusCode,
    ).toBe(404);
    expect((await g.app.inject({ method: 'GET', url: '/admin/google-targets/nope', headers: BEARER })).statusCode).toBe(
      400,
    );
  });
});

describe('DELETE /admin/google-targets/:id', () => {
  it('removes the target, deleting its calendar only when asked', async () => {
    const { user, refreshToken } = googleUser();
    const kept = (await register({ source: 'group:41', refreshToken })).json() as { id: string; calendarId: string };
    const dropped = (await register({ source: 'group:42', refreshToken })).json() as { id: string; calendarId: string };
    expect(g.fake.calendars(user)).toHaveLength(2);

    expect(
      (await g.app.inject({ method: 'DELETE', url: `/admin/google-targets/${kept.id}`, headers: BEARER })).statusCode,
    ).toBe(204);
    expect(
      (
        await g.app.inject({
          method: 'DELETE',
          url: `/admin/google-targets/${dropped.id}?deleteCalendar=true`,
          headers: BEARER,
        })
      ).statusCode,
    ).toBe(204);
    expect(g.fake.calendars(user).map((calendar) => calendar.id)).toEqual([kept.calendarId]);
    for (const id of [kept.id, dropped.id]) {
      expect(await g.ctx.google.targets.get(id)).toBeUndefined();
      expect(
        (await g.app.inject({ method: 'DELETE', url: `/admin/google-targets/${id}`, headers: BEARER })).statusCode,
      ).toBe(404);
    }
    expect(await g.ctx.redis.smembers(g.ctx.keys.sourceTargets('group:41'))).toEqual([]);
  });

  it('treats a calendar its owner deleted already as deleted', async () => {
    const { refreshToken } = googleUser();
    const made = (await register({ source: 'group:43', refreshToken })).json() as { id: string; calendarId: string };
    g.fake.ownerDeleteCalendar(made.calendarId);
    expect(
      (
        await g.app.inject({
          method: 'DELETE',
          url: `/admin/google-targets/${made.id}?deleteCalendar=true`,
          headers: BEARER,
        })
      ).statusCode,
    ).toBe(204);
  });

  it('still removes the target when Google fails to delete the calendar, and names the calendar', async () => {
    const { user, refreshToken } = googleUser();
    const made = (await register({ source: 'group:44', refreshToken })).json() as { id: string; calendarId: string };
    g.fake.inject({ kind: '500', methods: ['calendars.delete'] });
    const answer = await g.app.inject({
      method: 'DELETE',
      url: `/admin/google-targets/${made.id}?deleteCalendar=true`,
      headers: BEARER,
    });
    expect(answer.statusCode).toBe(502);
    expect(answer.json()).toMatchObject({
      calendarId: made.calendarId,
      error: expect.stringContaining(
        `the target was removed, but its calendar ${made.calendarId} could not be deleted`,
      ),
    });
    expect(await g.ctx.google.targets.get(made.id)).toBeUndefined();
    expect(g.fake.calendars(user).map((calendar) => calendar.id)).toEqual([made.calendarId]);
  });

  it('answers 400 for a malformed id or deleteCalendar value', async () => {
    expect(
      (await g.app.inject({ method: 'DELETE', url: '/admin/google-targets/short', headers: BEARER })).statusCode,
    ).toBe(400);
    const answer = await g.app.inject({
      method: 'DELETE',
      url: `/admin/google-targets/${'D'.repeat(22)}?deleteCalendar=1`,
      headers: BEARER,
    });
    expect(answer.statusCode).toBe(400);
    expect(answer.json().error).toMatch(/^deleteCalendar: must be true or false/);
  });
});

describe('without Google settings', () => {
  let bare: GoogleApp;
  beforeEach(async () => {
    bare = await startGoogleApp({ GOOGLE_CLIENT_ID: undefined, GOOGLE_CLIENT_SECRET: undefined });
  });
  afterEach(async () => {
    await bare.close();
  });

  it('answers 503 to a registration and calls nobody', async () => {
    const answer = await bare.app.inject({
      method: 'POST',
      url: '/admin/google-targets',
      headers: BEARER,
      payload: { source: 'group:1', refreshToken: 'token' },
    });
    expect(answer.statusCode).toBe(503);
    expect(answer.json().error).toMatch(/GOOGLE_CLIENT_ID/);
    expect(bare.fake.counts().total).toBe(0);
  });
});
