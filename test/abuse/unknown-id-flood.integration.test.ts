/**
 * Abuse: one client floods first requests for 400 ids the university does not know while an admin resyncs a
 * real group. Bounded (400 requests, 50 at once, loopback only). Prints its figures as JSON lines.
 *
 * What this measures is the queue's priorities, so the first-request limits are raised until all 400 ids
 * reach the queue (with the default limits only 30 would, and the resync would meet an empty queue); what the
 * limits let through is measured by the limited run in `limits.integration.test.ts`.
 */
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.ts';
import { silentLogger } from '../../src/logger.ts';
import { BEARER } from '../admin/admin-app.ts';
import { type Pipeline, startPipeline } from '../jobs/helpers.ts';
import { until } from '../support/poll.ts';

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
