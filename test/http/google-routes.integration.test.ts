import type { Job } from 'bullmq';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { CONSENT_TTL_SECONDS } from '../../src/google/oauth-state.ts';
import type { PushJobData, PushJobResult } from '../../src/jobs/contract.ts';
import { pushProcessor } from '../../src/jobs/push.ts';
import { hashToken } from '../../src/security/tokens.ts';
import { TARGET_ID } from '../../src/store/push-target-store.ts';
import { TEST_ADMIN_TOKEN } from '../support/service.ts';
import { bearer, type GoogleApp, PUBLIC_URL, startGoogleApp, storedText } from './google-helpers.ts';
import { storeTimetable } from './helpers.ts';

const CALENDAR_SCOPE = 'https://www.googleapis.com/auth/calendar.app.created';
const JSON_ACCEPT = { accept: 'application/json' };
const BROWSER = { accept: 'text/html,application/xhtml+xml,application/json;q=0.9,*/*;q=0.8' };

let g: GoogleApp;
/** Every secret the tests saw: none may reach a log line. */
const secrets: string[] = [];

beforeAll(async () => {
  g = await startGoogleApp();
});
afterAll(async () => {
  const output = g.logs();
  await g.close();
  expect(output).toContain('google consent completed');
  for (const secret of secrets) expect(output).not.toContain(secret);
});
beforeEach(() => {
  g.fake.consentAs(undefined);
});

/** The browser's cookies for the Google routes, as `/google/connect` set and `/google/callback` cleared them. */
const jar = new Map<string, string>();

/** Keeps what `set-cookie` says, as a browser would (an expired cookie is dropped). */
function remember(setCookie: string | string[] | undefined): void {
  for (const line of [setCookie ?? []].flat()) {
    const [pair = ''] = line.split(';');
    const [name = '', value = ''] = pair.split('=');
    if (/Max-Age=0\b/.test(line)) jar.delete(name);
    else jar.set(name, value);
  }
}

function cookieHeader(): Record<string, string> {
  return jar.size === 0 ? {} : { cookie: [...jar].map(([name, value]) => `${name}=${value}`).join('; ') };
}

/** The host a browser reaches the service on, as PUBLIC_URL says. */
const PUBLIC_HOST = new URL(PUBLIC_URL).host;

/** `GET /google/connect` for `query` on `host` (PUBLIC_URL's unless told), answered by the app. */
async function connect(query: string, host = PUBLIC_HOST) {
  const answer = await g.app.inject({ method: 'GET', url: `/google/connect?${query}`, headers: { host } });
  remember(answer.headers['set-cookie']);
  return answer;
}

/** Follows the redirect to the fake consent page and answers where Google sends the browser back. */
async function consent(location: string): Promise<URL> {
  const answer = await fetch(location, { redirect: 'manual' });
  expect(answer.status).toBe(302);
  const back = new URL(answer.headers.get('location') ?? '');
  for (const secret of [back.searchParams.get('code'), back.searchParams.get('state')])
    if (secret) secrets.push(secret);
  expect(`${back.origin}${back.pathname}`).toBe(`${PUBLIC_URL}/google/callback`);
  return back;
}

/** The callback as the browser would call it, with its cookies. */
async function callback(back: URL, headers: Record<string, string> = JSON_ACCEPT) {
  const answer = await g.app.inject({
    method: 'GET',
    url: `${back.pathname}${back.search}`,
    headers: { ...cookieHeader(), ...headers },
  });
  remember(answer.headers['set-cookie']);
  return answer;
}

/** Runs one push of `target` as a push worker would, and answers its result. */
async function runPush(target: string, source: string): Promise<PushJobResult> {
  const job = {
    id: `test-push-${target}`,
    data: { target, source, reason: 'connect' },
    attemptsMade: 0,
    attemptsStarted: 1,
    opts: { attempts: 1 },
  };
  const google = g.ctx.pushKinds.find((kind) => kind.kind === 'google');
  if (google === undefined) throw new Error('Google is not a registered push kind');
  return pushProcessor(g.ctx, google)(job as unknown as Job<PushJobData>);
}

