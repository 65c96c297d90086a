/**
 * Abuse: one client floods first requests for 400 ids the university does not know while an admin resyncs a
 * real group. Bounded (400 requests, 50 at once, loopback only). Prints its figures as JSON lines.
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

let pipeline: Pipeline;
let app: FastifyInstance;
let base: string;

beforeAll(async () => {
  // 50 upstream calls/s: 400 unknown ids queued first-in-first-out would hold a resync for about 8 s.
  pipeline = await startPipeline({ UPSTREAM_RATE_LIMIT: '50' });
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
    // Resync once the flood has filled the queue.
    await until(
      () => pipeline.ctx.queues.refresh.count(),
      (queued) => queued >= 50,
      5_000,
    );
    const started = performance.now();
    const job = await resync(`group:${group}`);
    const state = await until(
      () => pipeline.ctx.queues.refresh.getJobState(job),
      (current) => current === 'completed' || current === 'failed',
      30_000,
    );
    const resyncMs = Math.round(performance.now() - started);
    await flooding;
    expect(state).toBe('completed');

    const drained = await until(
      () => pipeline.ctx.queues.refresh.count(),
      (queued) => queued === 0,
      30_000,
    );
    expect(drained).toBe(0);
    const calls = ((await pipeline.sim.stats()).byEndpoint.groupSchedule ?? 0) - callsBefore;
    const counts = await pipeline.ctx.queues.refresh.getJobCounts('failed', 'completed');
    const keysAfter = await prefixKeys();
    figure('admin resync latency during a flood of 400 unknown ids', resyncMs, 'ms');
    figure('upstream calls made by the flood (and the resync)', calls, 'calls');
    figure('failed refresh jobs left after the flood', counts.failed ?? 0, 'jobs');
    figure('Redis keys added by the flood', keysAfter - keysBefore, 'keys');

    expect(resyncMs).toBeLessThan(3_000);
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
