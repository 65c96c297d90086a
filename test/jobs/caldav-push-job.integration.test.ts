/** The CalDAV push job through real workers and Redis, with an in-memory CalDAV server behind `ctx.caldav`. */

import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { CalDavClientFactory } from '../../src/caldav/caldav-client.ts';
import { caldavDetailFields } from '../../src/caldav/caldav-targets.ts';
import {
  CalDavAuthError,
  CalDavForbiddenError,
  CalDavQuotaError,
  CalDavRateLimitError,
  CalDavTransientError,
} from '../../src/caldav/errors.ts';
import { resourceIdFor } from '../../src/caldav/ics-resource.ts';
import { feedOccurrences } from '../../src/feeds/build-feed.ts';
import type { PushJobResult, PushReason } from '../../src/jobs/contract.ts';
import { enqueuePush, enqueueRefresh } from '../../src/jobs/queues.ts';
import { reconcile } from '../../src/jobs/schedule.ts';
import { startWorkers, type WorkerSet } from '../../src/jobs/workers.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { startSimulator } from '../../src/simulator/index.ts';
import { until } from '../../testkit/poll.ts';
import { MemoryCalDav } from '../caldav/memory-caldav.ts';
import { jobEnded } from '../support/jobs.ts';
import { testContext } from '../support/service.ts';
import { simControl } from '../upstream/sim-control.ts';
import { REFERENCE_DATE, waitForJob } from './helpers.ts';

const PAUSE_MS = 3_600_000;
const RECONCILE_MS = 7_200_000;

let ctx: ServiceContext;
let workers: WorkerSet;
let closeAll: () => Promise<void>;
let groupIds: number[];
const clock = { now: REFERENCE_DATE.getTime() };

/** One in-memory CalDAV account per login, with the app password it accepts. */
const accounts = new Map<string, { server: MemoryCalDav; password: string; budgetCalls: number }>();

/**
 * Clients of the in-memory accounts: a wrong password is a 401 on the first request, as a real server answers.
 * Every request first goes through the hook the service hands the factory (the real per-host budget).
 */
const factory: CalDavClientFactory = (credentials, beforeRequest) => {
  const account = accounts.get(credentials.username);
  if (!account) throw new Error(`unknown login ${credentials.username}`);
  const { server } = account;
  server.beforeRequest = async (host) => {
    account.budgetCalls += 1;
    await beforeRequest(host);
    if (credentials.password !== account.password)
      throw new CalDavAuthError('PROPFIND: 401 Unauthorized', { status: 401, host });
  };
  return server;
};

beforeAll(async () => {
  const simulator = await startSimulator({
    port: 0,
    seed: 1,
    referenceDate: REFERENCE_DATE,
    groups: 12,
    employees: 4,
    users: 2,
  });
  const env = {
    UNIVERSITY_API_URL: simulator.url,
    CALDAV_PAUSE: '1h',
    CALDAV_RECONCILE_INTERVAL: '2h',
    // A first push of a few hundred resources at the default 5/s would take a minute; the budget has its own tests.
    CALDAV_RATE_LIMIT: '1000',
  };
  const opened = await testContext(env, { now: () => clock.now, caldavFactory: factory });
  ctx = opened.context;
  workers = await startWorkers(ctx, inject('redisUrl'), {
    lockDurationMs: 5_000,
    stalledIntervalMs: 1_000,
    pushRateLimitBaseMs: 50,
  });
  // The tests run the scheduler's reconcile themselves (see push-job.integration.test.ts).
  await ctx.queues.schedule.pause();
  groupIds = (await simControl(simulator.url).groups())
    .filter((group) => group.entryCount >= 8)
    .map((group) => group.id);
  closeAll = async () => {
    await workers.close();
    await opened.close();
    await simulator.close();
  };
});
afterAll(async () => {
  await closeAll?.();
});

/** Numbers the accounts: each connection gets a host, a login and a password of its own. */
let accountCount = 0;

interface Connected {
  id: string;
  source: string;
  server: MemoryCalDav;
  calendarUrl: string;
  host: string;
}

/** A published group with a CalDAV target pushing it into a fresh calendar on a host of its own. */
async function connected(groupIndex: number): Promise<Connected> {
  const source = `group:${groupIds[groupIndex]}`;
  const refresh = await waitForJob(
    ctx,
    await enqueueRefresh(ctx.queues, ctx.config, source, { reason: 'resync', now: clock.now }),
  );
  expect(refresh.state).toBe('completed');
  accountCount += 1;
  const counter = accountCount;
  const host = `dav${counter}.test`;
  const username = `student${counter}`;
  const calendarUrl = `https://${host}/${username}/timetable/`;
  const server = new MemoryCalDav([calendarUrl], `https://${host}/${username}/`);
  accounts.set(username, { server, password: `app-password-${counter}`, budgetCalls: 0 });
  const { id } = await ctx.caldav.targets.create({
    source,
    calendarId: calendarUrl,
    calendarOwned: true,
    calendarName: source,
    secret: `app-password-${counter}`,
    details: caldavDetailFields(calendarUrl, {
      serverUrl: `https://${host}`,
      homeUrl: `https://${host}/${username}/`,
      username: username,
      supportsSync: true,
    }),
    now: clock.now,
  });
  return { id, source, server, calendarUrl, host };
}