/** The whole consent for `source`: connect, consent, callback (JSON). */
async function connectSource(source: string, extra = '') {
  const started = await connect(`source=${encodeURIComponent(source)}${extra}`);
  expect(started.statusCode).toBe(302);
  const answer = await callback(await consent(started.headers.location as string));
  const body = answer.json() as {
    id: string;
    calendarId: string;
    calendarName: string;
    source: string;
    manageToken: string;
    reused: boolean;
  };
  if (body.manageToken) secrets.push(body.manageToken);
  return { answer, body };
}

describe('GET /google/connect', () => {
  it('answers 404 for a group the university does not know, before any consent or source exists', async () => {
    const answer = await connect('source=group:1000000000000099');
    expect(answer.statusCode).toBe(404);
    expect(answer.json()).toEqual({
      error: 'group 1000000000000099 is not known to the university: Группа не найдена',
      code: 'SOURCE_NOT_FOUND',
    });
    expect(await g.ctx.registry.get('group:1000000000000099')).toBeUndefined();
    expect(await g.ctx.google.targets.idsForSource('group:1000000000000099')).toEqual([]);
    // No pending consent: the browser never went to Google.
    const states = await g.ctx.redis.keys(g.ctx.keys.googleOAuthState('*'));
    expect(states).toEqual([]);
    expect(await g.ctx.registry.missingReason('group:1000000000000099')).toBe('Группа не найдена');
  });

  it('redirects to the consent page with PKCE, offline access and the least scope, and keeps only a digest of the state', async () => {
    const answer = await connect('source=group:4242');
    expect(answer.statusCode).toBe(302);
    expect(answer.headers['cache-control']).toBe('no-store');
    const url = new URL(answer.headers.location as string);
    expect(`${url.origin}${url.pathname}`).toBe(g.fake.authUrl);
    const query = Object.fromEntries(url.searchParams);
    expect(query).toMatchObject({
      client_id: g.fake.clientId,
      redirect_uri: `${PUBLIC_URL}/google/callback`,
      response_type: 'code',
      code_challenge_method: 'S256',
      access_type: 'offline',
      prompt: 'consent',
    });
    expect((query.scope ?? '').split(' ').sort()).toEqual([CALENDAR_SCOPE, 'openid'].sort());
    expect(query.code_challenge).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const state = query.state ?? '';
    expect(state).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const key = g.ctx.keys.googleOAuthState(hashToken(state));
    const ttl = await g.ctx.redis.ttl(key);
    expect(ttl).toBeGreaterThan(CONSENT_TTL_SECONDS - 5);
    expect(ttl).toBeLessThanOrEqual(CONSENT_TTL_SECONDS);
    const stored = (await g.ctx.redis.get(key)) ?? '';
    expect(JSON.parse(stored)).toMatchObject({ source: 'group:4242' });
    expect(await storedText(g.ctx)).not.toContain(state);
  });

  it("sends a connect reached on another host to PUBLIC_URL's first, where the cookie will be sent back", async () => {
    const states = async () => (await g.ctx.redis.keys(g.ctx.keys.googleOAuthState('*'))).length;
    const pending = await states();
    for (const host of ['127.0.0.1:8080', 'TIMETABLE.example.evil', undefined]) {
      const answer = await g.app.inject({
        method: 'GET',
        url: '/google/connect?source=group:14',
        headers: host === undefined ? {} : { host },
      });
      expect(answer.statusCode, host).toBe(302);
      expect(answer.headers.location, host).toBe(`${PUBLIC_URL}/google/connect?source=group:14&public-host=1`);
      expect(answer.headers['cache-control']).toBe('no-store');
      expect(answer.headers['set-cookie'], host).toBeUndefined();
    }
    expect(await states()).toBe(pending);
    // On PUBLIC_URL's host (in any case, with its default port written out) the consent starts.
    for (const host of [PUBLIC_HOST, 'Timetable.Example:443']) {
      const there = await connect('source=group:14&public-host=1', host);
      expect(there.statusCode, host).toBe(302);
      expect(String(there.headers.location)).toMatch(new RegExp(`^${g.fake.authUrl}\\?`));
      expect(String(there.headers['set-cookie'])).toMatch(/^tts-consent-[0-9a-f]{16}=/);
    }
  });

  it('redirects once only: behind a proxy that rewrites Host, the consent starts and the log says why', async () => {
    const answer = await connect('source=group:15&public-host=1', '127.0.0.1:3000');
    expect(answer.statusCode).toBe(302);
    expect(String(answer.headers.location)).toMatch(new RegExp(`^${g.fake.authUrl}\\?`));
    expect(String(answer.headers['set-cookie'])).toMatch(/^tts-consent-/);
    expect(g.logs()).toContain('proxy_set_header Host $host');
  });

  it('answers 400 naming the source when it is missing or malformed', async () => {
    for (const query of ['', 'source=group:abc', 'source=room:1', 'source=group:1&source=group:2']) {
      const answer = await connect(query);
      expect(answer.statusCode, query).toBe(400);
      expect(answer.json().error, query).toMatch(/^source: /);
    }
  });

  it('lets only the holder of its feed token connect a personal timetable', async () => {
    const { subscription, token } = await g.ctx.subscriptions.create({
      credential: 'university-credential',
      name: 'Расписание: Иванов',
      upstreamUserId: 7,
      now: g.ctx.now(),
    });
    secrets.push(token);
    const source = encodeURIComponent(subscription.source);
    expect((await connect(`source=${source}`)).statusCode).toBe(401);
    expect((await connect(`source=${source}&token=${'x'.repeat(43)}`)).statusCode).toBe(401);
    expect((await connect(`source=personal:${'A'.repeat(22)}&token=${token}`)).statusCode).toBe(404);
    const { answer, body } = await connectSource(subscription.source, `&token=${token}`);
    expect(answer.statusCode).toBe(200);
    expect(body).toMatchObject({ source: subscription.source, calendarName: 'Расписание: Иванов' });
  });
});

