/**
 * The owner's controls of a personal subscription, as a browser posts them with its session cookie: saved
 * options change the plain feed (body and ETag; URL parameters win), rotating revokes every feed token of the
 * subscription and hands the cookie the one new one, deleting needs its box ticked and takes everything, forms
 * from other sites are refused, and a browser without a session is sent to sign in. A save is a change by date
 * too (If-Modified-Since), saved variants cost no client's limit on new variants, and the personal page starts
 * from the saved options.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { buildApp } from '../../src/http/app.ts';
import { startWorkers, type WorkerSet } from '../../src/jobs/workers.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { startSimulator } from '../../src/simulator/index.ts';
import { until } from '../../testkit/poll.ts';
import { testContext } from '../support/service.ts';
import { simControl } from '../upstream/sim-control.ts';

const PUBLIC_URL = 'http://localhost:8080';
type Simulator = Awaited<ReturnType<typeof startSimulator>>;

let simulator: Simulator;
let ctx: ServiceContext;
let workers: WorkerSet;
let app: FastifyInstance;
let closeContext: () => Promise<void>;

beforeAll(async () => {
  simulator = await startSimulator({ port: 0, seed: 3, groups: 12, employees: 12, users: 6 });
  // One new variant a minute per client: every request here comes from one address.
  const opened = await testContext({
    UNIVERSITY_API_URL: simulator.url,
    PUBLIC_URL,
    VARIANT_RENDERS_PER_CLIENT: '1/1m',
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

/** A signed-up subscription whose feed is published, and the cookie of a browser signed in to it. */
async function signedIn(index: number) {
  const user = (await simControl(simulator.url).users())[index];
  if (!user) throw new Error('the simulator has too few users');
  const created = await app.inject({ method: 'POST', url: '/api/subscriptions', payload: { credential: user.token } });
  const { id, token } = created.json<{ id: string; token: string }>();
  await until(
    () => app.inject({ method: 'GET', url: `/feeds/personal/${token}.ics` }),
    (answer) => answer.statusCode === 200,
    20_000,
  );
  return { id, token, cookie: `tts-personal=${id}.${token}` };
}

function post(url: string, cookie: string | undefined, payload = '', origin = PUBLIC_URL) {
  return app.inject({
    method: 'POST',
    url,
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin, ...(cookie ? { cookie } : {}) },
    payload,
  });
}

