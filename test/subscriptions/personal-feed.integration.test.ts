/**
 * A personal subscription end to end, with real workers: subscribe, the first refresh publishes the secret
 * feed, a credential the university starts rejecting stops refreshes (the feed keeps its last good data), a
 * replaced credential resumes them, and deleting the subscription takes the feed down.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { buildApp } from '../../src/http/app.ts';
import { startWorkers, type WorkerSet } from '../../src/jobs/workers.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { startSimulator } from '../../src/simulator/index.ts';
import { until } from '../../testkit/poll.ts';
import { readEvents, waitForJob } from '../jobs/helpers.ts';
import { testContext } from '../support/service.ts';
import { memoryLogger } from '../upstream/local-server.ts';
import { type SimControl, simControl } from '../upstream/sim-control.ts';

const REFERENCE_DATE = new Date('2025-10-01T00:00:00Z');
type Simulator = Awaited<ReturnType<typeof startSimulator>>;

let simulator: Simulator;
let sim: SimControl;
let ctx: ServiceContext;
let workers: WorkerSet;
let app: FastifyInstance;
let closeContext: () => Promise<void>;
const log = memoryLogger();

/** Waits for the refresh of `source` that is queued now (there is at most one). */
async function finishRefresh(source: string) {
  const queued = async () =>
    (await ctx.queues.refresh.getJobs(['waiting', 'delayed', 'prioritized', 'active'])).find(
      (job) => job.data.source === source,
    );
  const job = await until(queued, (found) => found?.id !== undefined, 10_000);
  if (job?.id === undefined) throw new Error(`no refresh of ${source} was queued`);
  return waitForJob(ctx, job.id);
}

beforeAll(async () => {
  simulator = await startSimulator({
    port: 0,
    seed: 1,
    referenceDate: REFERENCE_DATE,
    groups: 12,
    employees: 12,
    users: 3,
  });
  sim = simControl(simulator.url);
  const opened = await testContext(
    { UNIVERSITY_API_URL: simulator.url, LOG_LEVEL: 'debug' },
    { logger: log.logger, now: () => REFERENCE_DATE.getTime() },
  );
  ctx = opened.context;
  closeContext = opened.close;
  workers = await startWorkers(ctx, inject('redisUrl'), { lockDurationMs: 5_000, stalledIntervalMs: 1_000 });
  app = await buildApp(ctx, { logger: log.logger });
});
afterAll(async () => {
  await app.close();
  await workers.close();
  await closeContext();
  await simulator.close();
});

it('serves, pauses on a rejected credential, resumes after PATCH, and ends with DELETE', async () => {
  const [user] = await sim.users();
  if (!user) throw new Error('the simulator has no users');
  const created = await app.inject({ method: 'POST', url: '/api/subscriptions', payload: { credential: user.token } });
  expect(created.statusCode).toBe(201);
  const { id, source, token, feedUrl, name } = created.json<Record<string, string>>();
  const feedPath = new URL(feedUrl ?? '').pathname;
  const auth = { authorization: `Bearer ${token}` };

  expect((await finishRefresh(source ?? '')).state).toBe('completed');
  const feed = await app.inject({ method: 'GET', url: feedPath });
  expect(feed.statusCode).toBe(200);
  expect(feed.headers['content-type']).toMatch(/^text\/calendar/);
  // Long lines are folded (RFC 5545 §3.1); unfold before looking for the name.
  expect(feed.body.replace(/\r\n[ \t]/g, '')).toContain(`X-WR-CALNAME:${name}`);
  expect(readEvents(feed.body).length).toBeGreaterThan(0);
  expect((await app.inject({ method: 'GET', url: `/api/subscriptions/${id}`, headers: auth })).json()).toMatchObject({
    status: 'active',
    feedStatus: 'ok',
  });

  // The university starts rejecting the credential: no retry loop, the subscription asks for a new one.
  await sim.fault({ endpoint: 'mySchedule', kind: 'status', status: 401, error: 'Недействительный токен' });
  const resync = await app.inject({
    method: 'POST',
    url: '/admin/resync',
    headers: { authorization: `Bearer ${ctx.config.adminToken}` },
    payload: { subscription: id },
  });
  expect(resync.statusCode).toBe(202);
  const rejected = await finishRefresh(source ?? '');
  expect(rejected.state).toBe('failed');
  const paused = (await app.inject({ method: 'GET', url: `/api/subscriptions/${id}`, headers: auth })).json<
    Record<string, unknown>
  >();
  expect(paused).toMatchObject({ status: 'needs-credential' });
  expect(String(paused.statusReason)).toContain('Недействительный токен');
  expect((await app.inject({ method: 'GET', url: feedPath })).statusCode).toBe(200);

  await sim.clearFaults();
  const patched = await app.inject({
    method: 'PATCH',
    url: `/api/subscriptions/${id}`,
    headers: auth,
    payload: { credential: user.token },
  });
  expect(patched.statusCode).toBe(200);
  expect((await finishRefresh(source ?? '')).state).toBe('completed');
  expect((await app.inject({ method: 'GET', url: `/api/subscriptions/${id}`, headers: auth })).json()).toMatchObject({
    status: 'active',
    feedStatus: 'ok',
  });

  expect((await app.inject({ method: 'DELETE', url: `/api/subscriptions/${id}`, headers: auth })).statusCode).toBe(204);
  expect((await app.inject({ method: 'GET', url: feedPath })).statusCode).toBe(404);
  expect(await ctx.feeds.exists(source ?? '')).toBe(false);

  const output = log.output();
  expect(output).not.toContain(user.token);
  expect(output).not.toContain(token);
});
