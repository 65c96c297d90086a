/**
 * Sign-ins on the page open browser sessions, never feed URLs: six sign-ins on phones leave the URL a calendar
 * reads working (even with five URLs issued through the API already, as a subscription from before sessions may
 * have), the personal page lists the live URLs with when and by what kind of client each was last read, and
 * revoking one (confirmed by a ticked box) makes it answer 404. Sessions are bounded: beyond the most, the
 * oldest is closed; signing out closes this browser's. A new feed URL, and «sign out on every other device»,
 * close every session but the asking browser's (and end sign-ins by a feed-token cookie from before sessions);
 * a session in use is renewed.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { buildApp } from '../../src/http/app.ts';
import { startWorkers, type WorkerSet } from '../../src/jobs/workers.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { hashToken } from '../../src/security/tokens.ts';
import { startSimulator } from '../../src/simulator/index.ts';
import { MAX_LIVE_TOKENS, MAX_SESSIONS, SESSION_DAYS, URL_KEY_LENGTH } from '../../src/store/subscription-store.ts';
import { until } from '../../testkit/poll.ts';
import { testContext } from '../support/service.ts';
import { simControl } from '../upstream/sim-control.ts';

const PUBLIC_URL = 'http://localhost:8080';
const GOOGLE = 'Google-Calendar-Importer';
const IPHONE = 'iOS/17.4 (21E219) dataaccessd/1.0';
type Simulator = Awaited<ReturnType<typeof startSimulator>>;

let simulator: Simulator;
let ctx: ServiceContext;
let workers: WorkerSet;
let app: FastifyInstance;
let closeContext: () => Promise<void>;
let users: string[];

beforeAll(async () => {
  simulator = await startSimulator({ port: 0, seed: 7, groups: 6, employees: 6, users: 4 });
  users = (await simControl(simulator.url).users()).map((user) => user.token);
  const opened = await testContext({
    UNIVERSITY_API_URL: simulator.url,
    PUBLIC_URL,
    SIGN_UPS_PER_CLIENT: '200/10m',
    SIGN_UPS_TOTAL: '400/1m',
  });
  ctx = opened.context;
  closeContext = opened.close;
  workers = await startWorkers(ctx, inject('redisUrl'));
  app = await buildApp(ctx, { logger: ctx.logger });
});
afterAll(async () => {
  await app.close();
  await workers.close();
  await closeContext();
  await simulator.close();
});

/** A sign-in on the page, as a phone's browser posts it: the session cookie it gets. */
async function signInOnPage(credential: string): Promise<string> {
  const answer = await app.inject({
    method: 'POST',
    url: '/timetables/personal',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: PUBLIC_URL },
    payload: `credential=${encodeURIComponent(credential)}`,
  });
  expect(answer.statusCode).toBe(303);
  const cookie = /(tts-session=[\w-]+\.[\w-]+);/.exec(String(answer.headers['set-cookie']))?.[1];
  if (cookie === undefined) throw new Error(`no session cookie in ${String(answer.headers['set-cookie'])}`);
  return cookie;
}

function feed(token: string, userAgent = GOOGLE) {
  return app.inject({ method: 'GET', url: `/feeds/personal/${token}.ics`, headers: { 'user-agent': userAgent } });
}

function post(url: string, cookie: string, payload: string) {
  return app.inject({
    method: 'POST',
    url,
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: PUBLIC_URL, cookie },
    payload,
  });
}

