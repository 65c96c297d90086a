/**
 * Webhooks end to end: hooks registered through the admin API, a room changed in the simulator and refreshed
 * (publication, outbox, fan-out), deliveries run by the real workers on real Redis and POSTed over HTTP to a
 * receiver on loopback, each one checked with the specification's reference library (`standardwebhooks`). The
 * retry tests add delivery jobs as the fan-out does; the schedule of retries is shrunk to seconds, what it does
 * is the production code's.
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.ts';
import type { RefreshJobResult } from '../../src/jobs/contract.ts';
import { enqueueRefresh } from '../../src/jobs/queues.ts';
import { WEBHOOK_BACKOFF_MS, WEBHOOK_JOB_OPTIONS } from '../../src/jobs/webhook-delivery.ts';
import { startWorkers, type WorkerSet } from '../../src/jobs/workers.ts';
import { silentLogger } from '../../src/logger.ts';
import { WebhookSender } from '../../src/notify/webhooks/deliver.ts';
import { webhookBody, webhookMessageId } from '../../src/notify/webhooks/payload.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { startSimulator } from '../../src/simulator/index.ts';
import { deliveryId } from '../../src/store/notify-outbox.ts';
import type { ChangeSet } from '../../src/timetable/notify-change.ts';
import { until } from '../../testkit/poll.ts';
import { BEARER } from '../admin/admin-app.ts';
import { REFERENCE_DATE, waitForJob } from '../jobs/helpers.ts';
import { testContext } from '../support/service.ts';
import { memoryLogger } from '../upstream/local-server.ts';
import { type SimControl, simControl } from '../upstream/sim-control.ts';

/** Waits after failed attempts: the first two long enough for a new `webhook-timestamp` (whole seconds). */
const BACKOFF_MS = [1_100, 1_100, 50, 50, 50, 50, 50];
const TIMEOUT_MS = 1_000;

/** What the receiver answers on one path: statuses in turn (the last one repeats), or never. */
type Script = { status: number; headers?: Record<string, string> }[] | 'stall';

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

let ctx: ServiceContext;
let app: FastifyInstance;
let workers: WorkerSet;
let receiver: Server;
let receiverUrl: string;
let logs: () => string;
let closeContext: () => Promise<void>;
let sim: SimControl;
let closeSimulator: () => Promise<void>;
/** The service's clock: the simulator's reference date, moved on by the tests. */
const clock = { now: REFERENCE_DATE.getTime() };
const received: Received[] = [];
const scripts = new Map<string, Script>();
const secrets: string[] = [];

beforeAll(async () => {
  const log = memoryLogger();
  logs = log.output;
  const simulator = await startSimulator({
    port: 0,
    seed: 1,
    referenceDate: REFERENCE_DATE,
    groups: 12,
    employees: 4,
    users: 2,
  });
  sim = simControl(simulator.url);
  closeSimulator = simulator.close;
  const opened = await testContext(
    { UNIVERSITY_API_URL: simulator.url, LOG_LEVEL: 'debug' },
    // The service clock is the simulator's date; the receiver verifies `webhook-timestamp` against real time
    // (5 min tolerance), as a real receiver does, so the wall clock stays real.
    { logger: log.logger, now: () => clock.now, wallClock: Date.now },
  );
  ctx = opened.context;
  closeContext = opened.close;
  app = await buildApp(ctx, { logger: log.logger });
  await app.ready();
  workers = await startWorkers(ctx, ctx.config.redisTarget ?? '', {
    webhookBackoffMs: BACKOFF_MS,
    webhookTimeoutMs: TIMEOUT_MS,
  });
  receiver = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const path = request.url ?? '';
      received.push({ path, headers: request.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() });
      const script = scripts.get(path) ?? [{ status: 200 }];
      if (script === 'stall') return; // never answers; the client's deadline ends it
      const count = received.filter((one) => one.path === path).length;
      const answer = script[Math.min(count, script.length) - 1] ?? { status: 200 };
      response.writeHead(answer.status, answer.headers).end('ok');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
}, 60_000);

afterAll(async () => {
  await workers?.close();
  await app?.close();
  await closeContext?.();
  await closeSimulator?.();
  receiver?.closeAllConnections();
  await new Promise((resolve) => receiver?.close(resolve));
  // No secret ever reaches a log line.
  const output = logs?.() ?? '';
  for (const secret of secrets) {
    expect(output).not.toContain(secret);
    expect(output).not.toContain(secret.slice('whsec_'.length));
  }
});