/** Queues a CalDAV push and waits until it completed or failed for good. */
async function push(
  target: Connected,
  reason: PushReason = 'connect',
): Promise<{
  state: string;
  result: PushJobResult;
  attemptsMade: number;
  attemptsStarted: number;
  failedReason: string | undefined;
}> {
  const id = await enqueuePush(ctx.queues, 'caldav', target.id, target.source, reason);
  const { job, state } = await jobEnded(ctx.queues.pushQueue('caldav'), id, 20_000);
  return {
    state,
    result: job.returnvalue,
    attemptsMade: job.attemptsMade,
    attemptsStarted: job.attemptsStarted,
    failedReason: job.failedReason,
  };
}

/** The resource ids the calendar should hold: the feed's occurrences, cancelled ones (prefixed) included. */
async function expectedIds(source: string): Promise<string[]> {
  const { snapshot, published } = await ctx.snapshots.load(source);
  if (!snapshot || !published) throw new Error('not published');
  const uids = new Set(feedOccurrences(snapshot, published, ctx.config).map((occurrence) => occurrence.uid));
  return [...uids].map(resourceIdFor).sort();
}

/** The resource ids the calendar holds. */
function heldIds(target: Connected): string[] {
  return target.server
    .resources(target.calendarUrl)
    .map((resource) => resource.href.slice(target.calendarUrl.length, -'.ics'.length))
    .sort();
}

const dueAt = async (id: string) => Number(await ctx.redis.zscore(ctx.keys.caldavTargetsDue, id));