it('leaves every calendar URL working after six sign-ins on phones, lists them with their readers, and revokes one', async () => {
  const credential = users[0] ?? '';
  // Five URLs issued through the API (the most it keeps), each read by a calendar: as a subscription from before.
  const tokens: string[] = [];
  for (let i = 0; i < MAX_LIVE_TOKENS; i++) {
    const created = await app.inject({ method: 'POST', url: '/api/subscriptions', payload: { credential } });
    tokens.push(created.json<{ token: string }>().token);
  }
  const id = (await ctx.subscriptions.idByToken(tokens[0] ?? '')) ?? '';
  const [google = '', apple = ''] = tokens;
  await until(
    () => feed(google),
    (answer) => answer.statusCode === 200,
    20_000,
  );
  expect((await feed(apple, IPHONE)).statusCode).toBe(200);

  const cookies: string[] = [];
  for (let i = 0; i < 6; i++) cookies.push(await signInOnPage(credential));
  // No sign-in took a URL: the five answer as before, and the page's own URL is one more.
  for (const token of tokens) expect((await feed(token, token === apple ? IPHONE : GOOGLE)).statusCode).toBe(200);
  expect(await ctx.subscriptions.liveTokenCount(id)).toBe(MAX_LIVE_TOKENS + 1);
  const pageToken = (await ctx.subscriptions.pageToken(id)) ?? '';
  expect(tokens).not.toContain(pageToken);
  // Every phone stays signed in, and each shows the same page URL.
  for (const cookie of cookies) {
    const page = await app.inject({ method: 'GET', url: '/timetables/personal', headers: { cookie } });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain(`/feeds/personal/${pageToken}.ics`);
  }

  const page = (await app.inject({ method: 'GET', url: '/timetables/personal', headers: { cookie: cookies[0] } })).body;
  const key = (token: string) => hashToken(token).slice(0, URL_KEY_LENGTH);
  const item = (token: string) => new RegExp(`data-url-key="${key(token)}">[\\s\\S]*?</li>`).exec(page)?.[0] ?? '';
  expect(page).toContain('Адреса ленты');
  expect(item(google)).toContain('Последнее чтение: Google Календарь,');
  expect(item(apple)).toContain('Последнее чтение: Календарь Apple,');
  expect(item(pageToken)).toContain('Адрес, показанный выше');
  expect(item(pageToken)).toContain('ещё не читали');
  // Revoking a URL a calendar reads says that calendar stops updating; one nobody read needs no warning.
  expect(item(google)).toContain(
    '<p class="notice" data-revoke-warning>Google Календарь, который читает этот адрес, перестанет обновляться: подпишите его заново по адресу, показанному выше.</p>',
  );
  expect(item(apple)).toContain('Календарь Apple, который читает этот адрес, перестанет обновляться');
  expect(item(pageToken)).not.toContain('data-revoke-warning');
  expect(page).toContain('Вход выполнен в 6 браузерах, считая этот.');
  // Never a token on the list, nor a raw User-Agent.
  for (const token of tokens) expect(page.split(`/feeds/personal/${token}`)).toHaveLength(1);
  expect(page).not.toContain('dataaccessd');

  // Unconfirmed, nothing happens; confirmed, the calendar's URL answers 404.
  const unconfirmed = await post('/timetables/personal/revoke-url', cookies[0] ?? '', `url=${key(google)}`);
  expect(unconfirmed.headers.location).toBe('/timetables/personal?done=confirm-revoke#feed-urls');
  expect((await feed(google)).statusCode).toBe(200);
  const revoked = await post('/timetables/personal/revoke-url', cookies[0] ?? '', `url=${key(google)}&confirm=yes`);
  expect(revoked.statusCode).toBe(303);
  expect(revoked.headers.location).toBe('/timetables/personal?done=url-revoked#feed-urls');
  expect((await feed(google)).statusCode).toBe(404);
  expect((await feed(apple)).statusCode).toBe(200);
  const again = await post('/timetables/personal/revoke-url', cookies[0] ?? '', `url=${key(google)}&confirm=yes`);
  expect(again.headers.location).toBe('/timetables/personal?done=url-gone#feed-urls');

  // Revoking the page's own URL gives the page a new one; the browsers stay signed in.
  const replaced = await post('/timetables/personal/revoke-url', cookies[1] ?? '', `url=${key(pageToken)}&confirm=yes`);
  expect(replaced.headers.location).toBe('/timetables/personal?done=page-url-revoked#feed-urls');
  expect((await feed(pageToken)).statusCode).toBe(404);
  const newPageToken = (await ctx.subscriptions.pageToken(id)) ?? '';
  expect(newPageToken).not.toBe(pageToken);
  const after = await app.inject({ method: 'GET', url: '/timetables/personal', headers: { cookie: cookies[2] } });
  expect(after.body).toContain(`/feeds/personal/${newPageToken}.ics`);
});

