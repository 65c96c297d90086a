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
import { until } from '../../testkit/poll.ts';
import { testContext } from '../support/service.ts';

let simulator: RunningSimulator;
let ctx: ServiceContext;
let app: FastifyInstance;
let workers: WorkerSet;
let closeContext: () => Promise<void>;
let redis: Redis;

/** One figure, printed as a JSON line that the docs' figures are copied from. */
function figure(name: string, value: number, unit: string): void {
  console.log(JSON.stringify({ figure: name, value, unit }));
}

/** Upstream requests the simulator answered so far, by endpoint. */
async function upstreamCalls(): Promise<Record<string, number>> {
  const response = await fetch(`${simulator.url}/_sim/stats`);
  return ((await response.json()) as { requests: { byEndpoint: Record<string, number> } }).requests.byEndpoint;
}

/**
 * Bytes and count of the keys under `pattern`: MEMORY USAGE of each (SAMPLES 0: every element of a hash or
 * sorted set counted, not estimated). Only this suite's keys, whatever else runs, and no allocator noise.
 */
async function keyMemory(pattern: string, except?: string): Promise<{ keys: number; bytes: number }> {
  let cursor = '0';
  let keys = 0;
  let bytes = 0;
  do {
    const [next, found] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    for (const key of found) {
      if (except !== undefined && key.startsWith(except)) continue;
      keys += 1;
      bytes += (await redis.memory('USAGE', key, 'SAMPLES', 0)) ?? 0;
    }
  } while (cursor !== '0');
  return { keys, bytes };
}

/** Waits until the refresh queue has nothing waiting or running (the admitted first requests are fetched). */
async function drainRefreshes(): Promise<void> {
  const pending = async () => await ctx.queues.refresh.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
  await until(pending, (counts) => Object.values(counts).every((n) => n === 0), 30_000);
}

async function usedMemory(): Promise<number> {
  const info = await redis.info('memory');
  return Number(/used_memory:(\d+)/.exec(info)?.[1]);
}

/**
 * Sends `count` requests, `parallel` at a time; `make(i)` builds the i-th. Answers the status counts, and tells
 * `tally` each request's status when given.
 */
