/**
 * The end-to-end Google push set-up: the university simulator, a service context on the run's Redis whose
 * Google settings point at the fake Google server (the real adapter, OAuth client and request budget talk to
 * it over loopback HTTP), and real workers. Sources are kept small (a few classes) so that a first push fits
 * in the request budget's burst and a test takes seconds.
 */
import type { FastifyInstance } from 'fastify';
import { inject } from 'vitest';
import { feedOccurrences } from '../../src/feeds/build-feed.ts';
import { buildApp } from '../../src/http/app.ts';
import type { PushJobResult, PushReason } from '../../src/jobs/contract.ts';
import { enqueuePush, enqueueRefresh } from '../../src/jobs/queues.ts';
import { startWorkers, type WorkerSet } from '../../src/jobs/workers.ts';
import { silentLogger } from '../../src/logger.ts';
import { eventIdFor } from '../../src/push/event-id.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { openServiceContext } from '../../src/runtime/service-context.ts';
import { startSimulator } from '../../src/simulator/index.ts';
import { connectGoogleTarget } from '../../src/subscriptions/google-connect.ts';
import { occurrenceUid } from '../../src/timetable/expand.ts';
import type { SourceKey } from '../../src/timetable/source.ts';
import type { Occurrence, SubscriberOptions } from '../../src/timetable/types.ts';
import { type ApiMethod, type FakeEvent, type FakeGoogle, startFakeGoogle } from '../../testkit/fake-google/index.ts';
import { REFERENCE_DATE, readEvents } from '../jobs/helpers.ts';
import { jobEnded, targetJobsEnded } from '../support/jobs.ts';
import { TEST_ADMIN_TOKEN, testConfig, testContext } from '../support/service.ts';
import { icsOf } from '../support/stored-feed.ts';
import { type SimControl, simControl } from '../upstream/sim-control.ts';

/** How long a quota pause lasts in these tests (GOOGLE_QUOTA_PAUSE). */
export const QUOTA_PAUSE_MS = 3_600_000;

/** An event reduced to what the comparison looks at: id, title, start instant (ISO, UTC). */
export interface EventView {
  id: string;
  summary: string;
  start: string;
}

/** A finished push job. */
export interface PushOutcome {
  id: string;
  state: string;
  result: PushJobResult;
  attemptsMade: number;
  attemptsStarted: number;
  failedReason: string | undefined;
  processedBy: string | undefined;
}

/** A connected target and the Google account behind it. */
export interface Connected {
  id: string;
  source: SourceKey;
  calendarId: string;
  refreshToken: string;
  user: string;
}

/** The Google settings of a context (and of a worker process) talking to `fake`. */
export function googleEnv(fake: FakeGoogle): Record<string, string> {
  return {
    GOOGLE_CLIENT_ID: fake.clientId,
    GOOGLE_CLIENT_SECRET: fake.clientSecret,
    GOOGLE_API_ROOT_URL: fake.rootUrl,
    GOOGLE_OAUTH_TOKEN_URL: fake.tokenUrl,
    GOOGLE_QUOTA_PAUSE: '1h',
    GOOGLE_RECONCILE_INTERVAL: '2h',
  };
}

/** The workers' tuning in these tests: quick stall detection, rate-limit pauses shortened. */
const WORKER_TUNING = { lockDurationMs: 5_000, stalledIntervalMs: 1_000, pushRateLimitBaseMs: 20 };

/** Compares by id. */
const byId = (a: EventView, b: EventView) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** The harness of one test file. */
export class PushHarness {
  readonly ctx: ServiceContext;
  readonly fake: FakeGoogle;
  readonly sim: SimControl;
  readonly simUrl: string;
  readonly clock: { now: number };
  private workers: WorkerSet | undefined;
  private app: FastifyInstance | undefined;
  private readonly groups: number[];
  private readonly closeAll: () => Promise<void>;

  private constructor(parts: {
    ctx: ServiceContext;
    fake: FakeGoogle;
    simUrl: string;
    clock: { now: number };
    groups: number[];
    closeAll: () => Promise<void>;
  }) {
    this.ctx = parts.ctx;
    this.fake = parts.fake;
    this.simUrl = parts.simUrl;
    this.sim = simControl(parts.simUrl);
    this.clock = parts.clock;
    this.groups = parts.groups;
    this.closeAll = parts.closeAll;
  }