it('keeps at most the most sessions, closing the oldest, and closes its own at sign-out', async () => {
  const credential = users[1] ?? '';
  const cookies: string[] = [];
  for (let i = 0; i < MAX_SESSIONS + 1; i++) cookies.push(await signInOnPage(credential));
  const personal = (cookie: string) => app.inject({ method: 'GET', url: '/timetables/personal', headers: { cookie } });
  // The oldest session is closed (the browser is sent to sign in); every other one works.
  expect((await personal(cookies[0] ?? '')).headers.location).toBe('/?done=signed-out-elsewhere');
  for (const cookie of cookies.slice(1)) expect((await personal(cookie)).statusCode).toBe(200);
  // Only one feed URL came of all those sign-ins: the page's own.
  const id = /tts-session=([\w-]+)\./.exec(cookies[1] ?? '')?.[1] ?? '';
  expect(await ctx.subscriptions.liveTokenCount(id)).toBe(1);
  const signedOut = await post('/timetables/personal/sign-out', cookies[1] ?? '', '');
  expect(signedOut.headers.location).toBe('/?done=signed-out');
  expect(String(signedOut.headers['set-cookie'])).toContain('tts-session=; Path=/; SameSite=Lax; Max-Age=0');
  // Closed on the server too: the cookie sent again signs in nothing.
  expect((await personal(cookies[1] ?? '')).headers.location).toBe('/?done=signed-out-elsewhere');
  expect((await personal(cookies[2] ?? '')).statusCode).toBe(200);
});

/** The personal page as the browser with `cookie` opens it. */
function personal(cookie: string) {
  return app.inject({ method: 'GET', url: '/timetables/personal', headers: { cookie } });
}

it('signs every other browser out at a new feed URL and at «sign out on every other device»', async () => {
  const credential = users[2] ?? '';
  const [lab = '', phone = ''] = [await signInOnPage(credential), await signInOnPage(credential)];
  const id = /tts-session=([\w-]+)\./.exec(phone)?.[1] ?? '';
  expect((await personal(phone)).body).toContain('Вход выполнен в 2 браузерах, считая этот.');

  // The phone asks for a new URL: the browser left signed in on a lab computer is signed out, and never sees it.
  const rotated = await post('/timetables/personal/rotate', phone, '');
  expect(rotated.headers.location).toBe('/timetables/personal?done=rotated');
  expect((await personal(lab)).headers.location).toBe('/?done=signed-out-elsewhere');
  const mine = await personal(phone);
  expect(mine.statusCode).toBe(200);
  expect(mine.body).toContain(`/feeds/personal/${(await ctx.subscriptions.pageToken(id)) ?? ''}.ics`);
  expect(mine.body).toContain('Вход выполнен только в этом браузере.');
  expect(await ctx.subscriptions.sessionCount(id, Date.now())).toBe(1);

  // Two more browsers sign in; the phone signs every other one out, and stays signed in itself.
  const [laptop = '', friend = ''] = [await signInOnPage(credential), await signInOnPage(credential)];
  expect((await personal(friend)).body).toContain('Вход выполнен в 3 браузерах, считая этот.');
  const others = await post('/timetables/personal/sign-out-others', phone, '');
  expect(others.headers.location).toBe('/timetables/personal?done=signed-out-others#sign-out');
  expect(others.headers['set-cookie']).toBeUndefined();
  // A browser signed out from elsewhere is told so at home, not sent there silently; its dead cookie is cleared.
  const laptopPage = await personal(laptop);
  expect(laptopPage.headers.location).toBe('/?done=signed-out-elsewhere');
  expect(String(laptopPage.headers['set-cookie'])).toContain('tts-session=; Path=/; SameSite=Lax; Max-Age=0');
  const home = await app.inject({ method: 'GET', url: String(laptopPage.headers.location) });
  expect(home.body).toContain('<p class="notice" role="status">Вход в этом браузере завершён с другого устройства');
  // Opening the home page itself with the dead cookie says it too, once (the cookie is forgotten).
  const direct = await app.inject({ method: 'GET', url: '/', headers: { cookie: friend } });
  expect(direct.body).toContain('Вход в этом браузере завершён с другого устройства');
  expect(String(direct.headers['set-cookie'])).toContain('tts-session=; Path=/; SameSite=Lax; Max-Age=0');
  expect((await app.inject({ method: 'GET', url: '/' })).body).not.toContain('Вход в этом браузере завершён');
  // A form of the personal page sent from the dead browser leads home with the same words.
  expect((await post('/timetables/personal/rotate', friend, '')).headers.location).toBe('/timetables/personal');
  expect((await post('/timetables/personal/sign-out-others', friend, '')).headers.location).toBe(
    '/?done=signed-out-elsewhere',
  );
  const after = await app.inject({
    method: 'GET',
    url: '/timetables/personal?done=signed-out-others',
    headers: { cookie: phone },
  });
  expect(after.statusCode).toBe(200);
  expect(/id="sign-out">[\s\S]*?<\/div>/.exec(after.body)?.[0]).toContain('все другие браузеры вышли');
  // The feed URL keeps working: signing browsers out is not revoking a calendar's URL.
  expect((await feed((await ctx.subscriptions.pageToken(id)) ?? '')).statusCode).toBe(200);
});

