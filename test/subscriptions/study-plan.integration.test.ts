/**
 * The study plan in personal calendars, with real workers against the simulator: a personal refresh reads the
 * plan once a day (not on every refresh), planned classes say how their subject ends, their planned hours and
 * the plan code, the personal page's comparison is built from the stored plan, and a plan the university
 * fails to give leaves the feed published without plan lines and the plan unavailable.
 */
import type { FastifyInstance } from 'fastify';
import ICAL from 'ical.js';
import { afterAll, afterEach, beforeAll, expect, inject, it, vi } from 'vitest';
import { buildApp } from '../../src/http/app.ts';
import { PLAN_MAX_AGE_MS, PLAN_RETRY_MS } from '../../src/jobs/fetch-plan.ts';
import { startWorkers, type WorkerSet } from '../../src/jobs/workers.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { startSimulator } from '../../src/simulator/index.ts';
import { StudyPlanStore } from '../../src/store/study-plan-store.ts';
import { studyPlanView } from '../../src/subscriptions/study-plan-view.ts';
import { until } from '../../testkit/poll.ts';
import { waitForJob } from '../jobs/helpers.ts';
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
let clock = REFERENCE_DATE.getTime();
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

async function signUp(credential: string): Promise<{ id: string; source: string; feedPath: string; token: string }> {
  const created = await app.inject({ method: 'POST', url: '/api/subscriptions', payload: { credential } });
  expect(created.statusCode).toBe(201);
  const { id, source, feedUrl, token } = created.json<Record<string, string>>();
  if (id === undefined || source === undefined || feedUrl === undefined || token === undefined)
    throw new Error('no subscription');
  expect((await finishRefresh(source)).state).toBe('completed');
  return { id, source, feedPath: new URL(feedUrl).pathname, token };
}

async function resync(id: string, source: string): Promise<void> {
  const answer = await app.inject({
    method: 'POST',
    url: '/admin/resync',
    headers: { authorization: `Bearer ${ctx.config.adminToken}` },
    payload: { subscription: id },
  });
  expect(answer.statusCode).toBe(202);
  expect((await finishRefresh(source)).state).toBe('completed');
}

/** Every event's description in a feed. */
async function descriptions(feedPath: string): Promise<string[]> {
  const feed = await app.inject({ method: 'GET', url: feedPath });
  expect(feed.statusCode).toBe(200);
  const calendar = new ICAL.Component(ICAL.parse(feed.body));
  return calendar.getAllSubcomponents('vevent').map((vevent) => String(vevent.getFirstPropertyValue('description')));
}

async function planCalls(): Promise<number> {
  return (await sim.stats()).byEndpoint.myPlan ?? 0;
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
    { logger: log.logger, now: () => clock },
  );
  ctx = opened.context;
  closeContext = opened.close;
  workers = await startWorkers(ctx, inject('redisUrl'), { lockDurationMs: 5_000, stalledIntervalMs: 1_000 });
  app = await buildApp(ctx, { logger: log.logger });
});
afterEach(async () => {
  vi.restoreAllMocks();
  await sim.clearFaults();
});
afterAll(async () => {
  await app.close();
  await workers.close();
  await closeContext();
  await simulator.close();
});

it('reads the plan once a day and describes planned classes with it', async () => {
  const [user] = await sim.users();
  if (!user) throw new Error('the simulator has no users');
  const plan = (await sim.raw('/users/@me/plan', { headers: { authorization: `Bearer ${user.token}` } })).body as {
    subjects: { full_shifr: string }[];
  };
  await sim.clearStats();
  const { id, source, feedPath, token } = await signUp(user.token);
  expect(await planCalls()).toBe(1);

  const codes = new Set(plan.subjects.map((subject) => subject.full_shifr));
  const planned = (await descriptions(feedPath)).filter((text) => text.includes('По плану'));
  expect(planned.length).toBeGreaterThan(0);
  for (const text of planned) {
    expect(text).toMatch(/^(Экзамен|Зачёт)$/m);
    const line = /^По плану \((.+)\): (лекции|практические занятия|семинары|лабораторные работы) \d+(,\d)? ч$/m.exec(
      text,
    );
    expect(line, text).not.toBeNull();
    expect(codes.has(line?.[1] ?? '')).toBe(true);
  }

  const subscription = await ctx.subscriptions.get(id);
  if (!subscription) throw new Error('subscription gone');
  const view = await studyPlanView(ctx, subscription);
  if (view.state !== 'ready') throw new Error(`plan view is ${view.state}`);
  expect(view.fetchedAt).toBe(clock);
  expect(view.semester).not.toBeNull();
  expect(view.rows.some((row) => row.scheduledHours > 0 && row.plannedHours > 0)).toBe(true);

  // A second refresh within the day reads the timetable only.
  const scheduleCalls = (await sim.stats()).byEndpoint.mySchedule ?? 0;
  clock += 60 * 60 * 1000;
  await resync(id, source);
  expect((await sim.stats()).byEndpoint.mySchedule).toBe(scheduleCalls + 1);
  expect(await planCalls()).toBe(1);

  // A day later the plan is read again.
  clock += PLAN_MAX_AGE_MS;
  await resync(id, source);
  expect(await planCalls()).toBe(2);

  // Deleting the subscription takes its plan along.
  const studyPlanKey = ctx.keys.studyPlan(subscription.source as never);
  expect(await ctx.redis.exists(studyPlanKey)).toBe(1);
  const deleted = await app.inject({
    method: 'DELETE',
    url: `/api/subscriptions/${id}`,
    headers: { authorization: `Bearer ${token}` },
  });
  expect(deleted.statusCode).toBe(204);
  expect(await ctx.redis.exists(studyPlanKey)).toBe(0);
});

