/**
 * Abuse: one client floods first requests for 400 ids the university does not know while an admin resyncs a
 * real group. Bounded (400 requests, 50 at once, loopback only). Prints its figures as JSON lines.
 *
 * What this measures is the queue's priorities, so the first-request limits are raised until all 400 ids
 * reach the queue (with the default limits only 30 would, and the resync would meet an empty queue); what the
 * limits let through is measured by the limited run in `limits.integration.test.ts`.
 *
 * Then, under the default limits, 3,000 unknown ids from 3,000 addresses (X-Forwarded-For from a trusted
 * proxy) spend the overall first-request limit while a fresh address asks for real groups and teachers: those
 * must still be served (bounded: 3,000 requests, 50 at once, fastify inject).
 */
import type { AddressInfo } from 'node:net';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.ts';
import { silentLogger } from '../../src/logger.ts';
import { until } from '../../testkit/poll.ts';
import { BEARER } from '../admin/admin-app.ts';
import { type Pipeline, startPipeline } from '../jobs/helpers.ts';

const FLOOD = 400;
const PARALLEL = 50;
const FIRST_UNKNOWN = 700_001;
/**
 * Upstream calls per second. The flood queues about 50 refreshes a second (50 clients giving up after 1 s),
 * so at 20 a second the queue grows by about 30 a second: first-in-first-out, a resync sent once it holds
 * {@link QUEUED_AT_RESYNC} would wait 10 s or more behind them and the ids still arriving.
 */
const UPSTREAM_RATE = 20;
/** Refreshes that must be waiting when the resync is sent: the flood really fills the queue. */
const QUEUED_AT_RESYNC = 150;

let pipeline: Pipeline;
let app: FastifyInstance;
let base: string;

beforeAll(async () => {
  pipeline = await startPipeline({
    UPSTREAM_RATE_LIMIT: String(UPSTREAM_RATE),
    FIRST_REQUESTS_PER_CLIENT: `${FLOOD * 2}/1m`,
    FIRST_REQUESTS_TOTAL: `${FLOOD * 2}/1m`,
  });
  app = await buildApp(pipeline.ctx, { logger: silentLogger() });
  await app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await app?.close();
  await pipeline?.close();
});

function figure(name: string, value: number, unit: string): void {
  console.log(JSON.stringify({ figure: name, value, unit }));
}

/** Requests every id, `PARALLEL` at once, each given up after 1 s as `curl --max-time 1` would. */
async function flood(ids: number[]): Promise<void> {
  const queue = [...ids];
  const client = async () => {
    for (let id = queue.shift(); id !== undefined; id = queue.shift()) {
      await fetch(`${base}/feeds/groups/${id}.ics`, { signal: AbortSignal.timeout(1_000) })
        .then((answer) => answer.arrayBuffer())
        .catch(() => undefined);
    }
  };
  await Promise.all(Array.from({ length: PARALLEL }, client));
}

/** Refreshes waiting to run (not the one running, not delayed retries). */
async function waiting(): Promise<number> {
  const counts = await pipeline.ctx.queues.refresh.getJobCounts('waiting', 'prioritized');
  return (counts.waiting ?? 0) + (counts.prioritized ?? 0);
}

/** Keys under this test's prefix (the Redis is shared with other test files). */
async function prefixKeys(): Promise<number> {
  let count = 0;
  let cursor = '0';
  do {
    const [next, keys] = await pipeline.ctx.redis.scan(
      cursor,
      'MATCH',
      `${pipeline.ctx.config.redisPrefix}:*`,
      'COUNT',
      1000,
    );
    cursor = next;
    count += keys.length;
  } while (cursor !== '0');
  return count;
}

async function resync(source: string): Promise<string> {
  const answer = await fetch(`${base}/admin/resync`, {
    method: 'POST',
    headers: { ...BEARER, 'content-type': 'application/json' },
    body: JSON.stringify({ source }),
  });
  expect(answer.status).toBe(202);
  return ((await answer.json()) as { jobs: string[] }).jobs[0] as string;
}