it('saves options that the plain personal feed then serves, with query parameters still winning', async () => {
  const { id, token, cookie } = await signedIn(0);
  const feedUrl = `/feeds/personal/${token}.ics`;
  const plain = await app.inject({ method: 'GET', url: feedUrl });
  expect(plain.body).not.toContain('BEGIN:VALARM');

  const saved = await post(
    '/timetables/personal/options',
    cookie,
    'alarm=15&title=%7Bsubject%7D%21&subgroup=&action=save',
  );
  expect(saved.statusCode).toBe(303);
  expect(saved.headers.location).toBe('/timetables/personal?done=options#options');
  expect((await ctx.subscriptions.get(id))?.feedOptions).toEqual({ alarmMinutes: 15, titleTemplate: '{subject}!' });

  const after = await until(
    () => app.inject({ method: 'GET', url: feedUrl }),
    (answer) => answer.body.includes('BEGIN:VALARM'),
    5_000,
  );
  expect(after.body).toContain('TRIGGER:-PT15M');
  expect(after.headers.etag).not.toBe(plain.headers.etag);
  const revalidated = await app.inject({
    method: 'GET',
    url: feedUrl,
    headers: { 'if-none-match': String(after.headers.etag) },
  });
  expect(revalidated.statusCode).toBe(304);
  const head = await app.inject({ method: 'HEAD', url: feedUrl });
  expect(head.headers.etag).toBe(after.headers.etag);
  // The URL's own options win over the saved ones.
  const own = await app.inject({ method: 'GET', url: `${feedUrl}?alarm=30` });
  expect(own.body).toContain('TRIGGER:-PT30M');
  expect(own.body).not.toContain('TRIGGER:-PT15M');

  const refused = await post('/timetables/personal/options', cookie, 'subgroup=77&action=save');
  expect(refused.statusCode).toBe(400);
  expect(refused.body).toContain('Настройки не сохранены');
  expect(refused.body).toContain('В этом расписании нет подгруппы 77.');
  // The way back shows the form again with the value typed and the reason beside its field.
  expect(refused.body).toContain('href="/timetables/personal?subgroup&#61;77#options"');
  const back = await app.inject({ method: 'GET', url: '/timetables/personal?subgroup=77', headers: { cookie } });
  expect(back.statusCode).toBe(400);
  expect(back.body).toContain('<option value="77" selected>77</option>');
  expect(back.body).toMatch(/data-field-error="subgroup">В этом расписании нет подгруппы 77\./);
  // Options typed with Russian placeholders are saved by their English names: the feed is the one saved before.
  const russian = await post(
    '/timetables/personal/options',
    cookie,
    `alarm=15&title=${encodeURIComponent('{предмет}!')}&action=save`,
  );
  expect(russian.statusCode).toBe(303);
  expect((await ctx.subscriptions.get(id))?.feedOptions).toEqual({ alarmMinutes: 15, titleTemplate: '{subject}!' });
  // The default title, in either language, is no option to save.
  await post(
    '/timetables/personal/options',
    cookie,
    `title=${encodeURIComponent('{предмет} ({вид})')}&alarm=15&action=save`,
  );
  expect((await ctx.subscriptions.get(id))?.feedOptions).toEqual({ alarmMinutes: 15 });
  const cleared = await post('/timetables/personal/options', cookie, 'alarm=15&action=clear');
  expect(cleared.headers.location).toBe('/timetables/personal?done=options-cleared#options');
  const whole = await until(
    () => app.inject({ method: 'GET', url: feedUrl }),
    (answer) => !answer.body.includes('BEGIN:VALARM'),
    5_000,
  );
  expect(whole.headers.etag).toBe(plain.headers.etag);
});

it('rotates the feed URL: every old token stops, the cookie holds the new one', async () => {
  const { id, token, cookie } = await signedIn(1);
  // Another device signed in to it (or a leaked URL): its token goes too.
  const other = await signedIn(1);
  expect(other.id).toBe(id);
  const answer = await post('/timetables/personal/rotate', cookie);
  expect(answer.statusCode).toBe(303);
  expect(answer.headers.location).toBe('/timetables/personal?done=rotated');
  // Signed in before sessions, by the token just revoked: the browser gets a session, its page the new URL.
  const [, session = ''] =
    new RegExp(`tts-session=${id}\\.([\\w-]+);`).exec(String(answer.headers['set-cookie'])) ?? [];
  expect(await ctx.subscriptions.verifySession(id, session)).toBe(true);
  const newToken = (await ctx.subscriptions.pageToken(id)) ?? '';
  expect(newToken).not.toBe(token);
  expect(await ctx.subscriptions.verifyToken(id, newToken)).toBe(true);
  expect(await ctx.subscriptions.verifyToken(id, token)).toBe(false);
  expect(await ctx.subscriptions.liveTokenCount(id)).toBe(1);
  for (const old of [token, other.token])
    expect((await app.inject({ method: 'GET', url: `/feeds/personal/${old}.ics` })).statusCode).toBe(404);
  expect((await app.inject({ method: 'GET', url: `/feeds/personal/${newToken}.ics` })).statusCode).toBe(200);
  // A second tab rotating with the old cookie leaves the cookie alone (the first tab's new one may be there by
  // now) and sends the browser to the page, which sends a dead cookie to sign in.
  const stale = await post('/timetables/personal/rotate', cookie);
  expect(stale.statusCode).toBe(303);
  expect(stale.headers.location).toBe('/timetables/personal');
  expect(stale.headers['set-cookie']).toBeUndefined();
  expect(await ctx.subscriptions.verifyToken(id, newToken)).toBe(true);
  const fresh = await app.inject({
    method: 'GET',
    url: '/timetables/personal',
    headers: { cookie: `tts-session=${id}.${session}` },
  });
  expect(fresh.body).toContain(`${newToken}.ics`);
  // The dead cookie is sent home with a word that says the sign-in ended on another device.
  const page = await app.inject({ method: 'GET', url: '/timetables/personal', headers: { cookie } });
  expect(page.headers.location).toBe('/?done=signed-out-elsewhere');
});

