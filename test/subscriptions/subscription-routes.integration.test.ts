import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { caldavDetailFields } from '../../src/caldav/caldav-targets.ts';
import { googleDetailFields } from '../../src/google/google-targets.ts';
import { buildApp } from '../../src/http/app.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { startSimulator } from '../../src/simulator/index.ts';
import { SUBSCRIPTION_ID } from '../../src/timetable/source.ts';
import { TEST_ADMIN_TOKEN, testContext } from '../support/service.ts';
import { memoryLogger } from '../upstream/local-server.ts';
import { type SimControl, simControl } from '../upstream/sim-control.ts';

const REFERENCE_DATE = new Date('2025-10-01T00:00:00Z');
const PUBLIC_URL = 'https://timetable.example';
type Simulator = Awaited<ReturnType<typeof startSimulator>>;
type User = { id: number; username: string; token: string; groupId: number };

let simulator: Simulator;
let sim: SimControl;
let users: User[];
let ctx: ServiceContext;
let app: FastifyInstance;
let closeContext: () => Promise<void>;
const log = memoryLogger();

function user(index: number): User {
  const found = users[index];
  if (!found) throw new Error(`the simulator has no user ${index}`);
  return found;
}

async function subscribe(credential: string) {
  const response = await app.inject({ method: 'POST', url: '/api/subscriptions', payload: { credential } });
  return { response, body: response.json() as Record<string, string> };
}

/** The one answer to every refused replacement credential. */
const REFUSED =
  "this credential cannot replace the subscription's: the university rejected it, or it does not belong to the " +
  "subscription's university user";

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

beforeAll(async () => {
  simulator = await startSimulator({
    port: 0,
    seed: 1,
    referenceDate: REFERENCE_DATE,
    groups: 12,
    employees: 12,
    users: 4,
  });
  sim = simControl(simulator.url);
  users = await sim.users();
  const opened = await testContext(
    { UNIVERSITY_API_URL: simulator.url, PUBLIC_URL, LOG_LEVEL: 'debug' },
    { logger: log.logger },
  );
  ctx = opened.context;
  closeContext = opened.close;
  app = await buildApp(ctx, { logger: log.logger });
});
beforeEach(() => sim.clearFaults());
afterAll(async () => {
  await app.close();
  await closeContext();
  await simulator.close();
  // Every credential and token the tests used: none may have reached a log line.
  const output = log.output();
  expect(output.length).toBeGreaterThan(0);
  for (const { token } of users) expect(output).not.toContain(token);
  for (const token of issuedTokens) expect(output).not.toContain(token);
});

const issuedTokens: string[] = [];