describe('CalDAV push job', () => {
  it('the first push writes every class, records the push and its listing; a refresh without change writes nothing', async () => {
    const target = await connected(0);
    const job = await push(target);
    expect(job.state).toBe('completed');
    const expected = await expectedIds(target.source);
    expect(expected.length).toBeGreaterThan(0);
    expect(job.result).toMatchObject({ reconciled: true, desired: expected.length, inserted: expected.length });
    expect(heldIds(target)).toEqual(expected);
    expect(target.server.writes()).toBe(expected.length);
    // Every resource is ours: marked with the source.
    expect(new Set(target.server.resources(target.calendarUrl).map((r) => r.markerValue))).toEqual(
      new Set([target.source]),
    );
    expect(await ctx.caldav.targets.index(target.id).size()).toBe(expected.length);
    const stored = await ctx.caldav.targets.get(target.id);
    expect(stored).toMatchObject({
      status: 'active',
      reconcileRequested: false,
      lastPush: { reason: 'connect', inserted: expected.length },
      details: { syncToken: expect.stringMatching(/^http:\/\/radicale\.org\/ns\/sync\//) },
    });
    expect(await dueAt(target.id)).toBe(clock.now + RECONCILE_MS);
    // Every request went through the per-host budget.
    const account = accounts.get(stored?.details.username ?? '');
    expect(account?.budgetCalls).toBe(target.server.sent.length);

    target.server.resetCounts();
    expect((await push(target, 'refresh')).result).toMatchObject({
      reconciled: false,
      writes: 0,
      unchanged: expected.length,
    });
    expect(target.server.sent).toEqual([]);
  });

  it('publishing a source fans out to its CalDAV targets, reading the published timetable once', async () => {
    const first = await connected(1);
    const second = await connected(1);
    await ctx.redis.sadd(ctx.keys.pushOwed, first.source);
    const refresh = await waitForJob(
      ctx,
      await enqueueRefresh(ctx.queues, ctx.config, first.source, { reason: 'resync', now: clock.now }),
    );
    expect(refresh.result).toMatchObject({ pushJobs: 2 });
    for (const target of [first, second]) {
      await until(
        () => ctx.caldav.targets.get(target.id),
        (stored) => stored?.lastPush !== undefined,
        10_000,
      );
      expect(heldIds(target)).toEqual(await expectedIds(target.source));
    }
    // The Google queue never saw them.
    expect(
      await ctx.queues.pushQueue('google').getJobCountByTypes('waiting', 'active', 'completed', 'failed', 'delayed'),
    ).toBe(0);
  });

  it('a refused password (401) makes the target wait for a new one, and a new one reactivates it', async () => {
    const target = await connected(2);
    const account = [...accounts.values()].find((each) => each.server === target.server);
    if (!account) throw new Error('no account');
    account.password = 'changed-on-the-server';
    const job = await push(target);
    expect(job).toMatchObject({ state: 'failed', attemptsMade: 1 });
    expect(await ctx.caldav.targets.get(target.id)).toMatchObject({
      status: 'needs-password',
      statusReason: expect.stringContaining('401'),
    });
    expect(await ctx.redis.zscore(ctx.keys.caldavTargetsDue, target.id)).toBeNull();
    expect((await push(target, 'refresh')).result).toEqual({ skipped: 'target needs a new app password' });
    expect(target.server.writes()).toBe(0);

    expect(await ctx.caldav.targets.replaceCredential(target.id, 'changed-on-the-server', clock.now)).toBe(true);
    expect((await push(target)).state).toBe('completed');
    expect(await ctx.caldav.targets.get(target.id)).toMatchObject({ status: 'active', credentialVersion: 2 });
    expect(heldIds(target)).toEqual(await expectedIds(target.source));
  });

  it.each([
    [
      '403',
      new CalDavForbiddenError('PUT: 403 Forbidden', { status: 403, reason: 'calendar is read-only' }),
      /403.*read-only/,
    ],
    [
      '507',
      new CalDavQuotaError('PUT: 507 Insufficient Storage', { status: 507, reason: 'quota exceeded' }),
      /no room.*quota exceeded/,
    ],
  ])('a %s pauses the target with the reason, until CALDAV_PAUSE is over', async (_status, error, reason) => {
    const target = await connected(3);
    target.server.faults.push({ method: 'create', at: 2, when: 'before', error });
    const job = await push(target);
    expect(job).toMatchObject({ state: 'failed', attemptsMade: 1 });
    expect(await ctx.caldav.targets.get(target.id)).toMatchObject({
      status: 'paused',
      statusReason: expect.stringMatching(reason),
      pausedUntil: clock.now + PAUSE_MS,
    });
    expect(await dueAt(target.id)).toBe(clock.now + PAUSE_MS);
    expect((await push(target, 'refresh')).result).toMatchObject({ skipped: expect.stringContaining('paused until') });
    // When the pause is over, the scheduler's due scan queues a reconciling push that finishes the job.
    clock.now += PAUSE_MS;
    expect((await reconcile(ctx)).pushes.caldav).toBeGreaterThanOrEqual(1);
    await until(
      () => ctx.caldav.targets.get(target.id),
      (stored) => stored?.status === 'active',
      10_000,
    );
    expect(await ctx.caldav.targets.get(target.id)).toMatchObject({ lastPush: { reason: 'reconcile' } });
    expect(heldIds(target)).toEqual(await expectedIds(target.source));
  });

  it('a 503 with Retry-After cools the host down and delays the job, without using an attempt', async () => {
    const target = await connected(4);
    const error = new CalDavRateLimitError('PUT: 503 Service Unavailable', {
      status: 503,
      host: target.host,
      retryAfterMs: 1_000,
    });
    target.server.faults.push({ method: 'create', at: 3, when: 'before', error });
    const started = performance.now();
    const jobId = await enqueuePush(ctx.queues, 'caldav', target.id, target.source, 'connect');
    await until(
      () => ctx.queues.pushQueue('caldav').getJobState(jobId),
      (state) => state === 'delayed',
      10_000,
    );
    // Every worker's requests to the host wait meanwhile, whichever target they push.
    expect(await ctx.caldav.budget.coolDownLeft(target.host)).toBeGreaterThan(500);
    const ended = await jobEnded(ctx.queues.pushQueue('caldav'), jobId, 20_000);
    const job = {
      state: ended.state,
      attemptsMade: ended.job.attemptsMade,
      attemptsStarted: ended.job.attemptsStarted,
    };
    expect(job.state).toBe('completed');
    // Delayed for the Retry-After, then run again: one attempt counted (the one that completed).
    expect(performance.now() - started).toBeGreaterThan(900);
    expect(job.attemptsStarted).toBe(2);
    expect(job.attemptsMade).toBe(1);
    expect(heldIds(target)).toEqual(await expectedIds(target.source));
    // Nothing was written twice: the second run found the first two creates in its index.
    expect(target.server.writes('create')).toBe((await expectedIds(target.source)).length);
    expect(await ctx.caldav.targets.get(target.id)).toMatchObject({ status: 'active' });
  });

  it('a transient failure is retried with backoff and ends exact', async () => {
    const target = await connected(5);
    const error = new CalDavTransientError('PUT: socket hang up', { host: target.host });
    target.server.faults.push({ method: 'create', at: 2, when: 'after', error });
    const job = await push(target);
    // The failed attempt, then the one that completed.
    expect(job).toMatchObject({ state: 'completed', attemptsMade: 2 });
    expect(heldIds(target)).toEqual(await expectedIds(target.source));
  }, 30_000);

  it('a deleted calendar stops the target', async () => {
    const target = await connected(6);
    await target.server.deleteCalendar(target.calendarUrl);
    const job = await push(target);
    expect(job).toMatchObject({ state: 'failed', attemptsMade: 1 });
    expect(await ctx.caldav.targets.get(target.id)).toMatchObject({ status: 'calendar-deleted' });
    expect(await ctx.redis.zscore(ctx.keys.caldavTargetsDue, target.id)).toBeNull();
  });

  it('a source with CalDAV targets stays active however long nobody reads its feed', async () => {
    const target = await connected(7);
    await ctx.registry.activate(target.source, clock.now);
    clock.now += ctx.config.inactiveAfterMs + 3_600_000;
    await reconcile(ctx);
    expect(await ctx.registry.isActive(target.source)).toBe(true);
    await ctx.caldav.targets.remove(target.id);
    await reconcile(ctx);
    expect(await ctx.registry.isActive(target.source)).toBe(false);
  });
});