it('refuses other sites, sends browsers without a session to sign in, and deletes only when confirmed', async () => {
  const { id, token, cookie } = await signedIn(2);
  expect((await post('/timetables/personal/delete', cookie, 'confirm=yes', 'https://evil.example')).statusCode).toBe(
    403,
  );
  const anonymous = await post('/timetables/personal/options', undefined, 'alarm=5');
  expect(anonymous.statusCode).toBe(303);
  expect(anonymous.headers.location).toBe('/');

  const unconfirmed = await post('/timetables/personal/delete', cookie);
  expect(unconfirmed.headers.location).toBe('/timetables/personal?done=confirm-delete#delete');
  expect(await ctx.subscriptions.get(id)).toBeDefined();

  const deleted = await post('/timetables/personal/delete', cookie, 'confirm=yes');
  expect(deleted.statusCode).toBe(303);
  expect(deleted.headers.location).toBe('/?done=deleted');
  expect(String(deleted.headers['set-cookie'])).toMatch(/^tts-personal=; Path=\/; SameSite=Lax; Max-Age=0;/);
  expect(await ctx.subscriptions.get(id)).toBeUndefined();
  expect(await ctx.registry.get(`personal:${id}`)).toBeUndefined();
  expect((await app.inject({ method: 'GET', url: `/feeds/personal/${token}.ics` })).statusCode).toBe(404);

  const signedOut = await post('/timetables/personal/sign-out', cookie);
  expect(signedOut.headers.location).toBe('/?done=signed-out');
  expect(String(signedOut.headers['set-cookie'])).toMatch(/Max-Age=0/);
});

it('serves the saved options to a client revalidating by date, with a Last-Modified and ETag of their own', async () => {
  const { token, cookie } = await signedIn(3);
  const feedUrl = `/feeds/personal/${token}.ics`;
  const plain = await app.inject({ method: 'GET', url: feedUrl });
  const lastModified = String(plain.headers['last-modified']);
  expect(
    (await app.inject({ method: 'GET', url: feedUrl, headers: { 'if-modified-since': lastModified } })).statusCode,
  ).toBe(304);
  // HTTP dates count whole seconds: a save in the feed's own second could not be told from it.
  await until(
    async () => Date.now(),
    (now) => now >= Date.parse(lastModified) + 1000,
  );

  expect((await post('/timetables/personal/options', cookie, 'alarm=20&action=save')).statusCode).toBe(303);
  const changed = await until(
    () => app.inject({ method: 'GET', url: feedUrl, headers: { 'if-modified-since': lastModified } }),
    (answer) => answer.statusCode === 200,
    5_000,
  );
  expect(changed.body).toContain('TRIGGER:-PT20M');
  expect(changed.headers.etag).not.toBe(plain.headers.etag);
  expect(Date.parse(String(changed.headers['last-modified']))).toBeGreaterThan(Date.parse(lastModified));
  const since = String(changed.headers['last-modified']);
  expect((await app.inject({ method: 'GET', url: feedUrl, headers: { 'if-modified-since': since } })).statusCode).toBe(
    304,
  );

  // Clearing them is a change as well: the whole feed again, newer than the variant.
  await until(
    async () => Date.now(),
    (now) => now >= Date.parse(since) + 1000,
  );
  expect((await post('/timetables/personal/options', cookie, 'action=clear')).statusCode).toBe(303);
  const whole = await until(
    () => app.inject({ method: 'GET', url: feedUrl, headers: { 'if-modified-since': since } }),
    (answer) => answer.statusCode === 200,
    5_000,
  );
  expect(whole.body).not.toContain('BEGIN:VALARM');
  expect(whole.headers.etag).toBe(plain.headers.etag);
});