  /**
   * Starts everything, with in-process workers; the scheduler's queue is paused (tests run reconciles themselves).
   * `env` goes over the test configuration, e.g. another Redis (REDIS_SENTINELS, REDIS_CLUSTER_NODES).
   */
  static async start(env: Record<string, string | undefined> = {}): Promise<PushHarness> {
    const simulator = await startSimulator({
      port: 0,
      seed: 1,
      referenceDate: REFERENCE_DATE,
      groups: 12,
      employees: 12,
      users: 2,
    });
    const fake = await startFakeGoogle({ seed: 7 });
    const clock = { now: REFERENCE_DATE.getTime() };
    const opened = await testContext(
      { UNIVERSITY_API_URL: simulator.url, ...googleEnv(fake), ...env },
      { now: () => clock.now },
    );
    // A background reconcile (every minute, or when a source is activated) would queue pushes that race the
    // ones a test queues and counts.
    await opened.context.queues.schedule.pause();
    const groups = (await simControl(simulator.url).groups()).map((group) => group.id);
    const harness = new PushHarness({
      ctx: opened.context,
      fake,
      simUrl: simulator.url,
      clock,
      groups,
      closeAll: async () => {
        await opened.close();
        await simulator.close();
        await fake.close();
      },
    });
    await harness.startWorkers();
    return harness;
  }

  /** Starts this process's workers (rate-limit pauses shortened). */
  async startWorkers(): Promise<void> {
    this.workers ??= await startWorkers(this.ctx, this.ctx.config.redisTarget ?? inject('redisUrl'), WORKER_TUNING);
  }

  /** Stops this process's workers (their running jobs finish first). */
  async stopWorkers(): Promise<void> {
    await this.workers?.close();
    this.workers = undefined;
  }

  /**
   * Runs `during` as after a restart with other settings (`env` over this harness's): this process's workers
   * stop, workers of a second context on the same Redis prefix take over, and this harness's come back after.
   * The second context is closed without deleting anything: its keys are this harness's.
   */
  async restartedWith(env: Record<string, string>, during: (ctx: ServiceContext) => Promise<void>): Promise<void> {
    await this.stopWorkers();
    const config = testConfig({
      UNIVERSITY_API_URL: this.simUrl,
      ...googleEnv(this.fake),
      REDIS_PREFIX: this.ctx.config.redisPrefix,
      ...env,
    });
    const opened = openServiceContext({
      config,
      logger: silentLogger(),
      redis: inject('redisUrl'),
      role: 'test',
      now: () => this.clock.now,
    });
    const workers = await startWorkers(opened.context, inject('redisUrl'), WORKER_TUNING);
    try {
      await during(opened.context);
    } finally {
      await workers.close();
      await opened.close();
      await this.startWorkers();
    }
  }

  async close(): Promise<void> {
    await this.app?.close();
    await this.stopWorkers();
    await this.closeAll();
  }

  /**
   * A group of its own for one test, cut down to `keep` classes before its first refresh (the others are
   * deleted in the simulator), so that its calendar holds a few dozen events. Classes shared with other
   * groups may go too: each test takes a fresh group, and the tests of a file run one after the other.
   */
  async smallGroup(keep: number): Promise<SourceKey> {
    const groupId = this.groups.shift();
    if (groupId === undefined) throw new Error('no simulator group left');
    const { entries } = await this.ctx.upstream.groupSchedule(groupId);
    const own = [...entries].sort((a, b) => a.groups.length - b.groups.length || a.id - b.id);
    for (const entry of own.slice(keep)) await this.sim.deleteEntry(entry.id);
    return `group:${groupId}`;
  }

  /** Adds a class held once, on Wednesday 15 October 2025 (after the test clock); answers its entry and event ids. */
  async addOneDayClass(source: SourceKey): Promise<{ entryId: number; eventId: string }> {
    const groupId = Number(source.split(':')[1]);
    const date = '2025-10-15';
    const { id } = await this.sim.addEntry({
      groupIds: [groupId],
      subject_name: 'Extra seminar',
      start_day_schedule: date,
      finish_day_schedule: date,
      day_week_schedule: 3,
      time_interval_id: 2,
    });
    return { entryId: id, eventId: eventIdFor(occurrenceUid(id, date)) };
  }

  /** Refreshes a source through the refresh queue and expects it to complete. */
  async refresh(source: SourceKey): Promise<unknown> {
    const id = await enqueueRefresh(this.ctx.queues, this.ctx.config, source, {
      reason: 'resync',
      now: this.clock.now,
    });
    const { job, state } = await jobEnded(this.ctx.queues.refresh, id);
    if (state !== 'completed') throw new Error(`refresh of ${source} ${state}: ${job.failedReason}`);
    return job.returnvalue;
  }