describe('a flood of first requests for unknown ids', () => {
  it('leaves an admin resync fast, and leaves no job behind per id', async () => {
    const [group] = (await pipeline.sim.groups()).map((candidate) => candidate.id);
    const callsBefore = (await pipeline.sim.stats()).byEndpoint.groupSchedule ?? 0;
    const keysBefore = await prefixKeys();
    const ids = Array.from({ length: FLOOD }, (_, index) => FIRST_UNKNOWN + index);

    const flooding = flood(ids);
    // Resync once the flood has filled the queue; a flood that never fills it measures nothing.
    const queuedAtResync = await until(waiting, (queued) => queued >= QUEUED_AT_RESYNC, 15_000);
    expect(queuedAtResync).toBeGreaterThanOrEqual(QUEUED_AT_RESYNC);
    const started = performance.now();
    const job = await resync(`group:${group}`);
    const state = await until(
      () => pipeline.ctx.queues.refresh.getJobState(job),
      (current) => current === 'completed' || current === 'failed',
      10_000,
    );
    const resyncMs = Math.round(performance.now() - started);
    // It went ahead of the flood: most of what waited when it was sent still waits.
    const queuedAtDone = await waiting();
    await flooding;
    expect(state).toBe('completed');

    // Nothing queued and nothing running: a refresh still active would make its call after the count below.
    const drained = await until(
      () => pipeline.ctx.queues.refresh.getJobCounts('waiting', 'active', 'delayed', 'prioritized'),
      (counts) => Object.values(counts).every((count) => count === 0),
      30_000,
    );
    expect(drained).toEqual({ waiting: 0, active: 0, delayed: 0, prioritized: 0 });
    const calls = ((await pipeline.sim.stats()).byEndpoint.groupSchedule ?? 0) - callsBefore;
    const counts = await pipeline.ctx.queues.refresh.getJobCounts('failed', 'completed');
    const keysAfter = await prefixKeys();
    figure('refreshes waiting when the admin resync was sent', queuedAtResync, 'jobs');
    figure('admin resync latency during a flood of 400 unknown ids', resyncMs, 'ms');
    figure('refreshes still waiting when the admin resync completed', queuedAtDone, 'jobs');
    figure('upstream calls made by the flood (and the resync), limits raised', calls, 'calls');
    figure('failed refresh jobs left after the flood', counts.failed ?? 0, 'jobs');
    figure('Redis keys added by the flood', keysAfter - keysBefore, 'keys');

    expect(resyncMs).toBeLessThan(3_000);
    expect(queuedAtDone).toBeGreaterThanOrEqual(QUEUED_AT_RESYNC / 2);
    expect(calls).toBeLessThanOrEqual(FLOOD + 1);
    expect(counts.failed).toBe(0);
    // One remembered 404 per id the university was asked about, and the resynced group's own keys.
    expect(keysAfter - keysBefore).toBeLessThanOrEqual(calls + 50);
    // Asked again, an id the university rejected answers 404 at once, without a job or a call.
    const again = await fetch(`${base}/feeds/groups/${FIRST_UNKNOWN}.ics`);
    expect(again.status).toBe(404);
    expect(((await pipeline.sim.stats()).byEndpoint.groupSchedule ?? 0) - callsBefore).toBe(calls);
  }, 60_000);
});

/** The address of flooding client `i` (10.x.y.z), as a trusted proxy would forward it. */
const address = (i: number) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;

