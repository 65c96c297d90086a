/**
 * Abuse: 64 teacher searches at once while the university takes 8 s to answer a search (before the bounds, a
 * resync was held 31 s, then searches answered after up to 22 s and a sign-up refused with 503 for 20 s). The real
 * clients of the service (its own request-path pool, deadline and lanes, the shared Redis budget) against the
 * simulator with a latency fault, over loopback HTTP. Prints its figures as JSON lines.
 */
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.ts';
import { silentLogger } from '../../src/logger.ts';
import { REQUEST_PATH_LIMITS } from '../../src/upstream/bounded-client.ts';
import { until } from '../../testkit/poll.ts';
import { BEARER } from '../admin/admin-app.ts';
import { type Pipeline, startPipeline } from '../jobs/helpers.ts';

const SEARCHES = 64;
const SEARCH_LATENCY_MS = 8_000;

let pipeline: Pipeline;
let app: FastifyInstance;
let base: string;

beforeAll(async () => {
  // This suite measures the request-path pool, not the per-client search limits (limits.integration.test.ts).
  pipeline = await startPipeline({ SEARCHES_PER_CLIENT: '1000/1m', SEARCHES_TOTAL: '1000/1m' });
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

/** One answer: its status and how long it took from the request. */
async function timed(url: string, init: RequestInit = {}): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  const answer = await fetch(url, init);
  await answer.arrayBuffer();
  return { status: answer.status, ms: performance.now() - started };
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

describe('64 teacher searches at once against a university that takes 8 s per search', () => {
  it('answer within the deadline, and leave an admin resync and a sign-up unaffected', async () => {
    const [group] = await pipeline.sim.groups();
    const [user] = await pipeline.sim.users();
    await pipeline.sim.fault({ endpoint: 'employeeSearch', kind: 'latency', latencyMs: SEARCH_LATENCY_MS });

    // Distinct queries: each misses the cache and costs the university a call.
    const searches = Array.from({ length: SEARCHES }, (_, i) =>
      timed(`${base}/api/employees?q=${encodeURIComponent(`Преподаватель ${i}`)}`),
    );
    await until(
      async () => (await pipeline.sim.stats()).byEndpoint.employeeSearch ?? 0,
      (sent) => sent >= REQUEST_PATH_LIMITS.lanes.lookup.inFlight,
      5_000,
    );

    const resyncStarted = performance.now();
    const job = await resync(`group:${group?.id}`);
    const state = await until(
      () => pipeline.ctx.queues.refresh.getJobState(job),
      (current) => current === 'completed' || current === 'failed',
      30_000,
    );
    const resyncMs = Math.round(performance.now() - resyncStarted);

    const signUp = await timed(`${base}/api/subscriptions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ credential: user?.token }),
    });

    const answers = await Promise.all(searches);
    const worst = Math.round(Math.max(...answers.map((answer) => answer.ms)));
    const statuses = answers.map((answer) => answer.status);
    const count = (status: number) => statuses.filter((s) => s === status).length;
    const sentToUniversity = (await pipeline.sim.stats()).byEndpoint.employeeSearch ?? 0;
    figure('admin resync latency during 64 slow searches', resyncMs, 'ms');
    figure('sign-up answer time during 64 slow searches', Math.round(signUp.ms), 'ms');
    figure('worst search answer time (8 s university, 5 s deadline)', worst, 'ms');
    figure('searches answered 504 (university too slow)', count(504), 'searches');
    figure('searches answered 503 (lane full or still in line at the deadline)', count(503), 'searches');
    figure('searches sent to the university', sentToUniversity, 'searches');

    expect(state).toBe('completed');
    expect(resyncMs).toBeLessThan(2_000);
    expect(signUp.status).toBe(201);
    expect(signUp.ms).toBeLessThan(2_000);
    // Every search is answered by the deadline (plus scheduling slack), never the 8 s the university takes.
    expect(worst).toBeLessThan(REQUEST_PATH_LIMITS.deadlineMs + 1_000);
    expect(count(504) + count(503)).toBe(SEARCHES);
    expect(count(504)).toBeGreaterThanOrEqual(REQUEST_PATH_LIMITS.lanes.lookup.inFlight);
    // Only calls that had a place reached the university; those still in line were refused before being sent.
    expect(sentToUniversity).toBeLessThanOrEqual(count(504));
  }, 30_000);
});
