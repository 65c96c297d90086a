/** The push job through real workers and Redis, with an in-memory calendar behind `ctx.google`. */

import { ReplyError } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it, vi } from 'vitest';
import { feedOccurrences } from '../../src/feeds/build-feed.ts';
import type { CalendarClientFactory } from '../../src/google/calendar-client.ts';
import {
  EventRefusedError,
  GoogleConsentError,
  GoogleQuotaError,
  GoogleRateLimitError,
  GoogleTransientError,
} from '../../src/google/errors.ts';
import { googleDetailFields } from '../../src/google/google-targets.ts';
import type { PushJobResult, PushReason } from '../../src/jobs/contract.ts';
import { enqueuePush, enqueueRefresh } from '../../src/jobs/queues.ts';
import { reconcile } from '../../src/jobs/schedule.ts';
import { startWorkers, type WorkerSet } from '../../src/jobs/workers.ts';
import { eventIdFor } from '../../src/push/event-id.ts';
import { parseRefused } from '../../src/push/push-diff.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { startSimulator } from '../../src/simulator/index.ts';
import { eventually, until } from '../../testkit/poll.ts';
import { MemoryCalendar } from '../google/memory-calendar.ts';
import { jobEnded } from '../support/jobs.ts';
import { testContext } from '../support/service.ts';
import { simControl } from '../upstream/sim-control.ts';
import { REFERENCE_DATE, waitForJob } from './helpers.ts';

const CAL = 'c1@group.calendar.google.com';
const QUOTA_PAUSE_MS = 3_600_000;
const RECONCILE_MS = 7_200_000;

let ctx: ServiceContext;
let workers: WorkerSet;
let closeAll: () => Promise<void>;
let groupIds: number[];
const clock = { now: REFERENCE_DATE.getTime() };
/** One in-memory Google account per refresh token. */
const accounts = new Map<string, MemoryCalendar>();
/** Calls of the budget hook `ctx.google` hands the factory, per account. */
const budgetCalls = new Map<MemoryCalendar, number>();
/** Run before an account's next request (a test's way to act while a push is under way). */
const beforeNext = new Map<MemoryCalendar, () => Promise<void>>();
/**
 * Counts the calls of the request budget's hook instead of awaiting it: a first push of a few hundred
 * events at the default 500 requests/min would take most of a minute (the budget has its own tests).
 */
