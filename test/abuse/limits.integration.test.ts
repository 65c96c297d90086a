/**
 * An anonymous client attacking the limits, on loopback (fastify inject; TRUST_PROXY + X-Forwarded-For stand
 * for many client addresses): bounded loops that measure what the attack costs the university and Redis, print
 * each figure as one JSON line, and assert the limits hold.
 */
import type { FastifyInstance, InjectOptions } from 'fastify';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { buildApp } from '../../src/http/app.ts';
import { startWorkers, type WorkerSet } from '../../src/jobs/workers.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { type RunningSimulator, startSimulator } from '../../src/simulator/index.ts';
import { until } from '../support/poll.ts';
import { testContext } from '../support/service.ts';

let simulator: RunningSimulator;
let ctx: ServiceContext;
let app: FastifyInstance;
let workers: WorkerSet;
let closeContext: () => Promise<void>;
let redis: Redis;

/** One figure, printed as the issue asks: one JSON line each. */
function figure(name: string, value: number, unit: string): void {
  console.log(JSON.stringify({ figure: name, value, unit }));
}

/** Upstream requests the simulator answered so far, by endpoint. */
async function upstreamCalls(): Promise<Record<string, number>> {
  const response = await fetch(`${simulator.url}/_sim/stats`);
  return ((await response.json()) as { requests: { byEndpoint: Record<string, number> } }).requests.byEndpoint;
}

/** Bytes and count of the keys under `pattern` (MEMORY USAGE: only this suite's keys, whatever else runs). */
async function keyMemory(pattern: string): Promise<{ keys: number; bytes: number }> {
  let cursor = '0';
  let keys = 0;
  let bytes = 0;
  do {
    const [next, found] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    for (const key of found) {
      keys += 1;
      bytes += (await redis.memory('USAGE', key)) ?? 0;
    }
  } while (cursor !== '0');
  return { keys, bytes };
}

async function usedMemory(): Promise<number> {
  const info = await redis.info('memory');
  return Number(/used_memory:(\d+)/.exec(info)?.[1]);
}

/** Sends `count` requests, `parallel` at a time; `make(i)` builds the i-th. Answers the status counts. */
async function flood(
  count: number,
  parallel: number,
  make: (i: number) => InjectOptions,
): Promise<Map<number, number>> {
  const statuses = new Map<number, number>();
  for (let start = 0; start < count; start += parallel) {
    const batch = Array.from({ length: Math.min(parallel, count - start) }, (_, k) => app.inject(make(start + k)));
    for (const response of await Promise.all(batch)) {
      statuses.set(response.statusCode, (statuses.get(response.statusCode) ?? 0) + 1);
      if (response.statusCode === 429) {
        expect(Number(response.headers['retry-after'])).toBeGreaterThanOrEqual(1);
        expect(response.json()).toEqual({ error: expect.stringMatching(/^too many .*; try again in \d+ seconds?$/) });
      }
    }
  }
  return statuses;
}

/** The address of client `i` (10.x.y.z), as a trusted proxy would forward it. */
const address = (i: number) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;

beforeAll(async () => {
  simulator = await startSimulator({ port: 0, seed: 7, groups: 4, employees: 4, users: 2 });
  const opened = await testContext({
    UNIVERSITY_API_URL: simulator.url,
    TRUST_PROXY: '127.0.0.1',
    UPSTREAM_RATE_LIMIT: '50',
  });
  ctx = opened.context;
  closeContext = opened.close;
  app = await buildApp(ctx, { logger: ctx.logger, feeds: { demandWaitMs: 100 } });
  workers = await startWorkers(ctx, inject('redisUrl'), { lockDurationMs: 5_000, stalledIntervalMs: 1_000 });
  redis = new Redis(inject('redisUrl'));
});
afterAll(async () => {
  await app.close();
  await workers.close();
  await closeContext();
  await simulator.close();
  redis.disconnect();
});

