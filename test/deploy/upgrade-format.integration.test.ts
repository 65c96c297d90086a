/**
 * An upgrade loses no feed and no subscription: each fixture of test/fixtures/upgrade/ is a Redis that an
 * earlier version filled (scripts/upgrade-fixture.ts), restored here into a fresh redis-server under the code
 * of today, at the service clock the old version stopped at and against the same simulated timetable. Every
 * feed must answer as the old version answered (ETag, Last-Modified, bytes, stale mark), the change logs and
 * the subscription must read alike, a refresh of an unchanged timetable must publish nothing and owe no push,
 * and a refresh after an edit must publish just that edit.
 */
import { basename } from 'node:path';
import type { FastifyInstance } from 'fastify';
import ICAL from 'ical.js';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { buildApp } from '../../src/http/app.ts';
import type { RefreshJobResult } from '../../src/jobs/contract.ts';
import { startWorkers, type WorkerSet } from '../../src/jobs/workers.ts';
import { silentLogger } from '../../src/logger.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { openServiceContext } from '../../src/runtime/service-context.ts';
import { type RunningSimulator, startSimulator } from '../../src/simulator/index.ts';
import { type FakeGoogle, startFakeGoogle } from '../../testkit/fake-google/index.ts';
import { until } from '../../testkit/poll.ts';
import { type RedisProcess, startRedisProcess } from '../../testkit/redis-process.ts';
import { readEvents } from '../jobs/helpers.ts';
import { type ExportedKey, exportPrefix, restoreKeys } from './redis-export.ts';
import {
  applyEdit,
  applyEdits,
  askFeed,
  CODINGS,
  fixtureFiles,
  readFixture,
  type ServedFeed,
  type UpgradeFixture,
} from './upgrade-fixture.ts';

const files = await fixtureFiles();

/** The events of an ICS text with what a teacher's wording changes: title, description and SEQUENCE. */
function eventTexts(ics: string) {
  const calendar = new ICAL.Component(ICAL.parse(ics));
  return calendar.getAllSubcomponents('vevent').map((vevent) => {
    const event = new ICAL.Event(vevent);
    return {
      uid: event.uid,
      status: vevent.getFirstPropertyValue('status')?.toString(),
      end: event.endDate.toJSDate().toISOString(),
      summary: event.summary,
      description: event.description ?? '',
      sequence: event.sequence,
    };
  });
}