async function flood(
  count: number,
  parallel: number,
  make: (i: number) => InjectOptions,
  tally?: (request: InjectOptions, status: number) => void,
): Promise<Map<number, number>> {
  const statuses = new Map<number, number>();
  for (let start = 0; start < count; start += parallel) {
    const requests = Array.from({ length: Math.min(parallel, count - start) }, (_, k) => make(start + k));
    const responses = await Promise.all(requests.map((request) => app.inject(request)));
    for (const [k, response] of responses.entries()) {
      statuses.set(response.statusCode, (statuses.get(response.statusCode) ?? 0) + 1);
      tally?.(requests[k] as InjectOptions, response.statusCode);
      if (response.statusCode === 429) {
        expect(Number(response.headers['retry-after'])).toBeGreaterThanOrEqual(1);
        expect(response.json()).toEqual({
          error: expect.stringMatching(/^too many .*; try again in \d+ seconds?$/),
          code: 'RATE_LIMITED',
        });
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
    // Someone behind the same address signed up before.
    const listed = (await (await fetch(`${simulator.url}/_sim/users`)).json()) as { users: { token: string }[] };
    const user = listed.users[0];
    const own = (): InjectOptions => ({
      method: 'POST',
      url: '/api/subscriptions',
      headers: { 'x-forwarded-for': '192.0.2.60' },
      payload: { credential: user?.token },
    });
    expect((await app.inject(own())).statusCode).toBe(201);
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
    // The failure limits hold back guesses, not that person: checked with the university, signed up again.
    expect((await app.inject(own())).statusCode).toBe(200);
    expect(((await upstreamCalls()).me ?? 0) - before).toBe(calls + 1);
  });

  it('a flood of 400 unknown ids from one client makes at most its first-request allowance of upstream calls', async () => {
    const before = (await upstreamCalls()).groupSchedule ?? 0;
    const statuses = await flood(400, 50, (i) => ({
      method: 'GET',
      url: `/feeds/groups/${700_001 + i}.ics`,
      headers: { 'x-forwarded-for': '192.0.2.40' },
    }));
    // The admitted ids are fetched by the worker: wait until the queue has nothing left to ask.
    await drainRefreshes();
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
    const prefix = `${ctx.config.redisPrefix}:`;
    const rate = `${ctx.config.redisPrefix}:rate:*`;
    const queues = `${ctx.keys.queuePrefix}:*`;
    // Earlier tests' refreshes finished, and their buckets gone: the figures count this flood's work only, from
    // full totals (how much of them the earlier floods left depends on the time they took).
    await drainRefreshes();
    const earlierBuckets = await redis.keys(rate);
    if (earlierBuckets.length > 0) await redis.del(...earlierBuckets);
    const before = {
      rate: await keyMemory(rate),
      all: await keyMemory(`${prefix}*`),
      queues: await keyMemory(queues),
      used: await usedMemory(),
    };
    // Answers other than 429, by request: first requests (each took a token), sign-ups checked (401, a token
    // each) and sign-ups that never reached the university (503: the upstream lane was busy, tokens given back).
    const passed = { firstRequests: 0, checked: 0, notChecked: 0 };
    const floodStart = Date.now();
    await flood(
      1_000,
      50,
      (i) =>
        i % 2 === 0
          ? { method: 'GET', url: `/feeds/groups/${800_001 + i}.ics`, headers: { 'x-forwarded-for': address(i) } }
          : {
              method: 'POST',
              url: '/api/subscriptions',
              headers: { 'x-forwarded-for': address(i) },
              payload: { credential: `hostile-${i}` },
            },
      (request, status) => {
        if (status === 429) return;
        if (request.method === 'GET') passed.firstRequests += 1;
        else if (status === 401) passed.checked += 1;
        else passed.notChecked += 1;
      },
    );
    const floodMs = Date.now() - floodStart;
    // What stays once the admitted first requests were fetched (the 404s remembered, the jobs gone or kept).
    await drainRefreshes();
    const after = {
      rate: await keyMemory(rate),
      all: await keyMemory(`${prefix}*`),
      queues: await keyMemory(queues),
      used: await usedMemory(),
    };
    const rateKeys = after.rate.keys - before.rate.keys;
    figure('rate-limit keys written by 1,000 hostile requests from 1,000 addresses', rateKeys, 'keys');
    figure(
      'rate-limit key memory per 1,000 hostile requests from 1,000 addresses',
      after.rate.bytes - before.rate.bytes,
      'bytes',
    );
    figure(
      'keys added under the prefix by 1,000 hostile requests (queues included)',
      after.all.keys - before.all.keys,
      'keys',
    );
    figure(
      'key memory (MEMORY USAGE) added under the prefix per 1,000 hostile requests (queues included)',
      after.all.bytes - before.all.bytes,
      'bytes',
    );
    figure('of which queue keys', after.queues.bytes - before.queues.bytes, 'bytes');
    figure(
      'Redis used_memory growth per 1,000 hostile requests (whole Redis, allocator and buffers included)',
      after.used - before.used,
      'bytes',
    );
    // Each total admits its capacity and what refills while the flood lasts (seconds: longer on a busy machine).
    const { firstRequestsTotal, signUpsTotal } = ctx.config;
    const firsts =
      firstRequestsTotal.count + Math.ceil((floodMs * firstRequestsTotal.count) / firstRequestsTotal.periodMs);
    const signUps = signUpsTotal.count + Math.ceil((floodMs * signUpsTotal.count) / signUpsTotal.periodMs);
    figure('first requests admitted of 500 unknown ids from 500 addresses', passed.firstRequests, 'requests');
    figure('sign-up checks admitted of 500 wrong credentials from 500 addresses', passed.checked, 'requests');
    expect(passed.firstRequests).toBeLessThanOrEqual(firsts);
    expect(passed.checked).toBeLessThanOrEqual(signUps);
    // Refused requests write nothing: keys are bounded by the requests let in, not by addresses (one let in
    // writes its client's bucket and floor, a sign-up its failure bucket too), and a few totals besides.
    expect(rateKeys).toBeLessThanOrEqual(2 * passed.firstRequests + 3 * (passed.checked + passed.notChecked) + 8);
    // And every bucket expires: none lives longer than its refill time plus a second.
    const ttl = await redis.pttl(`${ctx.config.redisPrefix}:rate:sign-up:failures:${address(1)}`);
    expect(ttl).toBeLessThanOrEqual(
      ctx.config.failedSignUpsPerClient.periodMs / ctx.config.failedSignUpsPerClient.count + 1_000,
    );
  });
});