const factory: CalendarClientFactory = (refreshToken, beforeRequest) => {
  const account = accounts.get(refreshToken);
  if (!account) throw new Error('unknown refresh token');
  expect(beforeRequest).toBeTypeOf('function');
  account.beforeRequest = async () => {
    budgetCalls.set(account, (budgetCalls.get(account) ?? 0) + 1);
    const hook = beforeNext.get(account);
    beforeNext.delete(account);
    await hook?.();
  };
  return account;
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
  const env = { UNIVERSITY_API_URL: simulator.url, GOOGLE_QUOTA_PAUSE: '1h', GOOGLE_RECONCILE_INTERVAL: '2h' };
  const opened = await testContext(env, { now: () => clock.now, googleFactory: factory });
  ctx = opened.context;
  workers = await startWorkers(ctx, inject('redisUrl'), {
    lockDurationMs: 5_000,
    stalledIntervalMs: 1_000,
    pushRateLimitBaseMs: 50,
  });
  // The tests run the scheduler's reconcile themselves: one in the background (every minute, or after a source
  // is activated) would queue reconciling pushes for new targets and race the pushes a test queues.
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

let counter = 0;
beforeEach(() => {
  counter += 1;
});

/**
 * A published group with a target pushing it into a fresh in-memory calendar. With `placeholder`, the calendar
 * is ours and still carries the name it was created with (`Группа <id>`), so a push renames it.
 */
async function connected(
  groupIndex: number,
  placeholder = false,
): Promise<{ id: string; source: string; calendar: MemoryCalendar }> {
  const source = `group:${groupIds[groupIndex]}`;
  const refresh = await waitForJob(
    ctx,
    await enqueueRefresh(ctx.queues, ctx.config, source, { reason: 'resync', now: clock.now }),
  );
  expect(refresh.state).toBe('completed');
  const refreshToken = `refresh-token-${counter}-${accounts.size}`;
  const calendar = new MemoryCalendar([CAL]);
  const calendarName = placeholder ? `Группа ${groupIds[groupIndex]}` : source;
  if (placeholder) {
    await calendar.renameCalendar(CAL, calendarName);
    calendar.calls.clear();
  }
  accounts.set(refreshToken, calendar);
  const { id } = await ctx.google.targets.create({
    source,
    secret: refreshToken,
    calendarId: CAL,
    calendarOwned: true,
    calendarName,
    details: googleDetailFields({ budgetKey: `token:${counter}` }),
    now: clock.now,
  });
  return { id, source, calendar };
}

/** Queues a push and waits until it completed or failed for good. */
async function push(
  id: string,
  source: string,
  reason: PushReason = 'connect',
): Promise<{
  state: string;
  result: PushJobResult;
  attemptsMade: number;
  attemptsStarted: number;
  failedReason: string | undefined;
}> {
  const { job, state } = await jobEnded(
    ctx.queues.pushQueue('google'),
    await enqueuePush(ctx.queues, 'google', id, source, reason),
    15_000,
  );
  return {
    state,
    result: job.returnvalue,
    attemptsMade: job.attemptsMade,
    attemptsStarted: job.attemptsStarted,
    failedReason: job.failedReason,
  };
}

/** What the calendar should hold: the feed's confirmed occurrences. */
async function expectedIds(source: string): Promise<string[]> {
  const { snapshot, published } = await ctx.snapshots.load(source);
  if (!snapshot || !published) throw new Error('not published');
  return feedOccurrences(snapshot, published, ctx.config)
    .filter((occurrence) => occurrence.status === 'CONFIRMED')
    .map((occurrence) => eventIdFor(occurrence.uid))
    .sort();
}

const dueAt = async (id: string) => Number(await ctx.redis.zscore(ctx.keys.googleTargetsDue, id));

describe('push job', () => {
  it('the first push writes every confirmed class, records the push and moves the next reconcile an interval away', async () => {
    const { id, source, calendar } = await connected(0);
    const job = await push(id, source);
    expect(job.state).toBe('completed');
    const expected = await expectedIds(source);
    expect(expected.length).toBeGreaterThan(0);
    expect(job.result).toMatchObject({
      reconciled: true,
      desired: expected.length,
      inserted: expected.length,
      writes: expected.length,
      reads: 1,
    });
    expect(
      calendar
        .events(CAL)
        .map((event) => event.id)
        .sort(),
    ).toEqual(expected);
    expect(await ctx.google.targets.index(id).size()).toBe(expected.length);
    const target = await ctx.google.targets.get(id);
    expect(target).toMatchObject({
      status: 'active',
      reconcileRequested: false,
      lastPush: { reason: 'connect', inserted: expected.length },
    });
    expect(await dueAt(id)).toBe(clock.now + RECONCILE_MS);
    expect(budgetCalls.get(calendar)).toBe(calendar.total());
    // A refresh-driven push of the unchanged timetable writes and reads nothing.
    calendar.calls.clear();
    expect((await push(id, source, 'refresh')).result).toMatchObject({
      reconciled: false,
      writes: 0,
      reads: 0,
      unchanged: expected.length,
    });
    expect(calendar.total()).toBe(0);
  });

  it("a refresh fans out to the source's targets", async () => {
    const { id, source, calendar } = await connected(1);
    await ctx.redis.sadd(ctx.keys.pushOwed, source);
    await waitForJob(ctx, await enqueueRefresh(ctx.queues, ctx.config, source, { reason: 'resync', now: clock.now }));
    await until(
      () => ctx.google.targets.get(id),
      (target) => target?.lastPush !== undefined,
      10_000,
    );
    expect(
      calendar
        .events(CAL)
        .map((event) => event.id)
        .sort(),
    ).toEqual(await expectedIds(source));
  });

  it('a rate limit pauses the push queue and retries the job without using an attempt', async () => {
    const { id, source, calendar } = await connected(2);
    calendar.fail(
      'insertEvent',
      new GoogleRateLimitError('events.insert: Rate Limit Exceeded', { status: 403, reason: 'rateLimitExceeded' }),
      3,
    );
    const job = await push(id, source);
    expect(job.state).toBe('completed');
    expect(job.attemptsMade).toBe(1);
    expect(job.attemptsStarted).toBe(2);
    expect(
      calendar
        .events(CAL)
        .map((event) => event.id)
        .sort(),
    ).toEqual(await expectedIds(source));
  });

  it('quota exceeded pauses the target, and pushes are skipped until the pause ends', async () => {
    const { id, source, calendar } = await connected(3);
    calendar.fail(
      'insertEvent',
      new GoogleQuotaError('events.insert: Calendar usage limits exceeded.', { status: 403, reason: 'quotaExceeded' }),
      2,
    );
    const job = await push(id, source);
    expect(job.state).toBe('failed');
    expect(job.attemptsMade).toBe(1);
    const target = await ctx.google.targets.get(id);
    expect(target).toMatchObject({ status: 'paused', pausedUntil: clock.now + QUOTA_PAUSE_MS });
    expect(await dueAt(id)).toBe(clock.now + QUOTA_PAUSE_MS);
    expect((await push(id, source, 'refresh')).result).toMatchObject({
      skipped: expect.stringContaining('paused until'),
    });
    // When the pause is over, the scheduler's due scan queues a reconciling push that finishes the job.
    clock.now += QUOTA_PAUSE_MS;
    expect((await reconcile(ctx)).pushes.google).toBeGreaterThanOrEqual(1);
    await until(
      () => ctx.google.targets.get(id),
      (target) => target?.status === 'active',
      10_000,
    );
    expect(await ctx.google.targets.get(id)).toMatchObject({ status: 'active', lastPush: { reason: 'reconcile' } });
    expect(
      calendar
        .events(CAL)
        .map((event) => event.id)
        .sort(),
    ).toEqual(await expectedIds(source));
  });

  it('a refused grant marks the target as needing consent', async () => {
    const { id, source, calendar } = await connected(4);
    calendar.fail('listPage', new GoogleConsentError('token: invalid_grant', { status: 400, reason: 'invalid_grant' }));
    const job = await push(id, source);
    expect(job).toMatchObject({ state: 'failed', attemptsMade: 1 });
    expect(await ctx.google.targets.get(id)).toMatchObject({ status: 'needs-consent' });
    expect(await ctx.redis.zscore(ctx.keys.googleTargetsDue, id)).toBeNull();
    expect((await push(id, source, 'refresh')).result).toEqual({ skipped: 'target needs a new consent' });
  });

  it('a refusal of a token that was replaced meanwhile leaves the target active', async () => {
    const { id, source, calendar } = await connected(8);
    calendar.fail('listPage', new GoogleConsentError('token: invalid_grant', { status: 400, reason: 'invalid_grant' }));
    beforeNext.set(calendar, async () => {
      await ctx.google.targets.replaceCredential(id, 'a-newer-refresh-token', clock.now);
    });
    expect(await push(id, source)).toMatchObject({ state: 'failed', attemptsMade: 1 });
    expect(await ctx.google.targets.get(id)).toMatchObject({ status: 'active', credentialVersion: 2 });
  });

  it('a push that outlived a reconnect to a new calendar cannot mark the reconnected target, nor record on it', async () => {
    const { id, source, calendar } = await connected(10);
    expect((await push(id, source)).state).toBe('completed');
    const fresh = 'c2@group.calendar.google.com';
    // While the next push waits for its first request, the owner deletes the calendar and consents again: the
    // reconnect points the target at a new calendar and stores a new token (what a reconnect in subscriptions/google-connect.ts does).
    beforeNext.set(calendar, async () => {
      calendar.calendars.delete(CAL);
      calendar.calendars.set(fresh, { info: { id: fresh, summary: 'new' }, events: new Map() });
      accounts.set(`reconnected-${id}`, calendar);
      expect(
        await ctx.google.targets.replaceCalendar(
          id,
          { calendarId: fresh, calendarOwned: true, calendarName: 'new' },
          clock.now,
        ),
      ).toBe(true);
      expect(await ctx.google.targets.replaceCredential(id, `reconnected-${id}`, clock.now)).toBe(true);
    });
    // One lost index entry gives the stale push a write to make, against the deleted calendar.
    const [lost] = Object.keys(await ctx.redis.hgetall(ctx.keys.googleIndex(id)));
    await ctx.redis.hdel(ctx.keys.googleIndex(id), lost ?? '');
    expect((await push(id, source, 'refresh')).state).toBe('failed');
    expect(await ctx.google.targets.get(id)).toMatchObject({
      status: 'active',
      calendarId: fresh,
      credentialVersion: 2,
    });
    expect((await ctx.google.targets.get(id))?.lastError).toBeUndefined();
    expect(await ctx.redis.zscore(ctx.keys.googleTargetsDue, id)).not.toBeNull();
    // The reconnected target's own push fills the new calendar.
    expect((await push(id, source, 'connect')).state).toBe('completed');
    expect(
      calendar
        .events(fresh)
        .map((event) => event.id)
        .sort(),
    ).toEqual(await expectedIds(source));
  });

  it("a push that finds the quota pause not over (its clock lags the scheduler's) puts the reconcile back at the pause's end", async () => {
    const { id, source } = await connected(11);
    expect((await push(id, source)).state).toBe('completed');
    const until = clock.now + QUOTA_PAUSE_MS;
    await ctx.google.targets.markStatus(id, 'paused', 'quota', clock.now, { pausedUntil: until });
    // The scheduler's host sees the pause over and moves the next reconcile an interval ahead as it queues the push...
    const start = clock.now;
    clock.now = until;
    await ctx.google.targets.scheduleReconcile(id, until + RECONCILE_MS);
    // ...which runs on a worker one second behind.
    clock.now = until - 1_000;
    expect((await push(id, source, 'reconcile')).result).toMatchObject({
      skipped: expect.stringContaining('paused until'),
    });
    expect(await dueAt(id)).toBe(until);
    clock.now = start;
  });

  it('a stored token that cannot be decrypted marks the target as needing consent, without a request', async () => {
    const { id, source, calendar } = await connected(9);
    // A value sealed for another record opens like one sealed under another SECRET_KEY: not at all.
    const other = await connected(9);
    const foreign = await ctx.redis.hget(ctx.keys.googleTarget(other.id), 'refreshToken');
    await ctx.redis.hset(ctx.keys.googleTarget(id), 'refreshToken', foreign ?? '');
    expect(await push(id, source)).toMatchObject({ state: 'failed', attemptsMade: 1 });
    expect(await ctx.google.targets.get(id)).toMatchObject({
      status: 'needs-consent',
      statusReason: 'stored token unreadable: SECRET_KEY changed?',
    });
    expect(calendar.total()).toBe(0);
  });

  it('a deleted calendar marks the target calendar-deleted', async () => {
    const { id, source, calendar } = await connected(5);
    calendar.calendars.delete(CAL);
    const job = await push(id, source);
    expect(job).toMatchObject({ state: 'failed', attemptsMade: 1 });
    expect(await ctx.google.targets.get(id)).toMatchObject({ status: 'calendar-deleted' });
    expect((await push(id, source, 'refresh')).result).toEqual({ skipped: 'calendar was deleted' });
  });

  it('a push that fails for good records why and asks the scheduler to come back in 15 minutes', async () => {
    const { id, source, calendar } = await connected(8);
    // Every write refused: the calendar itself refuses us, which stops the push (one refused event would not).
    for (let n = 1; n <= 200; n += 1)
      calendar.fail(
        'insertEvent',
        new EventRefusedError('events.insert: HTTP 400 invalid: Invalid resource id value.', {
          status: 400,
          reason: 'invalid',
        }),
        n,
      );
    const job = await push(id, source);
    expect(job).toMatchObject({ state: 'failed', attemptsMade: 1 });
    expect(await ctx.google.targets.get(id)).toMatchObject({
      status: 'active',
      reconcileRequested: true,
      lastError: expect.stringContaining('Invalid resource id value'),
    });
    expect(await dueAt(id)).toBe(clock.now + 15 * 60_000);
  });

  it("a push stopped by refusals of every write shows admins Google's reasons with the error; the next push keeps them while events stay refused", async () => {
    const { id, source, calendar } = await connected(2);
    const expected = await expectedIds(source);
    const reason = (eventId: string) => `events.insert: HTTP 400 invalid: Invalid value for ${eventId}`;
    for (const eventId of expected)
      calendar.refusing.set(eventId, new EventRefusedError(reason(eventId), { status: 400, reason: 'invalid' }));
    expect(await push(id, source)).toMatchObject({ state: 'failed', attemptsMade: 1 });
    const failed = await ctx.google.targets.get(id);
    expect(failed).toMatchObject({ status: 'active', lastError: expect.stringContaining('Invalid value for') });
    expect(failed?.lastRefusals).toHaveLength(3);
    for (const example of failed?.lastRefusals ?? [])
      expect(example).toEqual({
        eventId: expect.toSatisfy((eventId: string) => expected.includes(eventId)),
        message: reason(example.eventId),
      });
    // Google takes the others now: the retry writes them, leaves the refused ones waiting, and keeps the reasons.
    calendar.refusing.clear();
    const refused = [...(await ctx.google.targets.index(id).read()).values()].filter(
      (value) => parseRefused(value) !== undefined,
    ).length;
    expect(refused).toBeGreaterThanOrEqual(5);
    expect(await push(id, source, 'refresh')).toMatchObject({
      state: 'completed',
      result: { reconciled: true, refused, inserted: expected.length - refused },
    });
    const completed = await ctx.google.targets.get(id);
    expect(completed?.lastError).toBeUndefined();
    expect(completed?.lastRefusals).toEqual(failed?.lastRefusals);
  });

  it('events Google refuses do not fail the push: the others are written, and the admin sees how many were refused and why', async () => {
    const { id, source, calendar } = await connected(10);
    const expected = await expectedIds(source);
    const refused = expected.slice(2, 5);
    for (const eventId of refused)
      calendar.refusing.set(
        eventId,
        new EventRefusedError('events.insert: HTTP 400 invalid: Invalid value', { status: 400, reason: 'invalid' }),
      );
    const job = await push(id, source);
    expect(job).toMatchObject({
      state: 'completed',
      attemptsMade: 1,
      result: { inserted: expected.length - 3, refused: 3 },
    });
    expect(job.result).not.toHaveProperty('refusals');
    expect(
      calendar
        .events(CAL)
        .map((event) => event.id)
        .sort(),
    ).toEqual(expected.filter((eventId) => !refused.includes(eventId)));
    const target = await ctx.google.targets.get(id);
    expect(target).toMatchObject({
      status: 'active',
      reconcileRequested: false,
      lastPush: { refused: 3, inserted: expected.length - 3 },
    });
    expect(target?.lastPush).not.toHaveProperty('refusals');
    expect(target?.lastError).toBeUndefined();
    expect(target?.lastRefusals).toHaveLength(3);
    for (const example of target?.lastRefusals ?? [])
      expect(example).toEqual({
        eventId: expect.toSatisfy((eventId: string) => refused.includes(eventId)),
        message: 'events.insert: HTTP 400 invalid: Invalid value',
      });
    // Not asked about again by the next push; the reasons stay while the events stay refused.
    calendar.calls.clear();
    expect((await push(id, source, 'refresh')).result).toMatchObject({ writes: 0, refused: 3 });
    expect((await ctx.google.targets.get(id))?.lastRefusals).toHaveLength(3);
    // Once Google takes them (a day later), the reasons go.
    calendar.refusing.clear();
    clock.now += 24 * 60 * 60_000;
    expect((await push(id, source, 'refresh')).result).toMatchObject({ inserted: 3, refused: 0 });
    expect((await ctx.google.targets.get(id))?.lastRefusals).toBeUndefined();
    clock.now -= 24 * 60 * 60_000;
  });

  it('a removed target or a job for another source does nothing', async () => {
    const { id, source, calendar } = await connected(6);
    expect((await push(id, 'group:1')).result).toEqual({ skipped: 'target belongs to another source' });
    await ctx.google.targets.remove(id);
    expect((await push(id, source)).result).toEqual({ skipped: 'target removed' });
    expect(calendar.total()).toBe(0);
  });
});

describe('renaming a placeholder calendar after the push', () => {
  const summaryOf = async (calendar: MemoryCalendar) => (await calendar.getCalendar(CAL)).summary;

  it("Google failing the rename is logged and left to the next push: the events' push completes", async () => {
    const { id, source, calendar } = await connected(9, true);
    const placeholder = await summaryOf(calendar);
    calendar.calls.clear();
    calendar.fail(
      'renameCalendar',
      new GoogleTransientError('calendars.patch: HTTP 503 backendError', { status: 503 }),
    );
    const job = await push(id, source);
    expect(job).toMatchObject({ state: 'completed', attemptsMade: 1 });
    expect(calendar.count('renameCalendar')).toBe(1);
    expect(
      calendar
        .events(CAL)
        .map((event) => event.id)
        .sort(),
    ).toEqual(await expectedIds(source));
    expect(await ctx.google.targets.get(id)).toMatchObject({ calendarName: placeholder });
    // The next push (a refresh's, with nothing else to write) renames it.
    await push(id, source, 'refresh');
    const named = await ctx.google.targets.get(id);
    expect(named?.calendarName).not.toBe(placeholder);
    expect(await summaryOf(calendar)).toBe(named?.calendarName);
  });

  it.each([
    ['a bug', () => new TypeError("Cannot read properties of undefined (reading 'summary')")],
    ['Redis refusing the write', () => new ReplyError('OOM command not allowed when used memory > maxmemory')],
  ])('%s while renaming fails the push like any other step, and the retry renames', async (_what, failure) => {
    const { id, source, calendar } = await connected(10, true);
    const placeholder = await summaryOf(calendar);
    const record = vi.spyOn(ctx.google.targets, 'recordCalendarName');
    record.mockRejectedValueOnce(failure());
    try {
      const jobId = await enqueuePush(ctx.queues, 'google', id, source, 'connect');
      const job = await eventually(async () => {
        const read = await ctx.queues.pushQueue('google').getJob(jobId);
        return read !== undefined && read.attemptsMade >= 1 ? read : undefined;
      }, 'the first attempt to fail');
      expect(job.failedReason).toBe(failure().message);
      const failed = await ctx.google.targets.get(id);
      expect(failed?.calendarName).toBe(placeholder);
      expect(failed?.lastPush).toBeUndefined();
      // Retried like any push failure (after the backoff; promoted here so the test need not wait for it).
      await job.promote();
      const { state } = await jobEnded(ctx.queues.pushQueue('google'), jobId);
      expect(state).toBe('completed');
    } finally {
      record.mockRestore();
    }
    const named = await ctx.google.targets.get(id);
    expect(named?.calendarName).not.toBe(placeholder);
    expect(await summaryOf(calendar)).toBe(named?.calendarName);
  });
});

describe('the scheduler', () => {
  it('queues one reconciling push per due target and moves its next reconcile an interval away', async () => {
    const { id, calendar } = await connected(7);
    const result = await reconcile(ctx);
    expect(result.pushes.google).toBeGreaterThanOrEqual(1);
    expect(await dueAt(id)).toBe(clock.now + RECONCILE_MS);
    await until(
      () => ctx.google.targets.get(id),
      (target) => target?.lastPush !== undefined,
      10_000,
    );
    expect(await ctx.google.targets.get(id)).toMatchObject({ lastPush: { reason: 'reconcile' } });
    expect(calendar.count('listPage')).toBe(1);
    // Not due again until the interval has passed.
    expect((await ctx.google.targets.due(clock.now, 500)).includes(id)).toBe(false);
  });
});