describe.for(files.map((file) => [basename(file), file] as const))('upgrading the Redis of %s', ([, file]) => {
  let fixture: UpgradeFixture;
  let redisProcess: RedisProcess;
  let simulator: RunningSimulator;
  let fake: FakeGoogle;
  let ctx: ServiceContext;
  let closeContext: () => Promise<void>;
  let app: FastifyInstance;
  let workers: WorkerSet | undefined;
  let admin: Record<string, string>;
  /** The restored Redis exported again, before the new version touched it. */
  let restored: ExportedKey[];
  /** The teacher's feed as the old version published it (workers may word it anew as soon as they start). */
  let teacherEvents: ReturnType<typeof eventTexts>;

  beforeAll(async () => {
    fixture = await readFixture(file);
    redisProcess = await startRedisProcess();
    const redis = new Redis(redisProcess.url);
    try {
      await restoreKeys(redis, fixture.keys);
      restored = await exportPrefix(redis, fixture.env.REDIS_PREFIX ?? 'tts');
    } finally {
      redis.disconnect();
    }
    const { referenceDate, ...counts } = fixture.simulator;
    simulator = await startSimulator({ ...counts, referenceDate: new Date(referenceDate), port: 0 });
    await applyEdits(simulator.url, fixture.edits);
    fake = await startFakeGoogle({ seed: 7 });
    const config = loadConfig({
      ...fixture.env,
      REDIS_URL: redisProcess.url,
      UNIVERSITY_API_URL: simulator.url,
      GOOGLE_CLIENT_ID: fake.clientId,
      GOOGLE_CLIENT_SECRET: fake.clientSecret,
      GOOGLE_API_ROOT_URL: fake.rootUrl,
      GOOGLE_OAUTH_TOKEN_URL: fake.tokenUrl,
    });
    const opened = openServiceContext({
      config,
      logger: silentLogger(),
      redis: redisProcess.url,
      role: 'upgrade',
      now: () => fixture.clockMs,
    });
    ctx = opened.context;
    closeContext = opened.close;
    admin = { authorization: `Bearer ${config.adminToken}` };
    // The fake Google knows neither the account nor the calendar of the fixture: pushes stay queued, to be seen.
    await ctx.queues.pushQueue('google').pause();
    // The api alone first: what it serves must be what was stored, before any worker refreshes anything.
    app = await buildApp(ctx, { logger: silentLogger() });
    const teacherFeed = fixture.answers.feeds[fixture.sources.teacher]?.path ?? '';
    teacherEvents = eventTexts((await askFeed(app, teacherFeed, 'identity')).body.toString('utf8'));
  });
  afterAll(async () => {
    await app?.close();
    await workers?.close();
    await closeContext?.();
    await simulator?.close();
    await fake?.close();
    await redisProcess?.close();
  });

  /** Expects a feed URL to answer exactly as the old version did, in every coding. */
  async function expectServedAsBefore(before: ServedFeed): Promise<void> {
    for (const coding of CODINGS) {
      const asked = await askFeed(app, before.path, coding);
      expect(asked.status, `${before.path} in ${coding}`).toBe(200);
      expect(asked.coding ?? 'identity').toBe(coding);
      expect(asked.answer, `${before.path} in ${coding}`).toEqual(before.answers[coding]);
      const conditional = await app.inject({
        method: 'GET',
        url: before.path,
        headers: { 'if-none-match': asked.answer.etag, 'accept-encoding': coding },
      });
      expect(conditional.statusCode, `${before.path} in ${coding}, conditional`).toBe(304);
    }
  }

  async function adminGet<T>(url: string): Promise<T> {
    const response = await app.inject({ method: 'GET', url, headers: admin });
    expect(response.statusCode, url).toBe(200);
    return response.json<T>();
  }

  /** Queues a resync through the admin API and answers the ended job. */
  async function resync(body: Record<string, string>): Promise<{ state: string; result: RefreshJobResult }> {
    const queued = await app.inject({ method: 'POST', url: '/admin/resync', headers: admin, payload: body });
    expect(queued.statusCode).toBe(202);
    const [id] = queued.json<{ jobs: string[] }>().jobs;
    // A follow-up of a scheduled refresh that has just ended is no job for a moment (404): asked again.
    const job = await until(
      async () => {
        const response = await app.inject({ method: 'GET', url: `/admin/jobs/${id}`, headers: admin });
        return response.statusCode === 404 ? undefined : response.json<{ state: string; result: RefreshJobResult }>();
      },
      (found) => found !== undefined && (found.state === 'completed' || found.state === 'failed'),
    );
    if (job === undefined) throw new Error(`job ${id} was never found`);
    return job;
  }

  /** Push jobs of the fixture's Google target that are queued (the push queue is paused). */
  async function queuedPushes() {
    const jobs = await ctx.queues.pushQueue('google').getJobs(['wait', 'prioritized', 'delayed']);
    return jobs.filter((job) => job.data.target === fixture.google.targetId).map((job) => job.data.reason);
  }

  it('restores every key of the fixture as it was', () => {
    const withoutTtl = (keys: ExportedKey[]) => keys.map(({ ttlMs, ...key }) => ({ ...key, expires: ttlMs > 0 }));
    // A key with a TTL of milliseconds left (a BullMQ limiter) may have expired since.
    const names = new Set(restored.map((key) => key.key));
    const expected = withoutTtl(fixture.keys).filter((key) => !key.expires || names.has(key.key));
    expect(withoutTtl(restored)).toEqual(expected);
  });

  it('serves every feed with the same validators and bytes, the stale one still stale', async () => {
    const { feeds, variant } = fixture.answers;
    expect(Object.keys(feeds)).toHaveLength(4);
    for (const before of Object.values(feeds)) await expectServedAsBefore(before);
    expect(feeds[fixture.sources.stale]?.answers.identity.stale).toBeDefined();
    // A subscriber variant still renders alike, its option value still known.
    await expectServedAsBefore(variant);
  });

  it('reads the change logs, the source table and the subscription as before', async () => {
    // Answers may gain fields (contracts are extended, e.g. `unlisted` per change record, `nextRefresh` per
    // source); every field the old release answered must come back the same, hence toMatchObject.
    for (const [source, changes] of Object.entries(fixture.answers.changes))
      expect(await adminGet(`/admin/sources/${source}/changes`), source).toMatchObject(changes as object);
    const sources = (await adminGet('/admin/sources')) as { sources: unknown[] };
    expect(sources).toMatchObject(fixture.answers.sources as object);
    expect(sources.sources).toHaveLength((fixture.answers.sources as { sources: unknown[] }).sources.length);
    const { subscriptionId, feedToken } = fixture.personal;
    const subscription = await app.inject({
      method: 'GET',
      url: `/api/subscriptions/${subscriptionId}`,
      headers: { authorization: `Bearer ${feedToken}` },
    });
    expect(subscription.statusCode).toBe(200);
    expect(subscription.json()).toEqual(fixture.answers.subscription);
    const target = await adminGet<{ id: string; calendarId: string; status: string }>(
      `/admin/google-targets/${fixture.google.targetId}`,
    );
    expect(target).toMatchObject({ id: fixture.google.targetId, calendarId: fixture.google.calendarId });
  });

  it('publishes nothing new when a refresh finds the timetable unchanged', async () => {
    const stalePath = fixture.answers.feeds[fixture.sources.stale]?.path ?? '';
    const staleEvents = readEvents((await askFeed(app, stalePath, 'identity')).body.toString('utf8'));
    workers = await startWorkers(ctx, redisProcess.url, { lockDurationMs: 5_000, stalledIntervalMs: 1_000 });
    // A teacher's feed is worded anew once (see the next test); groups' and personal ones stay byte for byte.
    const { group, personal, stale } = fixture.sources;
    for (const request of [{ source: group }, { subscription: fixture.personal.subscriptionId }]) {
      const job = await resync(request);
      expect(job, JSON.stringify(request)).toMatchObject({ state: 'completed', result: { outcome: 'unchanged' } });
    }
    for (const source of [group, personal]) {
      const before = fixture.answers.feeds[source];
      if (!before) throw new Error(`no answer recorded for ${source}`);
      await expectServedAsBefore(before);
      expect(await adminGet(`/admin/sources/${source}/changes`)).toMatchObject(
        fixture.answers.changes[source] as object,
      );
    }
    // The stale feed's refresh succeeds now: the same events, no longer marked stale, no change recorded.
    expect((await resync({ source: stale })).state).toBe('completed');
    // The api's feed cache learns of the new feed by pub/sub, a moment after the job ended.
    const recovered = await until(
      () => askFeed(app, stalePath, 'identity'),
      (asked) => asked.answer.stale === undefined,
    );
    expect(recovered.answer.stale).toBeUndefined();
    expect(readEvents(recovered.body.toString('utf8'))).toEqual(staleEvents);
    expect(await adminGet(`/admin/sources/${stale}/changes`)).toMatchObject(fixture.answers.changes[stale] as object);
    // None of these owes a push. (The teacher's first refresh on the new wording may be publishing right now:
    // it owes one for a moment, and is the next test's.)
    const owed = await ctx.redis.smembers(ctx.keys.pushOwed);
    expect(owed.filter((source) => [group, personal, stale].includes(source))).toEqual([]);
    expect(await queuedPushes()).toEqual([]);
  });

  it("words a teacher's feed anew once: classes to come name their groups with SEQUENCE raised, the past as published", async () => {
    const { teacher } = fixture.sources;
    const path = fixture.answers.feeds[teacher]?.path ?? '';
    const oldEtag = fixture.answers.feeds[teacher]?.answers.identity.etag;
    const before = teacherEvents;
    expect(before.some((event) => event.description.includes('Преподаватель:'))).toBe(true);
    // Published by this resync, or by the scheduled refresh the workers ran on starting.
    expect((await resync({ source: teacher })).state).toBe('completed');
    const served = await until(
      () => askFeed(app, path, 'identity'),
      (asked) => asked.answer.etag !== oldEtag,
    );
    const after = eventTexts(served.body.toString('utf8'));
    expect(after.map((event) => event.uid)).toEqual(before.map((event) => event.uid));
    const earlier = new Map(before.map((event) => [event.uid, event]));
    const now = new Date(fixture.clockMs).toISOString();
    let reworded = 0;
    for (const event of after) {
      const previous = earlier.get(event.uid);
      if (!previous) throw new Error(`no event ${event.uid} before`);
      if (event.end <= now || event.status === 'CANCELLED') {
        expect(event, 'an ended or cancelled class stays as published').toEqual(previous);
        continue;
      }
      reworded += 1;
      const groups = /^Групп[аы]: (.*)$/m.exec(previous.description)?.[1];
      expect(event.summary).toBe(groups === undefined ? previous.summary : `${previous.summary} — ${groups}`);
      expect(event.description).toBe(previous.description.replace(/^Преподаватель: .*\n/m, ''));
      expect(event.sequence).toBe(previous.sequence + 1);
    }
    expect(reworded).toBeGreaterThan(0);
    // A second refresh finds it unchanged.
    expect(await resync({ source: teacher })).toMatchObject({ result: { outcome: 'unchanged' } });
  });

  it('publishes an upstream edit with the sequences of just the changed classes raised by one', async () => {
    const { group } = fixture.sources;
    const path = fixture.answers.feeds[group]?.path ?? '';
    const before = readEvents((await askFeed(app, path, 'identity')).body.toString('utf8'));
    const today = new Date(fixture.clockMs).toISOString().slice(0, 10);
    const { entries } = await ctx.upstream.groupSchedule(Number(group.split(':')[1]));
    const entry = entries.find(
      (candidate) => candidate.startDate < today && candidate.finishDate > today && candidate.beginTime !== '18:00',
    );
    if (!entry) throw new Error(`${group} has no class running through the fixture's day`);
    await applyEdit(simulator.url, {
      method: 'PATCH',
      path: `/_sim/entries/${entry.id}`,
      body: { begin_time_schedule: '18:00', end_time_schedule: '19:30' },
    });

    const job = await resync({ source: group });
    expect(job).toMatchObject({ state: 'completed', result: { outcome: 'published' } });
    const oldEtag = fixture.answers.feeds[group]?.answers.identity.etag;
    const served = await until(
      () => askFeed(app, path, 'identity'),
      (asked) => asked.answer.etag !== oldEtag,
    );
    expect(served.answer.etag).not.toBe(oldEtag);
    const after = readEvents(served.body.toString('utf8'));
    const earlier = new Map(before.map((event) => [event.uid, event]));
    expect(new Set(after.map((event) => event.uid))).toEqual(new Set(earlier.keys()));
    const now = new Date(fixture.clockMs).toISOString();
    const moved = new Set(
      before.filter((event) => event.uid.startsWith(`${entry.id}-`) && event.end > now).map((event) => event.uid),
    );
    expect(moved.size).toBeGreaterThan(0);
    for (const event of after) {
      const previous = earlier.get(event.uid);
      if (!previous) throw new Error(`no event ${event.uid} before`);
      if (moved.has(event.uid)) {
        expect(event.sequence).toBe(previous.sequence + 1);
        expect(event.start).not.toBe(previous.start);
      } else expect(event).toEqual(previous);
    }
    const log = await adminGet<{ changes: { counts: Record<string, number> }[] }>(`/admin/sources/${group}/changes`);
    const old = fixture.answers.changes[group] as { changes: unknown[] };
    expect(log.changes.slice(1)).toMatchObject(old.changes.slice(0, log.changes.length - 1));
    expect(log.changes[0]?.counts).toEqual({ added: 0, removed: 0, moved: moved.size, changed: 0 });
    // The Google calendar is owed the change.
    expect(await until(queuedPushes, (reasons) => reasons.length > 0)).toEqual(['refresh']);
  });
});