describe('GET /google/callback', () => {
  it('creates a calendar, stores the target with its token sealed, starts pushing and answers the manage token', async () => {
    const user = 'u-callback-1';
    g.fake.consentAs(user);
    const { answer, body } = await connectSource('group:4242');
    expect(answer.statusCode).toBe(200);
    expect(answer.headers['cache-control']).toBe('no-store');
    expect(body.id).toMatch(TARGET_ID);
    expect(body).toMatchObject({ source: 'group:4242', calendarName: 'Группа 4242', reused: false });
    expect(body.manageToken).toMatch(/^[A-Za-z0-9_-]{43}$/);

    const calendars = g.fake.calendars(user);
    expect(calendars.map((calendar) => calendar.id)).toEqual([body.calendarId]);
    expect(calendars[0]).toMatchObject({ summary: 'Группа 4242', timeZone: g.ctx.config.timezone });

    const target = await g.ctx.google.targets.get(body.id);
    expect(target).toMatchObject({
      source: 'group:4242',
      calendarId: body.calendarId,
      calendarOwned: true,
      details: { googleUser: user, budgetKey: `user:${user}` },
      status: 'active',
    });
    const { secret: token } = (await g.ctx.google.targets.credential(body.id)) ?? { secret: '' };
    secrets.push(token);
    expect(token.length).toBeGreaterThan(10);
    const stored = await storedText(g.ctx);
    expect(stored).not.toContain(token);
    expect(stored).not.toContain(body.manageToken);

    expect(await g.ctx.registry.isActive('group:4242')).toBe(true);
    expect(await g.ctx.redis.sismember(g.ctx.keys.sourceTargets('group:4242'), body.id)).toBe(1);
    const pushes = await g.ctx.queues.pushQueue('google').getJobs(['waiting', 'delayed', 'prioritized']);
    expect(pushes.map((job) => job.data)).toContainEqual({ target: body.id, source: 'group:4242', reason: 'connect' });
    // Fetched once before the consent was even started: Google push is only for timetables the university knows.
    expect(await g.ctx.feeds.exists('group:4242')).toBe(true);
    expect(JSON.stringify(pushes.map((job) => job.data))).not.toContain(token);

    const view = await g.app.inject({
      method: 'GET',
      url: `/google/targets/${body.id}`,
      headers: bearer(body.manageToken),
    });
    expect(view.statusCode).toBe(200);
    expect(view.json()).toMatchObject({ id: body.id, status: 'active', calendarId: body.calendarId });
  });

  it('names the calendar after the timetable and sends a browser to its manage page with a scoped cookie', async () => {
    await storeTimetable(g.ctx, 'group:77');
    const user = 'u-browser-77';
    g.fake.consentAs(user);
    const started = await connect('source=group:77');
    const answer = await callback(await consent(started.headers.location as string), BROWSER);
    expect(answer.statusCode).toBe(303);
    expect(answer.headers['referrer-policy']).toBe('no-referrer');
    const location = String(answer.headers.location);
    const [, id = ''] = /^\/google\/targets\/([A-Za-z0-9_-]{22})$/.exec(location) ?? [];
    const cookie = [answer.headers['set-cookie'] ?? []].flat().find((line) => line.startsWith('tts-manage='));
    expect(cookie).toMatch(
      new RegExp(`^tts-manage=[\\w-]{43}; Path=/google/targets/${id}; SameSite=Lax; Max-Age=\\d+; HttpOnly; Secure$`),
    );
    const manageToken = /^tts-manage=([\w-]{43})/.exec(cookie ?? '')?.[1] ?? '';
    secrets.push(manageToken);
    expect(await g.ctx.google.targets.verifyManageToken(id, manageToken)).toBe(true);
    // A refresh is not queued: the timetable is there already.
    const refreshes = await g.ctx.queues.refresh.getJobs(['waiting', 'delayed', 'prioritized']);
    expect(refreshes.map((job) => job.data.source)).not.toContain('group:77');

    const page = await g.app.inject({
      method: 'GET',
      url: location,
      headers: { ...BROWSER, cookie: `tts-manage=${manageToken}` },
    });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    // Same-origin, not no-referrer: under no-referrer the browser would post Disconnect with `Origin: null`.
    expect(page.headers['referrer-policy']).toBe('same-origin');
    expect(page.headers['x-frame-options']).toBe('DENY');
    expect(page.headers['content-security-policy']).toMatch(/default-src 'none'.*frame-ancestors 'none'/);
    expect(page.body).toContain('<html lang="ru">');
    expect(page.body).toContain('Google Календарь подключён');
    expect(page.body).toContain('ИВТ-21');
    // ghtml escapes `=` in attribute values as `&#61;`, which the browser reads back as `=`.
    expect(page.body.replaceAll('&#61;', '=')).toContain(
      `${PUBLIC_URL}/google/targets/${id}/manage?token=${manageToken}`,
    );
    expect(page.body).toContain(`action="/google/targets/${id}/disconnect"`);
    // The JSON answer stays the API's, for the bearer of the token.
    const json = await g.app.inject({ method: 'GET', url: location, headers: bearer(manageToken) });
    expect(json.json()).toMatchObject({ id, calendarName: 'ИВТ-21' });

    // Another browser without the cookie, or with a wrong one, sees a page that says so, and no token.
    for (const headers of [BROWSER, { ...BROWSER, cookie: `tts-manage=${'x'.repeat(43)}` }]) {
      const stranger = await g.app.inject({ method: 'GET', url: location, headers });
      expect(stranger.statusCode).toBe(403);
      expect(stranger.body).toContain('Нет доступа к подключению');
      expect(stranger.body).not.toContain(manageToken);
    }
    const unknown = await g.app.inject({ method: 'GET', url: `/google/targets/${'u'.repeat(22)}`, headers: BROWSER });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.body).toContain('Подключение не найдено');

    // The manage link puts the cookie into another browser and leads to the clean URL.
    const link = await g.app.inject({
      method: 'GET',
      url: `${location}/manage?token=${manageToken}&lang=en`,
      headers: BROWSER,
    });
    expect(link.statusCode).toBe(303);
    expect(link.headers.location).toBe(location);
    expect(String(link.headers['set-cookie'])).toContain(`tts-manage=${manageToken}; Path=${location};`);
    const badLink = await g.app.inject({
      method: 'GET',
      url: `${location}/manage?token=${'y'.repeat(43)}&lang=en`,
      headers: BROWSER,
    });
    expect(badLink.statusCode).toBe(403);
    expect(badLink.body).toContain('Link does not fit');

    // Disconnect from another site is refused; from the page it removes the target and deletes the calendar.
    const form = {
      ...BROWSER,
      cookie: `tts-manage=${manageToken}`,
      'content-type': 'application/x-www-form-urlencoded',
    };
    const forged = await g.app.inject({
      method: 'POST',
      url: `${location}/disconnect`,
      headers: { ...form, origin: 'https://evil.example' },
      payload: 'deleteCalendar=yes&confirm=yes',
    });
    expect(forged.statusCode).toBe(403);
    expect(await g.ctx.google.targets.get(id)).toBeDefined();
    const done = await g.app.inject({
      method: 'POST',
      url: `${location}/disconnect`,
      headers: { ...form, origin: PUBLIC_URL },
      payload: 'deleteCalendar=yes&confirm=yes',
    });
    expect(done.statusCode).toBe(200);
    expect(done.body).toContain('отключён и удалён');
    expect(String(done.headers['set-cookie'])).toMatch(
      new RegExp(`^tts-manage=; Path=${location}; SameSite=Lax; Max-Age=0;`),
    );
    expect(await g.ctx.google.targets.get(id)).toBeUndefined();
    expect(g.fake.calendars(user)).toEqual([]);
  });

  it('answers a browser a friendly page when consent was refused or is used up', async () => {
    g.fake.consentAs('deny');
    const started = await connect('source=group:78');
    const back = await consent(started.headers.location as string);
    back.searchParams.set('lang', 'en');
    const refused = await callback(back, { accept: 'text/html' });
    expect(refused.statusCode).toBe(400);
    expect(refused.headers['content-type']).toMatch(/^text\/html/);
    expect(refused.body).toContain('Connection cancelled');
    back.searchParams.set('lang', 'ru');
    const replay = await callback(back, BROWSER);
    expect(replay.statusCode).toBe(400);
    expect(replay.body).toContain('Не удалось подключить');
    expect(replay.body).toContain('already used');
  });

  it('reuses the target when the same Google user consents again for the same source', async () => {
    const user = 'u-reconnect-1';
    g.fake.consentAs(user);
    const first = (await connectSource('employee:17')).body;
    const oldToken = (await g.ctx.google.targets.credential(first.id))?.secret ?? '';
    await g.ctx.google.targets.markStatus(first.id, 'needs-consent', 'Google refused the refresh token', g.ctx.now());

    const { answer, body } = await connectSource('employee:17');
    expect(answer.statusCode).toBe(200);
    expect(body).toMatchObject({ id: first.id, calendarId: first.calendarId, reused: true });
    expect(body.manageToken).not.toBe(first.manageToken);
    expect(g.fake.calendars(user)).toHaveLength(1);
    const target = await g.ctx.google.targets.get(first.id);
    expect(target).toMatchObject({ status: 'active', credentialVersion: 2, reconcileRequested: true });
    expect((await g.ctx.google.targets.credential(first.id))?.secret).not.toBe(oldToken);
    expect(await g.ctx.google.targets.verifyManageToken(first.id, body.manageToken)).toBe(true);
    expect(await g.ctx.google.targets.verifyManageToken(first.id, first.manageToken)).toBe(false);

    // A different source of the same user is a target of its own.
    const other = (await connectSource('employee:18')).body;
    expect(other.id).not.toBe(first.id);
  });

  it('gives a reused target a new calendar when its owner deleted the old one', async () => {
    const user = 'u-reconnect-2';
    g.fake.consentAs(user);
    const first = (await connectSource('group:5')).body;
    g.fake.ownerDeleteCalendar(first.calendarId);
    await g.ctx.google.targets.index(first.id).set('a'.repeat(52), 'hash');
    await g.ctx.google.targets.markStatus(first.id, 'calendar-deleted', 'the calendar was deleted', g.ctx.now());

    const { body } = await connectSource('group:5');
    expect(body).toMatchObject({ id: first.id, reused: true });
    expect(body.calendarId).not.toBe(first.calendarId);
    expect(g.fake.calendars(user).map((calendar) => calendar.id)).toEqual([body.calendarId]);
    expect(await g.ctx.google.targets.get(first.id)).toMatchObject({
      status: 'active',
      calendarId: body.calendarId,
      calendarOwned: true,
    });
    expect(await g.ctx.google.targets.index(first.id).size()).toBe(0);
  });

  it('gives a reused target a new calendar when its owner deleted the old one before a push noticed', async () => {
    const user = 'u-reconnect-3';
    g.fake.consentAs(user);
    await storeTimetable(g.ctx, 'group:6');
    const first = (await connectSource('group:6')).body;
    g.fake.ownerDeleteCalendar(first.calendarId);
    expect(await g.ctx.google.targets.get(first.id)).toMatchObject({ status: 'active' });

    const { body } = await connectSource('group:6');
    expect(body).toMatchObject({ id: first.id, reused: true });
    expect(body.calendarId).not.toBe(first.calendarId);
    expect(g.fake.calendars(user).map((calendar) => calendar.id)).toEqual([body.calendarId]);
    expect(await g.ctx.google.targets.get(first.id)).toMatchObject({
      status: 'active',
      calendarId: body.calendarId,
      calendarOwned: true,
    });
    const result = await runPush(first.id, 'group:6');
    expect(result).toMatchObject({ reconciled: true });
    expect(g.fake.events(body.calendarId).length).toBeGreaterThan(0);
    expect(await g.ctx.google.targets.get(first.id)).toMatchObject({ status: 'active', calendarId: body.calendarId });
  });

  it('deletes the new calendar of a reconnect when the target is removed meanwhile', async () => {
    const user = 'u-reconnect-4';
    g.fake.consentAs(user);
    const first = (await connectSource('group:7')).body;
    g.fake.ownerDeleteCalendar(first.calendarId);
    const store = g.ctx.google.targets;
    const replaceCalendar = store.replaceCalendar.bind(store);
    // The holder of the manage token disconnects while the new calendar is being made.
    const spy = vi.spyOn(store, 'replaceCalendar').mockImplementationOnce(async (...args) => {
      await store.remove(first.id);
      return replaceCalendar(...args);
    });
    try {
      const { answer } = await connectSource('group:7');
      expect(answer.statusCode).toBe(409);
      expect(spy).toHaveBeenCalledTimes(1);
    } finally {
      spy.mockRestore();
    }
    expect(g.fake.calendars(user)).toEqual([]);
  });

  it('ends two consents of one Google user for one source at once on one target with one calendar', async () => {
    const user = 'u-concurrent';
    g.fake.consentAs(user);
    const backs = [];
    for (let i = 0; i < 2; i++) backs.push(await consent((await connect('source=group:8')).headers.location as string));
    const answers = await Promise.all(backs.map((back) => callback(back)));
    const [a, b] = answers.map((answer) => {
      expect(answer.statusCode).toBe(200);
      const body = answer.json() as { id: string; calendarId: string; manageToken: string; reused: boolean };
      secrets.push(body.manageToken);
      return body;
    });
    expect(b?.id).toBe(a?.id);
    expect(b?.calendarId).toBe(a?.calendarId);
    expect([a?.reused, b?.reused].sort()).toEqual([false, true]);
    expect(g.fake.calendars(user).map((calendar) => calendar.id)).toEqual([a?.calendarId]);
    expect(await g.ctx.redis.smembers(g.ctx.keys.sourceTargets('group:8'))).toEqual([a?.id]);
  });

  it('answers 400 when consent was refused, and the state is used up', async () => {
    g.fake.consentAs('deny');
    const started = await connect('source=group:9');
    const back = await consent(started.headers.location as string);
    expect(back.searchParams.get('error')).toBe('access_denied');
    const answer = await callback(back);
    expect(answer.statusCode).toBe(400);
    expect(answer.json().error).toMatch(/consent was refused/);
    const again = await callback(back);
    expect(again.json().error).toMatch(/unknown, expired or already used/);
    expect(await g.ctx.google.targets.page(0, 500)).toMatchObject({
      targets: expect.not.arrayContaining([expect.objectContaining({ source: 'group:9' })]),
    });
  });

  it('refuses a replayed, unknown, malformed or missing state', async () => {
    const started = await connect('source=group:10');
    const back = await consent(started.headers.location as string);
    expect((await callback(back)).statusCode).toBe(200);
    const replay = await callback(back);
    expect(replay.statusCode).toBe(400);
    expect(replay.json().error).toMatch(/already used/);

    const unknown = await g.app.inject({ method: 'GET', url: `/google/callback?code=abc&state=${'s'.repeat(43)}` });
    expect(unknown.json()).toEqual({
      error: 'unknown, expired or already used consent state: start again at /google/connect',
      code: 'GOOGLE_CALLBACK_INVALID',
    });
    const malformed = await g.app.inject({ method: 'GET', url: '/google/callback?code=abc&state=short' });
    expect(malformed.json()).toEqual({ error: 'malformed consent state', code: 'GOOGLE_CALLBACK_INVALID' });
    const missing = await g.app.inject({ method: 'GET', url: '/google/callback?code=abc' });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().error).toMatch(/^state: is required: start at \/google\/connect$/);
  });

  it('binds the consent to the browser that started it with a short-lived HttpOnly cookie', async () => {
    const started = await connect('source=group:12');
    const setCookie = String(started.headers['set-cookie']);
    expect(setCookie).toMatch(
      new RegExp(
        `^tts-consent-[0-9a-f]{16}=[\\w-]{43}; Max-Age=${CONSENT_TTL_SECONDS}; Path=/google; HttpOnly; SameSite=Lax; Secure$`,
      ),
    );
    const back = await consent(started.headers.location as string);
    // Another browser (the lured victim of a login CSRF) has no cookie, or someone else's.
    for (const cookie of [undefined, `${setCookie.split('=')[0]}=${'x'.repeat(43)}`]) {
      const stranger = await g.app.inject({
        method: 'GET',
        url: `${back.pathname}${back.search}`,
        headers: { ...JSON_ACCEPT, ...(cookie ? { cookie } : {}) },
      });
      expect(stranger.statusCode).toBe(400);
      expect(stranger.json().error).toMatch(
        /^(this consent was started in another browser|unknown, expired or already used)/,
      );
    }
    // The first refusal spent the state: the starting browser cannot finish it either, and nothing was connected.
    const owner = await callback(back);
    expect(owner.json().error).toMatch(/already used/);
    expect(await g.ctx.redis.smembers(g.ctx.keys.sourceTargets('group:12'))).toEqual([]);
  });

  it('says the consent belongs to another browser when the cookie is missing, and expires the cookie', async () => {
    const started = await connect('source=group:13');
    const back = await consent(started.headers.location as string);
    const answer = await g.app.inject({ method: 'GET', url: `${back.pathname}${back.search}`, headers: JSON_ACCEPT });
    expect(answer.statusCode).toBe(400);
    expect(answer.json()).toEqual({
      error:
        'this consent was started in another browser, or its cookie was blocked or expired: nothing was connected; start again at /google/connect in this browser',
      code: 'GOOGLE_CALLBACK_INVALID',
    });
    expect(String(answer.headers['set-cookie'])).toMatch(/^tts-consent-[0-9a-f]{16}=; Max-Age=0; Path=\/google;/);
    jar.clear();
  });

  it('answers 400 when Google refuses the code, and connects nothing', async () => {
    const started = await connect('source=group:11');
    const back = await consent(started.headers.location as string);
    back.searchParams.set('code', 'not-a-code-google-issued');
    const answer = await callback(back);
    expect(answer.statusCode).toBe(400);
    expect(answer.json().error).toMatch(/^Google did not grant/);
  });

  it('answers 400 when the calendar scope was not granted', async () => {
    g.fake.consentAs(undefined, { grant: ['openid'] });
    const started = await connect('source=group:12');
    const answer = await callback(await consent(started.headers.location as string));
    expect(answer.statusCode).toBe(400);
    expect(answer.json().error).toMatch(/^Google did not grant/);
  });
});