/** Registers a hook on the receiver's `path`, answering as `script` says. */
async function register(path: string, script?: Script, source = 'group:4242'): Promise<{ id: string; secret: string }> {
  if (script) scripts.set(path, script);
  const answer = await app.inject({
    method: 'POST',
    url: '/admin/webhooks',
    headers: BEARER,
    payload: { source, url: `${receiverUrl}${path}` },
  });
  expect(answer.statusCode, answer.body).toBe(201);
  const created = answer.json<{ id: string; secret: string }>();
  secrets.push(created.secret);
  return created;
}

async function show(id: string) {
  const answer = await app.inject({ method: 'GET', url: `/admin/webhooks/${id}`, headers: BEARER });
  return { status: answer.statusCode, body: answer.body, json: answer.json() };
}

const SET: ChangeSet = {
  source: 'group:4242',
  name: 'ИВТ-21 <&> "a_b*c"',
  stamp: Date.parse('2026-10-01T09:00:00Z'),
  items: [
    {
      kind: 'moved',
      uid: 'occ-1@timetable',
      before: {
        date: '2026-10-02',
        begin: '10:10',
        end: '11:40',
        startUtc: Date.parse('2026-10-02T07:10:00Z'),
        summary: 'Физика (практика)',
        location: 'ауд. 1008',
        teacher: 'Иванов И. И.',
      },
      after: {
        date: '2026-10-02',
        begin: '10:10',
        end: '11:40',
        startUtc: Date.parse('2026-10-02T07:10:00Z'),
        summary: 'Физика (практика)',
        location: 'ауд. 2207',
        teacher: 'Иванов И. И.',
      },
      startsAt: Date.parse('2026-10-02T07:10:00Z'),
      lessonKind: 'Практика',
      note: '',
    },
  ],
  omitted: 0,
};

/** Adds a delivery of {@link SET} to hook `hookId` as the fan-out does: deterministic ids, the body built once. */
async function fanOut(hookId: string, stamp = SET.stamp) {
  const deliveryId = `wh:${hookId}:${SET.source}:${stamp}`;
  const jobId = `wh-${createHash('sha256').update(deliveryId).digest('base64url').slice(0, 22)}`;
  const body = webhookBody({ ...SET, stamp }, 'https://timetable.example/timetables/groups/4242');
  const webhookId = webhookMessageId(deliveryId);
  await ctx.queues.webhook.add('webhook', { deliveryId, hookId, webhookId, body }, { ...WEBHOOK_JOB_OPTIONS, jobId });
  return { jobId, body, webhookId };
}

const at = (path: string) => received.filter((one) => one.path === path);

/** Refreshes `source` now (the clock a minute on), as an admin resync does; the refresh's result. */
async function refresh(source: string): Promise<RefreshJobResult> {
  clock.now += 60_000;
  const id = await enqueueRefresh(ctx.queues, ctx.config, source, { reason: 'resync', now: clock.now });
  const ended = await waitForJob(ctx, id);
  expect(ended.state, ended.failedReason).toBe('completed');
  return ended.result as RefreshJobResult;
}

/** A group with a weekly class still to come next week (within NOTIFY_HORIZON of the clock), and that class. */
async function groupWithWeeklyClass(): Promise<{ source: string; entryId: number }> {
  const today = new Date(clock.now).toISOString().slice(0, 10);
  for (const group of await sim.groups()) {
    const { entries } = await ctx.upstream.groupSchedule(group.id);
    const found = entries.find(
      (entry) =>
        entry.startDate <= today && entry.finishDate > '2025-10-20' && entry.weekType === 0 && entry.note === '',
    );
    if (found) return { source: `group:${group.id}`, entryId: found.id };
  }
  throw new Error('no weekly class in the simulated timetables');
}