describe('POST /api/subscriptions', () => {
  it('verifies the credential, stores the subscription, queues its first refresh and answers the feed URL', async () => {
    const { response, body } = await subscribe(user(0).token);
    expect(response.statusCode).toBe(201);
    issuedTokens.push(body.token ?? '');
    expect(body.id).toMatch(SUBSCRIPTION_ID);
    expect(body.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(body).toMatchObject({
      source: `personal:${body.id}`,
      status: 'active',
      feedUrl: `${PUBLIC_URL}/feeds/personal/${body.token}.ics`,
    });
    expect(body.name).toMatch(/^Расписание: \S+ \S+ \(.+\)$/);
    expect(Object.keys(body).sort()).toEqual(['feedUrl', 'id', 'name', 'source', 'status', 'token']);
    expect(response.headers.location).toBe(`/api/subscriptions/${body.id}`);
    expect(response.headers['cache-control']).toBe('no-store');

    expect(await ctx.subscriptions.credentialOf(body.id ?? '')).toBe(user(0).token);
    expect(await ctx.subscriptions.idByToken(body.token ?? '')).toBe(body.id);
    expect(await ctx.registry.isActive(`personal:${body.id}`)).toBe(true);
    const jobs = await ctx.queues.refresh.getJobs(['waiting', 'delayed', 'prioritized', 'active']);
    expect(jobs.map((job) => job.data)).toContainEqual(
      expect.objectContaining({ source: `personal:${body.id}`, reason: 'subscription' }),
    );
    expect(JSON.stringify(jobs.map((job) => job.data))).not.toContain(user(0).token);
  });

  it('answers a repeated sign-up 200 with the same subscription and a new feed URL; the first URL still works', async () => {
    const first = await subscribe(user(0).token);
    const again = await subscribe(user(0).token);
    issuedTokens.push(first.body.token ?? '', again.body.token ?? '');
    expect([first.response.statusCode, again.response.statusCode]).toEqual([200, 200]);
    expect(again.body).toMatchObject({ id: first.body.id, source: first.body.source, status: 'active' });
    expect(Object.keys(again.body).sort()).toEqual(['feedUrl', 'id', 'name', 'source', 'status', 'token']);
    expect(again.body.token).not.toBe(first.body.token);
    expect(again.body.feedUrl).toBe(`${PUBLIC_URL}/feeds/personal/${again.body.token}.ics`);
    expect(again.response.headers['cache-control']).toBe('no-store');
    for (const token of [first.body.token, again.body.token])
      expect(await ctx.subscriptions.idByToken(token ?? '')).toBe(first.body.id);
    const jobs = await ctx.queues.refresh.getJobs(['waiting', 'delayed', 'prioritized', 'active']);
    expect(jobs.filter((job) => job.data.source === first.body.source).length).toBeGreaterThan(0);
  });

  it('answers 401 when the university rejects the credential, and stores nothing', async () => {
    const before = await ctx.redis.keys(`${ctx.config.redisPrefix}:subscription:*`);
    const { response, body } = await subscribe('not-a-real-token');
    expect(response.statusCode).toBe(401);
    expect(body).toEqual({ error: 'the university rejected this credential', code: 'CREDENTIAL_REJECTED' });
    expect(await ctx.redis.keys(`${ctx.config.redisPrefix}:subscription:*`)).toEqual(before);
  });

  it('signs up a person whose profile has a null user id, tied to the credential: only it can replace itself', async () => {
    // Some deployments answer `id: null` in the profile (real profiles have shown null in any field).
    const me = ctx.requestUpstream.me.bind(ctx.requestUpstream);
    const nullId = vi.spyOn(ctx.requestUpstream, 'me').mockImplementation((async (credential, select, options) => ({
      ...(await me(credential, select, options)),
      id: null,
    })) as typeof ctx.requestUpstream.me);
    try {
      const { response, body } = await subscribe(user(3).token);
      expect(response.statusCode).toBe(201);
      issuedTokens.push(body.token ?? '');
      const id = body.id ?? '';
      expect(await ctx.subscriptions.get(id)).toMatchObject({ upstreamUserId: null, status: 'active' });
      // What ties it to the credential is a keyed digest: neither the credential nor its plain hash.
      const stored = await ctx.redis.hgetall(ctx.keys.subscription(id));
      expect(stored.credentialDigest).toMatch(/^[0-9a-f]{64}$/);
      expect(JSON.stringify(stored)).not.toContain(user(3).token);
      expect(stored.credentialDigest).not.toBe(createHash('sha256').update(user(3).token).digest('hex'));

      const patch = (credential: string) =>
        app.inject({
          method: 'PATCH',
          url: `/api/subscriptions/${id}`,
          headers: bearer(body.token ?? ''),
          payload: { credential },
        });
      const other = await patch(user(1).token);
      expect(other.statusCode).toBe(403);
      expect(other.json()).toEqual({ error: REFUSED, code: 'CREDENTIAL_REFUSED' });
      expect(await ctx.subscriptions.credentialOf(id)).toBe(user(3).token);
      const same = await patch(user(3).token);
      expect(same.statusCode).toBe(200);
      expect(same.json()).toMatchObject({ id, status: 'active' });
    } finally {
      nullId.mockRestore();
    }
  });

  it('answers 502 with the upstream text when the university fails', async () => {
    await sim.fault({ endpoint: 'me', kind: 'status', status: 500, error: 'Сервис временно недоступен', times: 1 });
    const { response, body } = await subscribe(user(1).token);
    expect(response.statusCode).toBe(502);
    expect(body.error).toContain('Сервис временно недоступен');
    expect(body.error).not.toContain(user(1).token);
  });

  it.each([
    ['no body', undefined, /^body must be JSON \{"credential"/],
    ['an empty object', {}, /^credential: is required$/],
    ['a number', { credential: 42 }, /^credential: must be a string$/],
    ['an empty credential', { credential: '  ' }, /^credential: must not be empty$/],
    ['a too long credential', { credential: 'x'.repeat(4097) }, /at most 4096/],
    ['a credential with a line break', { credential: 'abc\r\nX-Evil: 1' }, /printable ASCII/],
    ['an array', [1, 2], /^body must be JSON \{"credential"/],
  ])('answers 400 naming the field for %s', async (_name, payload, message) => {
    const response = await app.inject({
      method: 'POST',
      url: '/api/subscriptions',
      ...(payload === undefined ? {} : { payload }),
    });
    expect(response.statusCode).toBe(400);
    expect(response.json<{ error: string }>().error).toMatch(message);
  });

  it('answers 503 without SECRET_KEY', async () => {
    const keyless = await testContext({ UNIVERSITY_API_URL: simulator.url, SECRET_KEY: undefined });
    const keylessApp = await buildApp(keyless.context, { logger: keyless.context.logger });
    try {
      const response = await keylessApp.inject({
        method: 'POST',
        url: '/api/subscriptions',
        payload: { credential: user(0).token },
      });
      expect(response.statusCode).toBe(503);
      expect(response.json()).toEqual({
        error:
          'personal subscriptions, calendar push and webhooks need SECRET_KEY: the secrets they keep are stored encrypted',
        code: 'SECRET_KEY_MISSING',
      });
    } finally {
      await keylessApp.close();
      await keyless.close();
    }
  });
});

describe('GET, PATCH and DELETE /api/subscriptions/:id', () => {
  let id: string;
  let token: string;

  beforeAll(async () => {
    const { response, body } = await subscribe(user(2).token);
    expect(response.statusCode).toBe(201);
    id = body.id ?? '';
    token = body.token ?? '';
    issuedTokens.push(token);
  });

  it('answers the state to the feed token holder and to the admin, never a secret', async () => {
    for (const auth of [token, TEST_ADMIN_TOKEN]) {
      const response = await app.inject({ method: 'GET', url: `/api/subscriptions/${id}`, headers: bearer(auth) });
      expect(response.statusCode).toBe(200);
      const body = response.json<Record<string, unknown>>();
      expect(body).toMatchObject({ id, source: `personal:${id}`, status: 'active', feedStatus: 'pending' });
      expect(body.createdAt).toMatch(/^\d{4}-\d\d-\d\dT/);
      expect(response.body).not.toContain(token);
      expect(response.body).not.toContain(user(2).token);
      expect(response.body).not.toContain('v1.');
    }
  });

  it('joins the refresh state of the source', async () => {
    await ctx.registry.recordFailure(`personal:${id}`, {
      now: Date.UTC(2025, 9, 2),
      kind: 'timeout',
      message: 'University API mySchedule: timed out',
    });
    await ctx.registry.markStale(`personal:${id}`, Date.UTC(2025, 9, 2));
    const body = (await app.inject({ method: 'GET', url: `/api/subscriptions/${id}`, headers: bearer(token) })).json<
      Record<string, unknown>
    >();
    expect(body).toMatchObject({
      lastError: 'University API mySchedule: timed out',
      staleSince: '2025-10-02T00:00:00.000Z',
      feedStatus: 'stale',
    });
  });

  it('answers 401 with a Bearer challenge to a missing or wrong token', async () => {
    const other = await subscribe(user(3).token);
    issuedTokens.push(other.body.token ?? '');
    for (const headers of [
      {},
      bearer('wrong-token'),
      bearer(other.body.token ?? ''),
      { authorization: `Basic ${Buffer.from(`x:${token}`).toString('base64')}` },
      bearer(user(2).token),
    ]) {
      for (const method of ['GET', 'DELETE', 'PATCH'] as const) {
        const response = await app.inject({
          method,
          url: `/api/subscriptions/${id}`,
          headers,
          ...(method === 'PATCH' ? { payload: { credential: user(2).token } } : {}),
        });
        expect(response.statusCode, `${method} ${JSON.stringify(headers).slice(0, 30)}`).toBe(401);
        expect(response.headers['www-authenticate']).toMatch(/^Bearer/);
      }
    }
    expect(await ctx.subscriptions.get(id)).toBeDefined();
  });

  it('answers 404 for an unknown id and 400 for a malformed one', async () => {
    const unknown = await app.inject({
      method: 'GET',
      url: '/api/subscriptions/AAAAAAAAAAAAAAAAAAAAAA',
      headers: bearer(TEST_ADMIN_TOKEN),
    });
    expect(unknown.statusCode).toBe(404);
    const malformed = await app.inject({
      method: 'GET',
      url: '/api/subscriptions/not-an-id',
      headers: bearer(TEST_ADMIN_TOKEN),
    });
    expect(malformed.statusCode).toBe(400);
    expect(malformed.json()).toEqual({ error: 'malformed subscription id', code: 'INVALID_ID' });
  });

  it('PATCH replaces a rejected credential of the same user, and refuses another user', async () => {
    await ctx.subscriptions.markNeedsCredential(
      id,
      'University API mySchedule: credential rejected, HTTP 401',
      ctx.now(),
    );
    await ctx.queues.refresh.drain(true);
    const rejected = await app.inject({ method: 'GET', url: `/api/subscriptions/${id}`, headers: bearer(token) });
    expect(rejected.json()).toMatchObject({
      status: 'needs-credential',
      statusReason: 'University API mySchedule: credential rejected, HTTP 401',
    });

    const bad = await app.inject({
      method: 'PATCH',
      url: `/api/subscriptions/${id}`,
      headers: bearer(token),
      payload: { credential: 'expired-token' },
    });
    expect(bad.statusCode).toBe(403);
    const stranger = await app.inject({
      method: 'PATCH',
      url: `/api/subscriptions/${id}`,
      headers: bearer(token),
      payload: { credential: user(0).token },
    });
    // Another user's valid credential answers exactly as an invalid one: PATCH is no credential oracle.
    expect(stranger.statusCode).toBe(403);
    expect(stranger.json()).toEqual({ error: REFUSED, code: 'CREDENTIAL_REFUSED' });
    expect(bad.json()).toEqual(stranger.json());
    expect(bad.headers['www-authenticate']).toBeUndefined();
    expect((await ctx.subscriptions.get(id))?.status).toBe('needs-credential');
    const empty = await app.inject({
      method: 'PATCH',
      url: `/api/subscriptions/${id}`,
      headers: bearer(token),
      payload: {},
    });
    expect(empty.statusCode).toBe(400);

    const replaced = await app.inject({
      method: 'PATCH',
      url: `/api/subscriptions/${id}`,
      headers: bearer(token),
      payload: { credential: user(2).token },
    });
    expect(replaced.statusCode).toBe(200);
    expect(replaced.json()).toMatchObject({ id, status: 'active' });
    expect(replaced.json<Record<string, unknown>>().statusReason).toBeNull();
    const jobs = await ctx.queues.refresh.getJobs(['waiting', 'delayed', 'prioritized']);
    expect(jobs.map((job) => job.data)).toContainEqual(
      expect.objectContaining({ source: `personal:${id}`, reason: 'subscription' }),
    );
  });

  it('DELETE by the feed token removes the subscription, its token and its source', async () => {
    const response = await app.inject({ method: 'DELETE', url: `/api/subscriptions/${id}`, headers: bearer(token) });
    expect(response.statusCode).toBe(204);
    expect(response.body).toBe('');
    expect(await ctx.subscriptions.get(id)).toBeUndefined();
    expect(await ctx.subscriptions.idByToken(token)).toBeUndefined();
    expect(await ctx.registry.get(`personal:${id}`)).toBeUndefined();
    expect(await ctx.registry.isActive(`personal:${id}`)).toBe(false);
    const again = await app.inject({
      method: 'GET',
      url: `/api/subscriptions/${id}`,
      headers: bearer(TEST_ADMIN_TOKEN),
    });
    expect(again.statusCode).toBe(404);
  });

  it('DELETE stops the Google calendars of the subscription from following it', async () => {
    const { body } = await subscribe(user(2).token);
    issuedTokens.push(body.token ?? '');
    const source = `personal:${body.id}` as const;
    const { id: target } = await ctx.google.targets.create({
      source,
      secret: 'never-used',
      calendarId: 'c@group.calendar.google.com',
      calendarOwned: true,
      calendarName: 'Mine',
      details: googleDetailFields({ budgetKey: 'token:0' }),
      now: Date.now(),
    });
    expect(await ctx.redis.smembers(ctx.keys.sourceTargets(source))).toEqual([target]);
    const response = await app.inject({
      method: 'DELETE',
      url: `/api/subscriptions/${body.id}`,
      headers: bearer(body.token ?? ''),
    });
    expect(response.statusCode).toBe(204);
    expect(await ctx.google.targets.get(target)).toBeUndefined();
    expect(await ctx.redis.scard(ctx.keys.sourceTargets(source))).toBe(0);
  });

  it('DELETE stops its CalDAV calendars from following it, leaving what they hold (the server is not asked)', async () => {
    const { body } = await subscribe(user(2).token);
    issuedTokens.push(body.token ?? '');
    const source = `personal:${body.id}` as const;
    // A server nobody listens on: a disconnect that tried to clean it up would fail and say so.
    const { id: target } = await ctx.caldav.targets.create({
      source,
      calendarId: 'http://127.0.0.1:9/alice/mine/',
      calendarOwned: true,
      calendarName: 'Mine',
      secret: 'never-used',
      details: caldavDetailFields('http://127.0.0.1:9/alice/mine/', {
        serverUrl: 'http://127.0.0.1:9/',
        homeUrl: 'http://127.0.0.1:9/alice/',
        username: 'alice',
        supportsSync: true,
      }),
      now: Date.now(),
    });
    expect(await ctx.caldav.targets.idsForSource(source)).toEqual([target]);
    const response = await app.inject({
      method: 'DELETE',
      url: `/api/subscriptions/${body.id}`,
      headers: bearer(body.token ?? ''),
    });
    expect(response.statusCode).toBe(204);
    expect(await ctx.caldav.targets.get(target)).toBeUndefined();
    expect(await ctx.caldav.targets.idsForSource(source)).toEqual([]);
  });

  it('DELETE by the admin works too', async () => {
    const { body } = await subscribe(user(1).token);
    issuedTokens.push(body.token ?? '');
    const response = await app.inject({
      method: 'DELETE',
      url: `/api/subscriptions/${body.id}`,
      headers: bearer(TEST_ADMIN_TOKEN),
    });
    expect(response.statusCode).toBe(204);
    expect(await ctx.subscriptions.get(body.id ?? '')).toBeUndefined();
  });
});