describe('GET and DELETE /google/targets/:id', () => {
  it('needs the manage token or the admin token', async () => {
    const { body } = await connectSource('group:20');
    const url = `/google/targets/${body.id}`;
    const none = await g.app.inject({ method: 'GET', url });
    expect(none.statusCode).toBe(401);
    expect(none.headers['www-authenticate']).toMatch(/^Bearer/);
    expect((await g.app.inject({ method: 'GET', url, headers: bearer('wrong') })).statusCode).toBe(401);
    expect((await g.app.inject({ method: 'DELETE', url, headers: bearer('wrong') })).statusCode).toBe(401);
    expect((await g.app.inject({ method: 'GET', url, headers: bearer(TEST_ADMIN_TOKEN) })).statusCode).toBe(200);
    expect(
      (await g.app.inject({ method: 'GET', url: '/google/targets/bad', headers: bearer(body.manageToken) })).statusCode,
    ).toBe(400);
    expect(
      (
        await g.app.inject({
          method: 'GET',
          url: `/google/targets/${'B'.repeat(22)}`,
          headers: bearer(body.manageToken),
        })
      ).statusCode,
    ).toBe(404);

    const view = await g.app.inject({ method: 'GET', url, headers: bearer(body.manageToken) });
    const text = view.body;
    expect(text).not.toContain(body.manageToken);
    expect(text).not.toMatch(/refreshToken|manageToken/);
    expect(view.json()).toMatchObject({
      id: body.id,
      source: 'group:20',
      calendarOwned: true,
      pendingPush: { state: 'waiting' },
      indexSize: 0,
      lastPush: null,
    });
  });

  it('disconnects for the holder of the manage token, deleting the calendar when asked', async () => {
    const user = 'u-disconnect';
    g.fake.consentAs(user);
    const kept = (await connectSource('group:21')).body;
    const dropped = (await connectSource('group:22')).body;

    const bad = await g.app.inject({
      method: 'DELETE',
      url: `/google/targets/${kept.id}?deleteCalendar=yes`,
      headers: bearer(kept.manageToken),
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error).toMatch(/^deleteCalendar: /);

    expect(
      (await g.app.inject({ method: 'DELETE', url: `/google/targets/${kept.id}`, headers: bearer(kept.manageToken) }))
        .statusCode,
    ).toBe(204);
    expect(
      (
        await g.app.inject({
          method: 'DELETE',
          url: `/google/targets/${dropped.id}?deleteCalendar=true`,
          headers: bearer(dropped.manageToken),
        })
      ).statusCode,
    ).toBe(204);
    expect(g.fake.calendars(user).map((calendar) => calendar.id)).toEqual([kept.calendarId]);
    expect(await g.ctx.google.targets.get(kept.id)).toBeUndefined();
    expect(await g.ctx.google.targets.get(dropped.id)).toBeUndefined();
    expect(await g.ctx.redis.smembers(g.ctx.keys.sourceTargets('group:22'))).toEqual([]);
    // The token died with the target.
    expect(
      (await g.app.inject({ method: 'GET', url: `/google/targets/${kept.id}`, headers: bearer(kept.manageToken) }))
        .statusCode,
    ).toBe(404);
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

  it('answers 503 naming what to set', async () => {
    const answer = await bare.app.inject({ method: 'GET', url: '/google/connect?source=group:1' });
    expect(answer.statusCode).toBe(503);
    expect(answer.json().error).toMatch(/GOOGLE_CLIENT_ID/);
  });
});