describe('webhooks', () => {
  it('a room changed upstream is delivered once, signed, through the publication and its fan-out', async () => {
    const { source, entryId } = await groupWithWeeklyClass();
    expect((await refresh(source)).outcome).toBe('published');
    const { id, secret } = await register('/upstream', undefined, source);
    // Nothing changed: nothing is told.
    expect((await refresh(source)).outcome).toBe('unchanged');

    await sim.raw(`/_sim/entries/${entryId}`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ num_auditorium_schedule: '2207' }),
    });
    expect((await refresh(source)).outcome).toBe('published');
    const stamp = clock.now;
    const [delivery] = await until(
      async () => at('/upstream'),
      (list) => list.length >= 1,
    );
    if (!delivery) throw new Error('nothing delivered');
    expect(delivery.headers['webhook-id']).toBe(webhookMessageId(deliveryId('wh', id, { source, stamp })));
    const payload = new Webhook(secret).verify(delivery.body, delivery.headers as Record<string, string>) as {
      type: string;
      data: { source: string; url: string; changes: { change: string; after?: { location: string } }[] };
    };
    expect(payload).toMatchObject({ type: 'timetable.changed', data: { source } });
    expect(payload.data.url).toMatch(/\/timetables\/groups\/\d+$/);
    expect(payload.data.changes.length).toBeGreaterThan(0);
    for (const change of payload.data.changes) {
      expect(change.change).toBe('moved');
      expect(change.after?.location).toMatch(/2207$/);
    }
    // Another refresh without a change: still one delivery.
    expect((await refresh(source)).outcome).toBe('unchanged');
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(at('/upstream')).toHaveLength(1);
    await app.inject({ method: 'DELETE', url: `/admin/webhooks/${id}`, headers: BEARER });
  });

  it('delivers a body that verifies with the reference library, once, and GET shows the delivery', async () => {
    const { id, secret } = await register('/ok');
    expect(id).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    const { body, webhookId } = await fanOut(id);
    // The fan-out run again (a crash before the outbox was cleared): the same job id, no second delivery.
    await fanOut(id);
    await until(
      async () => at('/ok'),
      (list) => list.length >= 1,
    );
    const [delivery] = at('/ok');
    if (!delivery) throw new Error('nothing delivered');
    expect(delivery.body).toBe(body);
    expect(delivery.headers['webhook-id']).toBe(webhookId);
    expect(delivery.headers['content-type']).toBe('application/json');
    const payload = new Webhook(secret).verify(delivery.body, delivery.headers as Record<string, string>);
    expect(payload).toMatchObject({
      type: 'timetable.changed',
      timestamp: '2026-10-01T09:00:00.000Z',
      data: {
        source: 'group:4242',
        name: 'ИВТ-21 <&> "a_b*c"',
        changes: [
          {
            change: 'moved',
            uid: 'occ-1@timetable',
            before: { location: 'ауд. 1008', start: '2026-10-02T07:10:00.000Z' },
            after: { location: 'ауд. 2207' },
          },
        ],
        omitted: 0,
      },
    });
    const shown = await until(
      () => show(id),
      ({ json }) => json.deliveries.length === 1,
    );
    expect(shown.status).toBe(200);
    expect(shown.json).toMatchObject({ id, source: 'group:4242', url: `${receiverUrl}/ok`, state: 'active' });
    expect(shown.json.deliveries).toEqual([
      { webhookId, at: expect.any(String), attempt: 1, status: 200, ms: expect.any(Number) },
    ]);
    // The secret is shown once, at creation.
    expect(shown.body).not.toContain(secret.slice('whsec_'.length));
    // BullMQ trimmed the finished job, and the fan-out adds the delivery again: it is not sent twice.
    const { jobId } = await fanOut(id);
    await (await ctx.queues.webhook.getJob(jobId))?.remove();
    await fanOut(id);
    const again = await until(
      async () => ctx.queues.webhook.getJob(jobId),
      (job) => job?.returnvalue !== undefined && job.returnvalue !== null,
    );
    expect(again?.returnvalue).toEqual({ skipped: 'delivered already' });
    expect(at('/ok')).toHaveLength(1);
  });

  it('retries with the same webhook-id and a new timestamp, honouring Retry-After', async () => {
    const { id, secret } = await register('/flaky', [
      { status: 503, headers: { 'retry-after': '2' } },
      { status: 500 },
      { status: 200 },
    ]);
    const { body, webhookId } = await fanOut(id);
    const attempts = await until(
      async () => at('/flaky'),
      (list) => list.length >= 3,
      20_000,
    );
    expect(attempts).toHaveLength(3);
    const verifier = new Webhook(secret);
    for (const attempt of attempts) {
      expect(attempt.body).toBe(body);
      expect(attempt.headers['webhook-id']).toBe(webhookId);
      expect(verifier.verify(attempt.body, attempt.headers as Record<string, string>)).toBeTruthy();
    }
    const stamps = attempts.map((attempt) => Number(attempt.headers['webhook-timestamp']));
    expect(new Set(stamps).size).toBe(3);
    const [first, second, third] = attempts.map((attempt) => attempt.at) as [number, number, number];
    // Retry-After: 2 asked for longer than the schedule's 1.1 s.
    expect(second - first).toBeGreaterThanOrEqual(1_950);
    expect(third - second).toBeGreaterThanOrEqual(1_050);
    const shown = await until(
      () => show(id),
      ({ json }) => json.deliveries.length === 3,
    );
    expect(shown.json.state).toBe('active');
    expect(shown.json.deliveries.map((one: { status: number; attempt: number }) => [one.attempt, one.status])).toEqual([
      [3, 200],
      [2, 500],
      [1, 503],
    ]);
  });

  it('a receiver that always fails: eight attempts, then disabled with the reason, and no more deliveries', async () => {
    const { id } = await register('/down', [{ status: 500 }]);
    await fanOut(id);
    const shown = await until(
      () => show(id),
      ({ json }) => json.state === 'disabled',
      30_000,
    );
    // One attempt and one retry per step of the production schedule (the test shrinks only the waits).
    expect(at('/down')).toHaveLength(WEBHOOK_BACKOFF_MS.length + 1);
    expect(shown.json.reason).toMatch(/^HTTP 500 after 8 attempts over \d+ s$/);
    expect(shown.json.disabledAt).toEqual(expect.any(String));
    expect(shown.json.deliveries).toHaveLength(8);
    expect(shown.json.deliveries.every((one: { status: number }) => one.status === 500)).toBe(true);
    // A change set fanned out meanwhile to a disabled hook is not sent.
    const { jobId } = await fanOut(id, SET.stamp + 1);
    await until(
      async () => ctx.queues.webhook.getJobState(jobId),
      (state) => state === 'completed',
    );
    expect((await ctx.queues.webhook.getJob(jobId))?.returnvalue).toEqual({ skipped: 'hook disabled' });
    expect(at('/down')).toHaveLength(8);
  });

  it('410 Gone disables at once; a redirect is a failure and is not followed; a stalled receiver times out', async () => {
    const gone = await register('/gone', [{ status: 410 }]);
    await fanOut(gone.id);
    const disabled = await until(
      () => show(gone.id),
      ({ json }) => json.state === 'disabled',
    );
    expect(disabled.json.reason).toBe('the receiver answered 410 Gone');
    expect(at('/gone')).toHaveLength(1);

    const moved = await register('/moved', [{ status: 302, headers: { location: '/elsewhere' } }]);
    await fanOut(moved.id);
    const redirected = await until(
      () => show(moved.id),
      ({ json }) => json.deliveries.length >= 1,
    );
    expect(redirected.json.deliveries[0]).toMatchObject({ attempt: 1, status: 302 });
    expect(at('/elsewhere')).toHaveLength(0);

    const stalled = await register('/stall', 'stall');
    await fanOut(stalled.id);
    const timedOut = await until(
      () => show(stalled.id),
      ({ json }) => json.deliveries.length >= 1,
    );
    expect(timedOut.json.deliveries[0]).toMatchObject({ attempt: 1, error: 'no answer within 1 s' });
    expect(timedOut.json.deliveries[0].ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    for (const { id } of [moved, stalled]) {
      const deleted = await app.inject({ method: 'DELETE', url: `/admin/webhooks/${id}`, headers: BEARER });
      expect(deleted.statusCode).toBe(204);
    }
  });

  it('DELETE removes a hook; ids and bodies are checked; the admin token is required', async () => {
    const { id } = await register('/deleted');
    expect((await app.inject({ method: 'DELETE', url: `/admin/webhooks/${id}`, headers: BEARER })).statusCode).toBe(
      204,
    );
    expect((await show(id)).json).toMatchObject({ code: 'WEBHOOK_NOT_FOUND' });
    expect(
      (await app.inject({ method: 'DELETE', url: `/admin/webhooks/${id}`, headers: BEARER })).json(),
    ).toMatchObject({
      code: 'WEBHOOK_NOT_FOUND',
    });
    expect((await show('nope')).json).toMatchObject({ code: 'INVALID_ID' });
    const post = (payload: unknown, headers = BEARER) =>
      app.inject({ method: 'POST', url: '/admin/webhooks', headers, payload: payload as object });
    expect((await post({ source: 'group:4242' })).json()).toMatchObject({ code: 'INVALID_BODY' });
    expect((await post({ source: 'group:4242', url: 'https://a.example/', extra: 1 })).json()).toMatchObject({
      code: 'INVALID_BODY',
    });
    expect((await post({ source: 'room:1', url: 'https://a.example/' })).json()).toMatchObject({
      code: 'INVALID_SOURCE',
    });
    expect((await post({ source: 'group:4242', url: 'ftp://a.example/' })).json()).toMatchObject({
      code: 'WEBHOOK_URL_REFUSED',
    });
    expect((await post({ source: 'group:4242', url: 'https://user:pw@a.example/' })).json()).toMatchObject({
      code: 'WEBHOOK_URL_REFUSED',
    });
    expect((await post({ source: 'group:4242', url: 'https://a.example/' }, {} as typeof BEARER)).statusCode).toBe(401);
  });
});