it('ends sign-ins by a feed token from before sessions at «sign out on every other device»', async () => {
  const credential = users[3] ?? '';
  const signUp = () => app.inject({ method: 'POST', url: '/api/subscriptions', payload: { credential } });
  const { id, token } = (await signUp()).json<{ id: string; token: string }>();
  const second = (await signUp()).json<{ token: string }>().token;
  // Two browsers signed in before sessions (their cookies hold feed tokens), and one with a session.
  const legacy = `tts-personal=${id}.${token}`;
  const other = `tts-personal=${id}.${second}`;
  const session = await signInOnPage(credential);
  // The legacy browser's page marks its own URL as the one on this page, and counts itself among the browsers.
  const page = (await personal(legacy)).body;
  const key = hashToken(token).slice(0, URL_KEY_LENGTH);
  expect(new RegExp(`data-url-key="${key}">[\\s\\S]*?</li>`).exec(page)?.[0]).toContain('Адрес, показанный выше');
  expect(page).toContain('Вход выполнен в 2 браузерах, считая этот.');
  expect((await personal(other)).statusCode).toBe(200);

  // The browser with a session signs every other one out: the feed-token cookie no longer signs in, though the
  // URL still works for the calendar that reads it.
  const others = await post('/timetables/personal/sign-out-others', session, '');
  expect(others.headers.location).toBe('/timetables/personal?done=signed-out-others#sign-out');
  for (const cookie of [legacy, other])
    expect((await personal(cookie)).headers.location).toBe('/?done=signed-out-elsewhere');
  expect((await feed(token)).statusCode).toBe(200);
  expect((await feed(second)).statusCode).toBe(200);
  expect((await personal(session)).statusCode).toBe(200);
});

it('renews a session in use at most once a day, and lets an unused one end', async () => {
  const credential = users[3] ?? '';
  const cookie = await signInOnPage(credential);
  const [, id = '', secret = ''] = /tts-session=([\w-]+)\.([\w-]+)/.exec(cookie) ?? [];
  const expiry = async () => Number(await ctx.redis.zscore(ctx.keys.subscriptionSessions(id), hashToken(secret)));
  const opened = await expiry();
  const day = 86_400_000;
  // Used an hour later: not renewed (one write a day at most).
  expect(await ctx.subscriptions.verifySession(id, secret, Date.now() + 3_600_000)).toBe(true);
  expect(await expiry()).toBe(opened);
  // Used 60 days later: it lasts 90 days from then.
  const later = Date.now() + 60 * day;
  expect(await ctx.subscriptions.verifySession(id, secret, later)).toBe(true);
  expect(await expiry()).toBe(later + SESSION_DAYS * day);
  expect(await ctx.subscriptions.sessionCount(id, opened + day)).toBeGreaterThanOrEqual(1);
});