it('renders saved variants however many new variants their client asked for', async () => {
  const { token, cookie } = await signedIn(4);
  const feedUrl = `/feeds/personal/${token}.ics`;
  // This client's allowance of new variants (one a minute) is spent by variants asked for in the URL.
  const asked = [
    (await app.inject({ method: 'GET', url: `${feedUrl}?alarm=5` })).statusCode,
    (await app.inject({ method: 'GET', url: `${feedUrl}?alarm=10` })).statusCode,
  ];
  expect(asked).toContain(429);
  for (const alarm of [25, 35]) {
    expect((await post('/timetables/personal/options', cookie, `alarm=${alarm}&action=save`)).statusCode).toBe(303);
    const served = await until(
      () => app.inject({ method: 'GET', url: feedUrl }),
      (answer) => answer.statusCode !== 200 || answer.body.includes(`TRIGGER:-PT${alarm}M`),
      5_000,
    );
    expect(served.statusCode).toBe(200);
  }
  expect((await app.inject({ method: 'GET', url: `${feedUrl}?alarm=15` })).statusCode).toBe(429);
});

it('shows the personal page with the saved options: weeks, form and preview, and the plain feed URL', async () => {
  const { token, cookie } = await signedIn(5);
  const personalPage = () => app.inject({ method: 'GET', url: '/timetables/personal', headers: { cookie } });
  const before = (await personalPage()).body;
  const kind = /<span class="kind">([^<]+)<\/span>/.exec(before)?.[1];
  if (kind === undefined) throw new Error('the personal page shows no kind of class');
  expect(before).not.toContain('data-options-saved');

  const saved = await post(
    '/timetables/personal/options',
    cookie,
    `exclude=${encodeURIComponent(kind)}&alarm=1440&action=save`,
  );
  expect(saved.statusCode).toBe(303);
  const after = (await personalPage()).body;
  expect(after).toContain('data-options-saved');
  expect(after).not.toContain(`<span class="kind">${kind}</span>`);
  expect(after).toMatch(new RegExp(`id="opt-kind-\\d+" name="exclude" value="${kind}" checked`));
  // One options form, which both previews and saves: the saved reminder chosen in it.
  expect(after.match(/<option value="1440" selected>/g)).toHaveLength(1);
  expect(after.match(/name="alarm"/g)).toHaveLength(1);
  expect(after).toMatch(
    /<form class="card options" id="options" method="get" action="\/timetables\/personal" data-options/,
  );
  expect(after).toContain('formaction="/timetables/personal/options" name="action" value="save"');
  expect(after).not.toContain('Настройки ленты');
  // The save's notice is shown in that form.
  const done = await app.inject({ method: 'GET', url: '/timetables/personal?done=options', headers: { cookie } });
  expect(done.body).toMatch(
    /<h2 id="options-heading">[^<]*<\/h2>\s*<p class="notice ok" role="status">Настройки сохранены/,
  );
  expect(after).toContain('за 1 день до начала');
  expect(after).toContain(`${token}.ics"`);
  expect(after).not.toContain(`${token}.ics?`);

  // Options in the query are the page's own: the saved ones step aside, and the links carry them.
  const asked = (await app.inject({ method: 'GET', url: '/timetables/personal?alarm=30', headers: { cookie } })).body;
  expect(asked).not.toContain('data-options-saved');
  expect(asked).toContain(`${token}.ics?alarm&#61;30`);
});