it('publishes the timetable without plan lines when the plan fails, and says the plan is unavailable', async () => {
  const [, user] = await sim.users();
  if (!user) throw new Error('the simulator has a single user');
  await sim.fault({ endpoint: 'myPlan', kind: 'status', status: 503, error: 'План временно недоступен' });
  await sim.clearStats();
  const { id, source, feedPath } = await signUp(user.token);
  expect(await planCalls()).toBe(1);
  const texts = await descriptions(feedPath);
  expect(texts.length).toBeGreaterThan(0);
  expect(texts.some((text) => /По плану|Экзамен|Зачёт/.test(text))).toBe(false);

  const subscription = await ctx.subscriptions.get(id);
  if (!subscription) throw new Error('subscription gone');
  expect(subscription.status).toBe('active');
  expect(await studyPlanView(ctx, subscription)).toEqual({ state: 'unavailable', reason: 'failed', fetchedAt: null });
  const warnings = log
    .output()
    .split('\n')
    .filter((line) => line.includes('study plan not loaded') && line.includes(source));
  expect(warnings).toHaveLength(1);

  // Within the hour the failing plan is not asked again; after it, it is, and its lines arrive.
  await resync(id, source);
  expect(await planCalls()).toBe(1);
  await sim.clearFaults();
  clock += 60 * 60 * 1000;
  await resync(id, source);
  expect(await planCalls()).toBe(2);
  expect((await descriptions(feedPath)).some((text) => text.includes('По плану'))).toBe(true);
  expect((await studyPlanView(ctx, subscription)).state).toBe('ready');
});

it('publishes the timetable when the plan is rate-limited, then pauses the refresh queue for its Retry-After', async () => {
  const [, , user] = await sim.users();
  if (!user) throw new Error('the simulator has fewer than three users');
  // The pause is recorded, not served: the tests after this one need the queue.
  const paused = vi.spyOn(ctx.queues.refresh, 'rateLimit').mockResolvedValue(undefined);
  await sim.fault({ endpoint: 'myPlan', kind: 'rate-limit', retryAfterSeconds: 7 });
  const { id, feedPath } = await signUp(user.token);
  expect((await descriptions(feedPath)).length).toBeGreaterThan(0);
  expect(paused).toHaveBeenCalledWith(7_000);
  const subscription = await ctx.subscriptions.get(id);
  if (!subscription) throw new Error('subscription gone');
  expect(await studyPlanView(ctx, subscription)).toEqual({ state: 'unavailable', reason: 'failed', fetchedAt: null });
});

it('keeps the stored plan when the university answers an empty one, and tries again an hour later', async () => {
  const [user] = await sim.users();
  if (!user) throw new Error('the simulator has no users');
  const { id, source, feedPath } = await signUp(user.token);
  const plans = async () => {
    const plan = await new StudyPlanStore(ctx.redis, ctx.keys).load(source as never);
    if (plan === undefined) throw new Error(`no study plan stored for ${source}`);
    return plan;
  };
  const before = await plans();
  expect(before.subjects.length).toBeGreaterThan(0);

  vi.spyOn(ctx.upstream, 'myPlan').mockResolvedValueOnce([]);
  clock += PLAN_MAX_AGE_MS;
  await resync(id, source);
  const kept = await plans();
  expect(kept.subjects).toEqual(before.subjects);
  expect(kept.failure?.kind).toBe('protocol');
  expect((await descriptions(feedPath)).some((text) => text.includes('По плану'))).toBe(true);
  const warnings = log
    .output()
    .split('\n')
    .filter((line) => line.includes('study plan not loaded') && line.includes(source));
  expect(warnings).toHaveLength(1);

  // Retried on the failure schedule: the real plan comes back.
  clock += PLAN_RETRY_MS;
  await resync(id, source);
  expect(await plans()).toMatchObject({ failure: null, subjects: before.subjects });
});