describe('webhooks without WEBHOOK_ALLOW_PRIVATE', () => {
  let strict: FastifyInstance;
  let closeStrict: () => Promise<void>;

  beforeAll(async () => {
    const opened = await testContext({ WEBHOOK_ALLOW_PRIVATE: 'false' });
    closeStrict = opened.close;
    strict = await buildApp(opened.context, { logger: silentLogger() });
    await strict.ready();
  });
  afterAll(async () => {
    await strict?.close();
    await closeStrict?.();
  });

  it('refuses loopback and private URLs with 400, takes a public one', async () => {
    for (const url of [
      `${receiverUrl}/hook`,
      'http://[::1]:8080/hook',
      'http://10.0.0.5/hook',
      'http://169.254.169.254/latest/meta-data',
      'http://localhost:8080/hook',
      'http://[::ffff:127.0.0.1]/hook',
      // IPv6 forms that carry an internal IPv4 address, the old site-local range, loopback names with a final dot.
      'http://[::127.0.0.1]/hook',
      'http://[::ffff:0:10.0.0.1]/hook',
      'http://[2002:7f00:1::1]/hook',
      'http://[64:ff9b::169.254.169.254]/latest/meta-data',
      'http://[64:ff9b:1::808:808]/hook',
      'http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/hook',
      'http://[FEC0::1]:8080/hook',
      'http://localhost./hook',
      'http://a.localhost./hook',
    ]) {
      const answer = await strict.inject({
        method: 'POST',
        url: '/admin/webhooks',
        headers: BEARER,
        payload: { source: 'group:4242', url },
      });
      expect(answer.statusCode, url).toBe(400);
      expect(answer.json(), url).toMatchObject({ code: 'WEBHOOK_URL_REFUSED' });
    }
    const ok = await strict.inject({
      method: 'POST',
      url: '/admin/webhooks',
      headers: BEARER,
      payload: { source: 'group:4242', url: 'https://receiver.example/hook' },
    });
    expect(ok.statusCode).toBe(201);
    // A public IPv4 address in the same IPv6 forms is a public receiver.
    for (const url of ['http://[2002:808:808::1]/hook', 'http://[64:ff9b::8.8.8.8]/hook']) {
      const answer = await strict.inject({
        method: 'POST',
        url: '/admin/webhooks',
        headers: BEARER,
        payload: { source: 'group:4242', url },
      });
      expect(answer.statusCode, url).toBe(201);
    }
  });

  it('refuses, when connecting, a name that resolves to a loopback address', async () => {
    const sender = new WebhookSender({ allowPrivate: false });
    try {
      const port = (receiver.address() as AddressInfo).port;
      const before = received.length;
      const outcome = await sender.deliver({
        url: `http://localhost:${port}/guarded`,
        secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
        webhookId: 'msg_1',
        body: '{}',
        now: Date.now(),
      });
      expect(outcome).toEqual({ kind: 'failed', error: 'resolves to an internal address' });
      expect(received.length).toBe(before);
      // The same request with private addresses allowed reaches the receiver: the guard is what refused it.
      const open = new WebhookSender({ allowPrivate: true });
      const reached = await open.deliver({
        url: `http://localhost:${port}/guarded`,
        secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
        webhookId: 'msg_1',
        body: '{}',
        now: Date.now(),
      });
      await open.close();
      expect(reached).toEqual({ kind: 'delivered', status: 200 });
    } finally {
      await sender.close();
    }
  });
});