describe('a flood of first requests for unknown ids from many addresses', () => {
  const MANY = 3_000;
  let own: Pipeline;
  let api: FastifyInstance;

  beforeAll(async () => {
    // The default first-request limits (30/1m per client, 120/1m in total): the flood can spend the total.
    own = await startPipeline({ TRUST_PROXY: '127.0.0.1', UPSTREAM_RATE_LIMIT: '100' });
    api = await buildApp(own.ctx, { logger: silentLogger(), feeds: { demandWaitMs: 5_000 } });
  });
  afterAll(async () => {
    await api?.close();
    await own?.close();
  });

  const first = (path: string, from: string): Promise<LightMyRequestResponse> =>
    api.inject({ method: 'GET', url: path, headers: { 'x-forwarded-for': from } });

  it('leaves first requests for real groups and teachers from a fresh address served', async () => {
    const groups = await own.sim.groups();
    // The directory knows the university's groups (an admin imported them), and one published group timetable
    // named its teachers.
    await own.ctx.directory.import(groups.map(({ id, name }) => ({ id, name })));
    const [published, ...others] = groups;
    if (published === undefined) throw new Error('the simulator has no groups');
    expect((await own.refresh(`group:${published.id}`)).state).toBe('completed');
    const snapshot = await own.ctx.snapshots.snapshot(`group:${published.id}`);
    const named = [...new Set(snapshot?.entries.map((entry) => entry.teacher.id))].filter((id) => id !== null);
    const real = [
      ...others.slice(0, 5).map(({ id }) => `/feeds/groups/${id}.ics`),
      ...named.slice(0, 2).map((id) => `/feeds/employees/${id}.ics`),
    ];
    expect(real).toHaveLength(7);

    const flood = { done: 0, limited: 0, notFound: 0 };
    const queue = Array.from({ length: MANY }, (_, i) => i);
    const client = async () => {
      for (let i = queue.shift(); i !== undefined; i = queue.shift()) {
        const answer = await first(`/feeds/groups/${900_001 + i}.ics`, address(i + 1));
        flood.done += 1;
        if (answer.statusCode === 429) flood.limited += 1;
        if (answer.statusCode === 404) flood.notFound += 1;
      }
    };
    const started = performance.now();
    const flooding = Promise.all(Array.from({ length: 50 }, client));
    // Once the flood is refused by the total (not by any client's own limit: one request per address), the
    // fresh address asks for the real timetables, while the flood goes on.
    await until(
      async () => flood.limited,
      (limited) => limited >= 50,
      30_000,
    );
    const answers = await Promise.all(real.map((path) => first(path, '192.0.2.77')));
    const servedAt = flood.done;
    await flooding;
    const floodMs = Math.round(performance.now() - started);
    figure('unknown ids from distinct addresses', MANY, 'requests');
    figure('flood duration', floodMs, 'ms');
    figure('unknown ids refused by the overall first-request limit', flood.limited, 'requests');
    figure('unknown ids let in (answered 404 by the university)', flood.notFound, 'requests');
    figure('flood requests sent before the real ones were answered', servedAt, 'requests');
    figure(
      'first requests for real timetables from a fresh address served during the flood',
      answers.filter((answer) => answer.statusCode === 200).length,
      'of 7',
    );

    expect(answers.map((answer) => answer.statusCode)).toEqual(Array(7).fill(200));
    // The flood really ran short of the total, and was still going when the real ones were answered.
    expect(flood.limited).toBeGreaterThan(MANY / 2);
    expect(servedAt).toBeLessThan(MANY);
    // Made-up ids may take half the total and what refills while they flood; the rest stays for real ones.
    const { firstRequestsTotal } = own.ctx.config;
    const refilled = Math.ceil((floodMs * firstRequestsTotal.count) / firstRequestsTotal.periodMs);
    expect(flood.notFound).toBeLessThanOrEqual(firstRequestsTotal.count / 2 + refilled);
    // An unknown id asked again is answered from memory: 404, no job, no call, no token.
    const calls = (await own.sim.stats()).byEndpoint.groupSchedule ?? 0;
    const again = await Promise.all(
      Array.from({ length: 20 }, (_, i) => first(`/feeds/groups/${900_001 + i}.ics`, '192.0.2.78')),
    );
    const remembered = again.filter((answer) => answer.statusCode === 404).length;
    expect(remembered + again.filter((answer) => answer.statusCode === 429).length).toBe(20);
    expect((await own.sim.stats()).byEndpoint.groupSchedule ?? 0).toBe(calls);
  }, 90_000);
});
