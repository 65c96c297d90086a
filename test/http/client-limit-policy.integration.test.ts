/**
 * How the client limits share out an overall limit, key IPv6 clients, give back tokens of requests that cost
 * nothing, and bound new feed variants per client (docs/design.md, "Limits").
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../src/simulator/index.ts';
import { until } from '../../testkit/poll.ts';
import { simControl } from '../upstream/sim-control.ts';
import { calendar, startTestApp, storeFeed, storeTimetable, type TestApp } from './helpers.ts';

let simulator: RunningSimulator;
const apps: TestApp[] = [];

beforeAll(async () => {
  simulator = await startSimulator({ port: 0, seed: 3, groups: 2, employees: 6, users: 1 });
});
afterAll(async () => {
  for (const app of apps) await app.close();
  await simulator.close();
});

async function appWith(env: Record<string, string>, feeds = {}): Promise<TestApp> {
  const app = await startTestApp({
    env: { UNIVERSITY_API_URL: simulator.url, TRUST_PROXY: '127.0.0.1', ...env },
    feeds,
  });
  apps.push(app);
  return app;
}

let queries = 0;
/** A search the cache has not seen yet (two Cyrillic letters and a counter), or of `text`. */
function search(app: TestApp, from: string, text?: string) {
  queries += 1;
  return app.app.inject({
    method: 'GET',
    url: `/api/employees?q=${encodeURIComponent(text ?? `Ив ${queries}`)}`,
    headers: { 'x-forwarded-for': from },
  });
}

async function statuses(count: number, send: () => Promise<{ statusCode: number }>): Promise<number[]> {
  const found: number[] = [];
  for (let i = 0; i < count; i++) found.push((await send()).statusCode);
  return found;
}

describe('an overall limit', () => {
  it('keeps half of it for clients within their floor when heavy clients use the rest', async () => {
    // Per client 10/1m (floor 1), in total 8/1m (heavy share 4).
    const app = await appWith({ SEARCHES_PER_CLIENT: '10/1m', SEARCHES_TOTAL: '8/1m' });
    // A heavy client: its floor, then the heavy share, then refused although its own limit is far off.
    expect(await statuses(6, () => search(app, '198.51.100.1'))).toEqual([200, 200, 200, 200, 200, 429]);
    const refused = await search(app, '198.51.100.1');
    expect(refused.json().error).toMatch(/^too many teacher searches right now; try again in \d+ seconds?$/);
    // Newcomers still get their floor: the total keeps what heavy use may not take.
    for (const from of ['198.51.100.2', '198.51.100.3', '198.51.100.4'])
      expect((await search(app, from)).statusCode).toBe(200);
    // And the total still bounds everybody.
    expect((await search(app, '198.51.100.5')).statusCode).toBe(429);
  });
});

describe('first requests for ids nobody vouches for', () => {
  it('leave the last half of the total to groups in the directory and teachers the university named', async () => {
    // Per client 10/1m (floor 1), in total 8/1m: made-up ids, from as many addresses as it takes, get 4 of it.
    const app = await appWith({ FIRST_REQUESTS_PER_CLIENT: '10/1m', FIRST_REQUESTS_TOTAL: '8/1m' });
    const control = simControl(simulator.url);
    const groups = await control.groups();
    await app.ctx.directory.import(groups.map(({ id, name }) => ({ id, name })));
    // A teacher search answers real people: the first request for one of their timetables usually follows.
    const [teacher] = await control.employees();
    if (teacher === undefined) throw new Error('the simulator has no employees');
    const found = await search(app, '198.51.100.99', teacher.lastName);
    expect(found.statusCode).toBe(200);
    const first = (path: string, from: string) =>
      app.app.inject({ method: 'GET', url: path, headers: { 'x-forwarded-for': from } });

    // Admitted (503: no worker runs here, so the fetch it queued never ends), then refused by the total.
    const made = [];
    for (let i = 1; i <= 6; i++)
      made.push((await first(`/feeds/groups/${9_200 + i}.ics`, `203.0.113.${i}`)).statusCode);
    expect(made).toEqual([503, 503, 503, 503, 429, 429]);
    // What is left goes to ids the university vouched for, from a fresh address: the groups and the teacher.
    const real = [...groups.map(({ id }) => `/feeds/groups/${id}.ics`), `/feeds/employees/${teacher.id}.ics`];
    const served = [];
    for (const path of real) served.push((await first(path, '192.0.2.50')).statusCode);
    expect(served).toEqual([503, 503, 503]);
    // The total still bounds them all.
    expect((await first('/feeds/groups/9300.ics', '192.0.2.51')).statusCode).toBe(429);
  });
});