describe('abuse: one anonymous client', () => {
  it('60 wrong credentials from one client make a handful of upstream calls, then 429s', async () => {
    const before = (await upstreamCalls()).me ?? 0;
    const statuses = await flood(60, 10, (i) => ({
      method: 'POST',
      url: '/api/subscriptions',
      headers: { 'x-forwarded-for': '192.0.2.60' },
      payload: { credential: `wrong-credential-${i}` },
    }));
    const calls = ((await upstreamCalls()).me ?? 0) - before;
    figure('upstream calls made by 60 wrong credentials from one client', calls, 'requests');
    // A refusal is charged once answered: one burst of checks in flight may overshoot the budget, as a debt.
    expect(calls).toBeLessThanOrEqual(
      Math.max(ctx.config.failedSignUpsPerClient.count, ctx.config.signUpsInFlightPerClient),
    );
    expect(statuses.get(401)).toBe(calls);
    expect(statuses.get(429)).toBe(60 - calls);
  });

  it('a flood of 400 unknown ids from one client makes at most its first-request allowance of upstream calls', async () => {
    const before = (await upstreamCalls()).groupSchedule ?? 0;
    const statuses = await flood(400, 50, (i) => ({
      method: 'GET',
      url: `/feeds/groups/${700_001 + i}.ics`,
      headers: { 'x-forwarded-for': '192.0.2.40' },
    }));
    // The admitted ids are fetched by the worker: wait until the queue has nothing left to ask.
    const drained = async () => await ctx.queues.refresh.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
    await until(drained, (counts) => Object.values(counts).every((n) => n === 0), 30_000);
    const calls = ((await upstreamCalls()).groupSchedule ?? 0) - before;
    figure('upstream calls made by a flood of 400 unknown ids from one client', calls, 'requests');
    const allowance = ctx.config.firstRequestsPerClient.count;
    expect(statuses.get(429)).toBeGreaterThanOrEqual(400 - allowance);
    // A failed refresh is retried (REFRESH_ATTEMPTS=2 in tests) unless the university said "not found".
    expect(calls).toBeLessThanOrEqual(allowance * ctx.config.refreshAttempts);
  });
});

describe('abuse: many client addresses', () => {
  it('1,000 hostile requests from 1,000 addresses leave a bounded number of rate-limit keys', async () => {
    const pattern = `${ctx.config.redisPrefix}:rate:*`;
    const keysBefore = await keyMemory(pattern);
    const usedBefore = await usedMemory();
    const statuses = await flood(1_000, 50, (i) =>
      i % 2 === 0
        ? { method: 'GET', url: `/feeds/groups/${800_001 + i}.ics`, headers: { 'x-forwarded-for': address(i) } }
        : {
            method: 'POST',
            url: '/api/subscriptions',
            headers: { 'x-forwarded-for': address(i) },
            payload: { credential: `hostile-${i}` },
          },
    );
    const keysAfter = await keyMemory(pattern);
    const usedAfter = await usedMemory();
    const grown = keysAfter.bytes - keysBefore.bytes;
    figure(
      'rate-limit keys written by 1,000 hostile requests from 1,000 addresses',
      keysAfter.keys - keysBefore.keys,
      'keys',
    );
    figure('rate-limit key memory per 1,000 hostile requests from 1,000 addresses', grown, 'bytes');
    figure(
      'Redis used_memory growth per 1,000 hostile requests (shared Redis, includes queued jobs)',
      usedAfter - usedBefore,
      'bytes',
    );
    // Refused requests write nothing: per-client keys are bounded by what the totals admit, not by addresses (an
    // admitted first request writes its client's bucket and floor; a sign-up those and its failure bucket).
    const { firstRequestsTotal, signUpsTotal } = ctx.config;
    const admitted = firstRequestsTotal.count + signUpsTotal.count;
    expect(statuses.get(429)).toBeGreaterThanOrEqual(1_000 - admitted);
    expect(keysAfter.keys - keysBefore.keys).toBeLessThanOrEqual(
      2 * firstRequestsTotal.count + 3 * signUpsTotal.count + 8,
    );
    // And every bucket expires: none lives longer than its refill time plus a second.
    const ttl = await redis.pttl(`${ctx.config.redisPrefix}:rate:sign-up:failures:${address(1)}`);
    expect(ttl).toBeLessThanOrEqual(
      ctx.config.failedSignUpsPerClient.periodMs / ctx.config.failedSignUpsPerClient.count + 1_000,
    );
  });
});
