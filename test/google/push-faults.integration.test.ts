/**
 * Google push end to end when things go wrong: a worker killed mid-push, rate limits, a revoked grant, a
 * calendar deleted by its owner, exhausted quota. Real workers (in this process, or child processes), real
 * Redis, the real adapter against the fake Google server.
 */
import type { ChildProcess } from 'node:child_process';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { pushJobOptions } from '../../src/jobs/queues.ts';
import { reconcile } from '../../src/jobs/schedule.ts';
import { parseRefused } from '../../src/push/push-diff.ts';
import { REFUSAL_RETRY_MS } from '../../src/push/refusal-tally.ts';
import { connectGoogleTarget } from '../../src/subscriptions/google-connect.ts';
import { waitUntil } from '../../testkit/poll.ts';
import { startWorkerProcess, type WorkerProcess } from '../support/spawn-worker.ts';
import { calls, googleEnv, PushHarness, QUOTA_PAUSE_MS } from './push-harness.ts';

let h: PushHarness;
const children: ChildProcess[] = [];

beforeAll(async () => {
  h = await PushHarness.start();
});
afterAll(async () => {
  await h?.close();
});
beforeEach(() => {
  h.fake.clearFaults();
  h.fake.resetCounts();
});
afterEach(async () => {
  for (const child of children.splice(0))
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await h.startWorkers();
});

/** A worker process (test/support/worker-process.ts) on the harness's Redis prefix and fake Google. */
function startWorker(): Promise<WorkerProcess> {
  return startWorkerProcess(
    { REDIS_PREFIX: h.ctx.config.redisPrefix, UNIVERSITY_API_URL: h.simUrl, ...googleEnv(h.fake) },
    (child) => children.push(child),
  );
}