describe('IPv6 clients', () => {
  it('are limited per /64 and, four times as much, per /48', async () => {
    const app = await appWith({ SEARCHES_PER_CLIENT: '2/1m', SEARCHES_TOTAL: '1000/1m' });
    expect(await statuses(3, () => search(app, '2001:db8:7:1::1'))).toEqual([200, 200, 429]);
    // Other /64s of the same /48: six more, eight in all, then the site is refused in every /64 of it.
    for (const block of [2, 3, 4]) {
      expect(await statuses(2, () => search(app, `2001:db8:7:${block}::${block}`))).toEqual([200, 200]);
    }
    const refused = await search(app, '2001:db8:7:99::1');
    expect(refused.statusCode).toBe(429);
    expect(refused.json().error).toMatch(/^too many teacher searches from your address/);
    // Another /48 is another site.
    expect((await search(app, '2001:db8:8:1::1')).statusCode).toBe(200);
  });
});

describe('requests that cost nothing', () => {
  it('give back the search tokens when the upstream budget refused the call', async () => {
    const app = await appWith({
      SEARCHES_PER_CLIENT: '2/1m',
      UPSTREAM_RATE_LIMIT: '0.001',
      UPSTREAM_REQUEST_WAIT: '0',
    });
    // Another client spends the budget (it holds at least two tokens, for calls a person waits for).
    expect(await statuses(2, () => search(app, '192.0.2.99'))).toEqual([200, 200]);
    // Every further search is refused before it is sent, never by our limit: its tokens come back.
    expect(await statuses(4, () => search(app, '192.0.2.7'))).toEqual([503, 503, 503, 503]);
  });

  it('give back the first-request tokens when the cap on fetches at once refused it', async () => {
    const app = await appWith({ FIRST_REQUESTS_PER_CLIENT: '2/1m' }, { maxDemands: 0 });
    let id = 9_100;
    const found = await statuses(4, () => {
      id += 1;
      return app.app.inject({
        method: 'GET',
        url: `/feeds/groups/${id}.ics`,
        headers: { 'x-forwarded-for': '192.0.2.8' },
      });
    });
    expect(found).toEqual([503, 503, 503, 503]);
  });
});

describe('new feed variants', () => {
  it('are limited per client; cached ones and those that cannot be rendered yet are free', async () => {
    const app = await appWith({ VARIANT_RENDERS_PER_CLIENT: '2/1m' });
    await storeTimetable(app.ctx, 'group:610');
    const variant = (template: string, from = '192.0.2.10') =>
      app.app.inject({
        method: 'GET',
        url: `/feeds/groups/610.ics?title=${encodeURIComponent(template)}`,
        headers: { 'x-forwarded-for': from },
      });
    expect((await variant('{subject} 1')).statusCode).toBe(200);
    expect((await variant('{subject} 2')).statusCode).toBe(200);
    const refused = await variant('{subject} 3');
    expect(refused.statusCode).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(29);
    expect(refused.json().error).toMatch(/^too many new feed variants from your address; try again in \d+ seconds$/);
    // Cached variants cost nothing, and another client has its own allowance.
    expect((await variant('{subject} 1')).statusCode).toBe(200);
    expect((await variant('{subject} 3', '192.0.2.11')).statusCode).toBe(200);

    // A new publication makes every variant render again; one rendered before is still free for its
    // subscribers (behind a campus NAT they are one address), while a new one still costs.
    const republished = await storeTimetable(app.ctx, 'group:610', undefined, { stamp: Date.UTC(2025, 8, 21, 9) });
    const plain = await until(
      () => app.app.inject({ method: 'GET', url: '/feeds/groups/610.ics' }),
      (answer) => answer.headers.etag === republished.etag,
    );
    expect(plain.statusCode).toBe(200);
    const again = await variant('{subject} 1');
    expect(again.statusCode).toBe(200);
    expect(again.body).toContain('DTSTAMP:20250921T090000Z');
    expect((await variant('{subject} 4')).statusCode).toBe(429);

    // A feed whose snapshot is not stored yet answers 503 without rendering: no token is kept.
    await storeFeed(app.ctx, 'group:611', calendar('611'));
    const unready = (n: number) =>
      app.app.inject({
        method: 'GET',
        url: `/feeds/groups/611.ics?title=${encodeURIComponent(`{subject} ${n}`)}`,
        headers: { 'x-forwarded-for': '192.0.2.12' },
      });
    expect([(await unready(1)).statusCode, (await unready(2)).statusCode, (await unready(3)).statusCode]).toEqual([
      503, 503, 503,
    ]);
  });
});