  /**
   * Publishes `source`, registers a Google account and connects it with `connectGoogleTarget` (a new calendar, or
   * `calendarId`), then waits for the push the connection queued.
   */
  async connect(
    source: SourceKey,
    options: {
      calendarId?: string;
      user?: { user: string; refreshToken: string };
      feedOptions?: SubscriberOptions;
    } = {},
  ): Promise<{ target: Connected; push: PushOutcome }> {
    await this.refresh(source);
    const { user, refreshToken } = options.user ?? this.fake.addUser();
    const connected = await connectGoogleTarget(this.ctx, {
      source,
      refreshToken,
      calendarId: options.calendarId,
      options: options.feedOptions,
    });
    const target = { id: connected.id, source, calendarId: connected.calendarId, refreshToken, user };
    const [push] = await this.settled(target.id, 1);
    if (push === undefined) throw new Error('no push after connecting');
    return { target, push };
  }

  /** Queues a push and waits until it completed or failed for good. */
  async push(target: Connected, reason: PushReason): Promise<PushOutcome> {
    return this.waitForPush(await enqueuePush(this.ctx.queues, 'google', target.id, target.source, reason));
  }

  /** Waits until `count` push jobs of the target exist and all of them have ended; answers them, oldest first. */
  async settled(targetId: string, count: number, timeoutMs = 20_000): Promise<PushOutcome[]> {
    const ids = await targetJobsEnded(this.ctx.queues.pushQueue('google'), targetId, count, timeoutMs);
    return Promise.all(ids.map((id) => this.waitForPush(id)));
  }

  /** Waits until a push job completed or failed for good. */
  async waitForPush(jobId: string, timeoutMs = 20_000): Promise<PushOutcome> {
    const { job, state } = await jobEnded(this.ctx.queues.pushQueue('google'), jobId, timeoutMs);
    return {
      id: jobId,
      state,
      result: job.returnvalue,
      attemptsMade: job.attemptsMade,
      attemptsStarted: job.attemptsStarted,
      failedReason: job.failedReason,
      processedBy: job.processedBy,
    };
  }

  /** Everything the default feed of a published source shows. */
  async occurrences(source: SourceKey): Promise<Occurrence[]> {
    const { snapshot, published } = await this.ctx.snapshots.load(source);
    if (!snapshot || !published) throw new Error(`${source} is not published`);
    return feedOccurrences(snapshot, published, this.ctx.config);
  }

  /**
   * What the calendar should hold: the feed's confirmed occurrences, and its cancelled ones titled with the
   * cancelled-title prefix (none without a prefix), by id.
   */
  async desired(source: SourceKey): Promise<EventView[]> {
    const { snapshot, published } = await this.ctx.snapshots.load(source);
    if (!snapshot || !published) throw new Error(`${source} is not published`);
    const prefix = this.ctx.config.cancelledTitlePrefix;
    return feedOccurrences(snapshot, published, this.ctx.config)
      .filter((occurrence) => occurrence.status === 'CONFIRMED' || prefix !== '')
      .map((occurrence) => ({
        id: eventIdFor(occurrence.uid),
        summary: occurrence.status === 'CANCELLED' ? prefix + occurrence.summary : occurrence.summary,
        start: new Date(occurrence.startUtc).toISOString(),
      }))
      .sort(byId);
  }

  /** The same, read from the published ICS feed by ical.js (an independent parser). */
  async feedEvents(source: SourceKey): Promise<EventView[]> {
    const feed = await this.ctx.feeds.get(source);
    if (!feed) throw new Error(`no feed for ${source}`);
    return readEvents(icsOf(feed))
      .filter((event) => event.status !== 'CANCELLED' || this.ctx.config.cancelledTitlePrefix !== '')
      .map((event) => ({ id: eventIdFor(event.uid), summary: event.summary, start: event.start }))
      .sort(byId);
  }

  /** What the fake holds in a calendar (cancelled events left out). */
  calendar(calendarId: string): EventView[] {
    return this.fake.events(calendarId).map(view).sort(byId);
  }

  /** `GET /admin/google-targets/:id`, as an operator sees it. */
  async adminView(id: string): Promise<{ status: number; body: Record<string, unknown> }> {
    return this.admin('GET', `/admin/google-targets/${id}`);
  }

  /** A request of the admin API, with the admin token. */
  async admin(
    method: 'GET' | 'POST' | 'PATCH',
    url: string,
    payload?: Record<string, unknown>,
  ): Promise<{ status: number; body: Record<string, unknown> }> {
    this.app ??= await buildApp(this.ctx, { logger: silentLogger() });
    const response = await this.app.inject({
      method,
      url,
      headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
      ...(payload === undefined ? {} : { payload }),
    });
    return { status: response.statusCode, body: response.json() };
  }
}

/** A fake event as an {@link EventView}. */
function view(event: FakeEvent): EventView {
  return { id: event.id, summary: event.summary ?? '', start: new Date(event.start.dateTime ?? '').toISOString() };
}

/** Counts of one kind of request in the fake (0 when none). */
export function calls(fake: FakeGoogle, method: ApiMethod): number {
  return fake.counts().byMethod[method] ?? 0;
}