describe('Google push under faults', () => {
  it('a worker killed mid-push: the next worker finishes the job, no event duplicated, none missing', async () => {
    const source = await h.smallGroup(3);
    await h.refresh(source);
    await h.stopWorkers();
    const first = await startWorker();
    // About 200 ms per request, 4 in flight: the first push of a few dozen events takes a few seconds.
    h.fake.latency(200);
    const { refreshToken } = h.fake.addUser();
    const { id, calendarId } = await connectGoogleTarget(h.ctx, { source, refreshToken });
    await waitUntil(() => calls(h.fake, 'events.insert') >= 8, 'some inserts');
    const [job] = (await h.ctx.queues.pushQueue('google').getJobs(['active'])).filter(
      (candidate) => candidate.data.target === id,
    );
    expect(job?.processedBy).toBe(first.id);
    first.child.kill('SIGKILL');
    await new Promise((done) => first.child.once('exit', done));
    const insertedBeforeKill = calls(h.fake, 'events.insert');
    // The requests the killed worker had in flight may still arrive (Google would carry them out too): the
    // totals below hold however many do, so nothing waits for them.
    h.fake.latency(0);

    const second = await startWorker();
    const [push] = await h.settled(id, 1, 30_000);
    const desired = await h.desired(source);
    expect(push).toMatchObject({ id: job?.id, state: 'completed', processedBy: second.id, attemptsMade: 1 });
    expect(insertedBeforeKill).toBeLessThan(desired.length);
    expect(h.calendar(calendarId)).toEqual(desired);
    expect([...(await h.ctx.google.targets.index(id).read()).keys()].sort()).toEqual(desired.map((event) => event.id));
    const counts = h.fake.counts();
    // Every event inserted once: the second run found the first run's events by listing (it reconciles).
    expect(counts.byMethod).toEqual({ 'calendars.insert': 1, 'events.list': 2, 'events.insert': desired.length });
    expect(counts.errors).toEqual({});
    // What the second run did not insert, it found already there: the first run's events, none twice.
    const result = push?.result as { inserted: number; unchanged: number };
    expect(result.inserted + result.unchanged).toBe(desired.length);
    expect(result.unchanged).toBeGreaterThanOrEqual(insertedBeforeKill);
  });

  it('30% rate-limit answers (429, 403 rateLimitExceeded, 403 userRateLimitExceeded): all written, no attempt used', async () => {
    const source = await h.smallGroup(1);
    await h.refresh(source);
    const events = ['events.insert', 'events.list', 'events.get', 'events.patch', 'events.update', 'events.delete'];
    // Tried in order, each 10% of all requests: 0.1, 0.1 of the remaining 0.9, 0.1 of the remaining 0.8.
    h.fake.inject({ kind: '429', probability: 0.1, methods: events });
    h.fake.inject({ kind: '403-rate', probability: 1 / 9, methods: events });
    h.fake.inject({ kind: '403-user-rate', probability: 1 / 8, methods: events });
    const { target, push } = await h.connect(source);
    const desired = await h.desired(source);
    expect(push).toMatchObject({ state: 'completed', attemptsMade: 1 });
    expect(push.attemptsStarted).toBeGreaterThan(1);
    expect(h.calendar(target.calendarId)).toEqual(desired);
    const counts = h.fake.counts();
    expect(counts.errors).toEqual({
      '429 rateLimitExceeded': expect.any(Number),
      '403 rateLimitExceeded': expect.any(Number),
      '403 userRateLimitExceeded': expect.any(Number),
    });
    expect(counts.faulted).toBe(Object.values(counts.errors).reduce((sum, n) => sum + n, 0));
    // Each event was written once; refused requests were simply sent again in a later round.
    expect(counts.byMethod['events.insert']).toBe(desired.length);
  });

  it('a revoked grant: needs-consent at once, one token request and no retry, shown to the admin', async () => {
    const source = await h.smallGroup(1);
    const { target } = await h.connect(source);
    h.fake.revoke(target.refreshToken);
    h.fake.resetCounts();
    const push = await h.push(target, 'reconcile');
    // Failed for good after one attempt of eight: an UnrecoverableError (a retry would be 'delayed' or 'wait').
    expect(push).toMatchObject({
      state: 'failed',
      attemptsMade: 1,
      attemptsStarted: 1,
      failedReason: expect.stringContaining('invalid_grant'),
    });
    expect(pushJobOptions().attempts).toBeGreaterThan(1);
    expect(h.fake.counts()).toMatchObject({ total: 0, tokenRequests: 1, tokenErrors: { '400 invalid_grant': 1 } });
    const view = await h.adminView(target.id);
    expect(view).toMatchObject({
      status: 200,
      body: { status: 'needs-consent', statusReason: expect.stringContaining('invalid_grant'), pendingPush: null },
    });
    expect(JSON.stringify(view.body)).not.toContain(target.refreshToken);
    // Later pushes do not ask Google at all.
    expect((await h.push(target, 'refresh')).result).toEqual({ skipped: 'target needs a new consent' });
    expect(h.fake.counts().tokenRequests).toBe(1);
  });

  it('a calendar deleted by its owner: the next change marks the target calendar-deleted, shown to the admin', async () => {
    const source = await h.smallGroup(1);
    const { target } = await h.connect(source);
    h.fake.ownerDeleteCalendar(target.calendarId);
    h.fake.resetCounts();
    await h.addOneDayClass(source);
    await h.refresh(source);
    const push = (await h.settled(target.id, 2)).at(-1);
    expect(push).toMatchObject({ state: 'failed', attemptsMade: 1 });
    // The one insert of the new class found the calendar gone; nothing else was tried.
    expect(h.fake.counts()).toMatchObject({
      total: 1,
      errors: { '404 notFound': 1 },
      byMethod: { 'events.insert': 1 },
    });
    expect(await h.adminView(target.id)).toMatchObject({
      status: 200,
      body: { status: 'calendar-deleted', statusReason: expect.stringContaining('deleted') },
    });
    h.fake.resetCounts();
    expect((await h.push(target, 'reconcile')).result).toEqual({ skipped: 'calendar was deleted' });
    expect(h.fake.counts()).toMatchObject({ total: 0, tokenRequests: 0 });
  });

  it('a class Google deletes last on a calendar its owner deleted: the 404 is checked, and the target marked calendar-deleted', async () => {
    const source = await h.smallGroup(1);
    const { target } = await h.connect(source);
    const { entryId } = await h.addOneDayClass(source);
    await h.refresh(source);
    await h.settled(target.id, 2);
    // Cancelled, the class is retitled in Google; it is deleted once its time in the feed is over.
    await h.sim.deleteEntry(entryId);
    await h.refresh(source);
    await h.settled(target.id, 3);
    h.fake.ownerDeleteCalendar(target.calendarId);
    h.fake.resetCounts();
    const later = h.ctx.config.cancelledRetentionMs + 60_000;
    h.clock.now += later;
    let push: Awaited<ReturnType<typeof h.settled>>[number] | undefined;
    try {
      await h.refresh(source);
      push = (await h.settled(target.id, 4)).at(-1);
    } finally {
      h.clock.now -= later;
    }
    expect(push).toMatchObject({ state: 'failed', attemptsMade: 1 });
    // The delete answered 404 like a never-used id; one calendars.get told the two apart.
    expect(h.fake.counts()).toMatchObject({
      total: 2,
      errors: { '404 notFound': 2 },
      byMethod: { 'events.delete': 1, 'calendars.get': 1 },
    });
    expect(await h.ctx.google.targets.get(target.id)).toMatchObject({ status: 'calendar-deleted' });
  });

  it('events Google refuses for good: the push completes with the others written, the admin sees how many, and they wait a day', async () => {
    const source = await h.smallGroup(2);
    await h.refresh(source);
    const desired = await h.desired(source);
    const refused = [desired[1]?.id ?? '', desired[3]?.id ?? ''];
    h.fake.inject({ kind: '400', methods: ['events.insert'], eventIds: refused });
    const { target, push } = await h.connect(source);
    expect(push).toMatchObject({
      state: 'completed',
      attemptsMade: 1,
      result: { reconciled: true, inserted: desired.length - 2, refused: 2 },
    });
    expect(h.calendar(target.calendarId)).toEqual(desired.filter((event) => !refused.includes(event.id)));
    expect(h.fake.counts().errors).toEqual({ '400 invalid': 2 });
    const pendingChanges = { insert: 0, patch: 0, delete: 0, refused: 2 };
    expect(await h.adminView(target.id)).toMatchObject({
      status: 200,
      body: { status: 'active', lastPush: { refused: 2 }, pendingChanges },
    });
    const index = await h.ctx.google.targets.index(target.id).read();
    expect(refused.map((id) => parseRefused(index.get(id) ?? ''))).toEqual([
      expect.objectContaining({ retryAt: h.clock.now + REFUSAL_RETRY_MS }),
      expect.objectContaining({ retryAt: h.clock.now + REFUSAL_RETRY_MS }),
    ]);
    // Neither a push nor a reconcile asks again the same day.
    h.fake.resetCounts();
    expect((await h.push(target, 'refresh')).result).toMatchObject({ writes: 0, refused: 2 });
    expect((await h.push(target, 'reconcile')).result).toMatchObject({ writes: 0, reads: 1, refused: 2 });
    expect(h.fake.counts().byMethod).toEqual({ 'events.list': 1 });
    // A day later they are tried again, and this time Google takes them.
    h.fake.clearFaults();
    h.clock.now += REFUSAL_RETRY_MS;
    try {
      expect((await h.push(target, 'refresh')).result).toMatchObject({ inserted: 2, refused: 0, writes: 2 });
      expect(h.calendar(target.calendarId)).toEqual(desired);
    } finally {
      h.clock.now -= REFUSAL_RETRY_MS;
    }
  });

  it('writer access lost (403 requiredAccessLevel on every write): even a one-write push fails, shown to the admin, and nothing is marked refused', async () => {
    const source = await h.smallGroup(1);
    const { target } = await h.connect(source);
    h.fake.inject({
      kind: '403-required-access',
      methods: ['events.insert', 'events.patch', 'events.update', 'events.delete'],
    });
    h.fake.resetCounts();
    // One new class: a push of a single write, which refusals of events could never stop.
    await h.addOneDayClass(source);
    await h.refresh(source);
    const push = (await h.settled(target.id, 2)).at(-1);
    expect(push).toMatchObject({
      state: 'failed',
      attemptsMade: 1,
      failedReason: expect.stringContaining('requiredAccessLevel'),
    });
    expect(h.fake.counts()).toMatchObject({ faulted: 1, errors: { '403 requiredAccessLevel': 1 } });
    expect(await h.adminView(target.id)).toMatchObject({
      status: 200,
      body: { status: 'active', lastError: expect.stringContaining('requiredAccessLevel'), lastRefusals: [] },
    });
    const index = await h.ctx.google.targets.index(target.id).read();
    expect([...index.values()].filter((value) => parseRefused(value) !== undefined)).toEqual([]);
  });

  it('403 quotaExceeded pauses the target until a time shown to the admin; pushes before it are skipped', async () => {
    const source = await h.smallGroup(2);
    h.fake.inject({ kind: '403-quota', times: 1, methods: ['events.insert'] });
    const { target, push } = await h.connect(source);
    expect(push).toMatchObject({ state: 'failed', attemptsMade: 1 });
    // The refused insert stopped the push; the inserts already in flight were written and indexed.
    expect(h.fake.counts().errors).toEqual({ '403 quotaExceeded': 1 });
    expect(await h.ctx.google.targets.index(target.id).size()).toBe(calls(h.fake, 'events.insert'));
    const pausedUntil = h.clock.now + QUOTA_PAUSE_MS;
    expect(await h.ctx.google.targets.get(target.id)).toMatchObject({ status: 'paused', pausedUntil });
    expect(await h.adminView(target.id)).toMatchObject({
      status: 200,
      body: {
        status: 'paused',
        pausedUntil: new Date(pausedUntil).toISOString(),
        statusReason: expect.stringContaining('usage limits'),
      },
    });
    h.fake.resetCounts();
    expect((await h.push(target, 'refresh')).result).toEqual({
      skipped: `paused until ${new Date(pausedUntil).toISOString()}`,
    });
    expect(h.fake.counts()).toMatchObject({ total: 0, tokenRequests: 0 });
    // When the pause is over, the scheduler's due scan queues the reconcile that finishes the work.
    h.clock.now += QUOTA_PAUSE_MS;
    try {
      expect((await reconcile(h.ctx)).pushes.google).toBeGreaterThanOrEqual(1);
      const last = (await h.settled(target.id, 3)).at(-1);
      expect(last).toMatchObject({ state: 'completed', result: { reconciled: true } });
      expect(await h.ctx.google.targets.get(target.id)).toMatchObject({ status: 'active' });
      expect(h.calendar(target.calendarId)).toEqual(await h.desired(source));
    } finally {
      h.clock.now -= QUOTA_PAUSE_MS;
    }
  });
});
