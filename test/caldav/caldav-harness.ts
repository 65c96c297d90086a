/**
 * The end-to-end CalDAV push set-up: the university simulator, a real Radicale behind the fault proxy (which
 * counts every request the service sends and injects faults when asked), a service context on the run's Redis
 * with the real CalDAV client, and real workers. Each connection gets a Radicale user of its own.
 */

import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { inject } from 'vitest';
import type { CalDavClient } from '../../src/caldav/caldav-client.ts';
import { MARKER_PROPERTY } from '../../src/caldav/caldav-client.ts';
import { caldavDetailFields } from '../../src/caldav/caldav-targets.ts';
import { loadPublishedResources } from '../../src/caldav/published-resources.ts';
import { feedOccurrences } from '../../src/feeds/build-feed.ts';
import type { PushJobResult, PushReason } from '../../src/jobs/contract.ts';
import { enqueuePush, enqueueRefresh } from '../../src/jobs/queues.ts';
import { startWorkers, type WorkerSet } from '../../src/jobs/workers.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { startSimulator } from '../../src/simulator/index.ts';
import type { SourceKey } from '../../src/timetable/source.ts';
import { type DavFaultProxy, startDavFaultProxy } from '../../testkit/dav-fault-proxy.ts';
import { type Radicale, startRadicale } from '../../testkit/radicale.ts';
import { REFERENCE_DATE, readEvents } from '../jobs/helpers.ts';
import { jobEnded, targetJobsEnded } from '../support/jobs.ts';
import { testContext } from '../support/service.ts';
import { type SimControl, simControl } from '../upstream/sim-control.ts';

export const PASSWORD = 'app-password-1';
/** The slug of the calendars the tests make. */
const SLUG = 'timetable';

/** An event reduced to what the comparison looks at. */
export interface EventView {
  uid: string;
  summary: string;
  start: string;
  location: string;
}

/** A connected target. */
export interface Connected {
  id: string;
  source: SourceKey;
  user: string;
  calendarUrl: string;
  /** Radicale's folder of the calendar. */
  folder: string;
}

/** A finished push job. */
export interface PushOutcome {
  id: string;
  state: string;
  result: PushJobResult & Record<string, unknown>;
  attemptsMade: number;
  failedReason: string | undefined;
  processedBy: string | undefined;
}

/** The CalDAV settings of a context (and of a worker process) talking to this Radicale. */
export function caldavEnv(): Record<string, string> {
  return {
    CALDAV_ALLOW_PRIVATE: 'true',
    // The budget has tests of its own; at the default 5/s a first push of a few dozen resources takes seconds.
    CALDAV_RATE_LIMIT: '1000',
    CALDAV_RECONCILE_INTERVAL: '2h',
    CALDAV_PAUSE: '1h',
  };
}

export const WORKER_TUNING = { lockDurationMs: 5_000, stalledIntervalMs: 1_000, pushRateLimitBaseMs: 20 };

const byUid = (a: EventView, b: EventView) => (a.uid < b.uid ? -1 : a.uid > b.uid ? 1 : 0);

export class CalDavHarness {
  private workers: WorkerSet | undefined;
  private users = 0;

  readonly ctx: ServiceContext;
  readonly radicale: Radicale;
  readonly proxy: DavFaultProxy;
  readonly sim: SimControl;
  readonly simUrl: string;
  /** The service's clock (the simulator's reference date), as the Google push harness keeps it. */
  readonly clock: { now: number };
  private readonly groups: number[];
  private readonly closeAll: () => Promise<void>;

  private constructor(parts: {
    ctx: ServiceContext;
    radicale: Radicale;
    proxy: DavFaultProxy;
    simUrl: string;
    clock: { now: number };
    groups: number[];
    closeAll: () => Promise<void>;
  }) {
    this.ctx = parts.ctx;
    this.radicale = parts.radicale;
    this.proxy = parts.proxy;
    this.simUrl = parts.simUrl;
    this.sim = simControl(parts.simUrl);
    this.clock = parts.clock;
    this.groups = parts.groups;
    this.closeAll = parts.closeAll;
  }

  /** Starts everything; `env` adds to (or overrides) the context's CalDAV settings. */
  static async start(env: Record<string, string> = {}): Promise<CalDavHarness> {
    const simulator = await startSimulator({
      port: 0,
      seed: 1,
      referenceDate: REFERENCE_DATE,
      groups: 12,
      employees: 4,
      users: 2,
    });
    const radicale = await startRadicale();
    const proxy = await startDavFaultProxy(radicale.url, { seed: 28 });
    const clock = { now: REFERENCE_DATE.getTime() };
    const opened = await testContext(
      { UNIVERSITY_API_URL: simulator.url, ...caldavEnv(), ...env },
      { now: () => clock.now },
    );
    // The tests queue their pushes themselves; a background reconcile would race them.
    await opened.context.queues.schedule.pause();
    const groups = (await simControl(simulator.url).groups())
      .filter((group) => group.entryCount >= 4)
      .map((group) => group.id);
    const harness = new CalDavHarness({
      ctx: opened.context,
      radicale,
      proxy,
      simUrl: simulator.url,
      clock,
      groups,
      closeAll: async () => {
        await opened.close();
        await proxy.close();
        await radicale.close();
        await simulator.close();
      },
    });
    await harness.startWorkers();
    return harness;
  }

  async startWorkers(): Promise<void> {
    this.workers ??= await startWorkers(this.ctx, inject('redisUrl'), WORKER_TUNING);
  }

  async stopWorkers(): Promise<void> {
    await this.workers?.close();
    this.workers = undefined;
  }

  async close(): Promise<void> {
    await this.stopWorkers();
    await this.closeAll();
  }

  /** A group of its own for one test, cut down to `keep` classes (the others deleted in the simulator). */
  async smallGroup(keep: number): Promise<SourceKey> {
    const groupId = this.groups.shift();
    if (groupId === undefined) throw new Error('no simulator group left');
    const { entries } = await this.ctx.upstream.groupSchedule(groupId);
    const own = [...entries].sort((a, b) => a.groups.length - b.groups.length || a.id - b.id);
    for (const entry of own.slice(keep)) await this.sim.deleteEntry(entry.id);
    return `group:${groupId}`;
  }

  /** The simulator's entries of a group. */
  async entries(source: SourceKey): Promise<{ id: number }[]> {
    return (await this.ctx.upstream.groupSchedule(Number(source.split(':')[1]))).entries;
  }

  /** Changes fields of an entry in the simulator. */
  async patchEntry(entryId: number, fields: Record<string, unknown>): Promise<void> {
    const response = await this.sim.raw(`/_sim/entries/${entryId}`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(fields),
    });
    if (response.status >= 300) throw new Error(`PATCH entry ${entryId}: ${response.status}`);
  }

  /** Refreshes a source through the refresh queue and expects it to complete. */
  async refresh(source: SourceKey): Promise<Record<string, unknown>> {
    const id = await enqueueRefresh(this.ctx.queues, this.ctx.config, source, {
      reason: 'resync',
      now: this.clock.now,
    });
    const { job, state } = await jobEnded(this.ctx.queues.refresh, id);
    if (state !== 'completed') throw new Error(`refresh of ${source} ${state}: ${job.failedReason}`);
    return job.returnvalue as unknown as Record<string, unknown>;
  }

  /** A new Radicale user and a client of its account (through the service's host budget and the proxy). */
  async account(): Promise<{ user: string; client: CalDavClient; home: string }> {
    const user = `student${++this.users}`;
    await this.radicale.addUser(user, PASSWORD);
    return {
      user,
      client: this.ctx.caldav.client({ username: user, password: PASSWORD }),
      home: `${this.proxy.url}${user}/`,
    };
  }

  /**
   * Publishes `source`, makes a calendar (or takes the `given` one, not ours), stores the target and waits for
   * its first push (reason `connect`, as the connect flow queues it).
   */
  async connect(
    source: SourceKey,
    given?: { user: string; calendarUrl: string },
  ): Promise<{ target: Connected; push: PushOutcome }> {
    await this.refresh(source);
    const owner = given ?? (await this.account());
    let calendarUrl: string;
    if (given) calendarUrl = given.calendarUrl;
    else {
      const { client, home } = owner as Awaited<ReturnType<CalDavHarness['account']>>;
      calendarUrl = (await client.makeCalendar(home, SLUG, source, '#1E88E5')).url;
    }
    const slug = calendarUrl.split('/').at(-2) ?? SLUG;
    const { id } = await this.ctx.caldav.targets.create({
      source,
      calendarId: calendarUrl,
      calendarOwned: given === undefined,
      calendarName: source,
      secret: PASSWORD,
      details: caldavDetailFields(calendarUrl, {
        serverUrl: this.proxy.url,
        homeUrl: `${this.proxy.url}${owner.user}/`,
        username: owner.user,
        supportsSync: true,
      }),
      now: this.clock.now,
    });
    const target = { id, source, user: owner.user, calendarUrl, folder: this.radicale.collectionDir(owner.user, slug) };
    return { target, push: await this.push(target, 'connect') };
  }

  /** Queues a push and waits until it completed or failed for good. */
  async push(target: Connected, reason: PushReason, timeoutMs = 30_000): Promise<PushOutcome> {
    return this.waitForPush(await enqueuePush(this.ctx.queues, 'caldav', target.id, target.source, reason), timeoutMs);
  }

  /** Waits until `count` push jobs of the target exist and all of them have ended; answers them, oldest first. */
  async settled(targetId: string, count: number, timeoutMs = 30_000): Promise<PushOutcome[]> {
    const ids = await targetJobsEnded(this.ctx.queues.pushQueue('caldav'), targetId, count, timeoutMs);
    return Promise.all(ids.map((id) => this.waitForPush(id, timeoutMs)));
  }

  async waitForPush(jobId: string, timeoutMs = 30_000): Promise<PushOutcome> {
    const { job, state } = await jobEnded(this.ctx.queues.pushQueue('caldav'), jobId, timeoutMs);
    return {
      id: jobId,
      state,
      result: job.returnvalue as PushOutcome['result'],
      attemptsMade: job.attemptsMade,
      failedReason: job.failedReason,
      processedBy: job.processedBy,
    };
  }

  /**
   * What the calendar should hold, from the expander: the feed's occurrences (cancelled ones titled with the
   * prefix, or left out without one), by UID.
   */
  async expected(source: SourceKey): Promise<EventView[]> {
    const { snapshot, published } = await this.ctx.snapshots.load(source);
    if (!snapshot || !published) throw new Error(`${source} is not published`);
    const prefix = this.ctx.config.cancelledTitlePrefix;
    const seen = new Set<string>();
    return feedOccurrences(snapshot, published, this.ctx.config)
      .filter((occurrence) => occurrence.status === 'CONFIRMED' || prefix !== '')
      .filter((occurrence) => !seen.has(occurrence.uid) && seen.add(occurrence.uid) !== undefined)
      .map((occurrence) => ({
        uid: occurrence.uid,
        summary: occurrence.status === 'CONFIRMED' ? occurrence.summary : prefix + occurrence.summary,
        start: new Date(occurrence.startUtc).toISOString(),
        location: occurrence.location,
      }))
      .sort(byUid);
  }

  /** The desired resources' digests by UID, as the push job computes them (to count changed occurrences). */
  async digests(source: SourceKey): Promise<Map<string, string>> {
    const published = await loadPublishedResources(this.ctx, source, undefined);
    return new Map((published?.desired ?? []).map((resource) => [resource.uid, resource.hash]));
  }

  /** Every file of the calendar folder in Radicale: name → text. */
  async files(target: Connected): Promise<Map<string, string>> {
    const found = new Map<string, string>();
    for (const name of (await readdir(target.folder)).sort())
      if (name.endsWith('.ics')) found.set(name, await readFile(join(target.folder, name), 'utf8'));
    return found;
  }

  /** Our events in Radicale's folder, parsed by ical.js (an independent parser); throws on a UID held twice. */
  async held(target: Connected): Promise<EventView[]> {
    const views: EventView[] = [];
    const uids = new Map<string, string>();
    for (const [name, text] of await this.files(target)) {
      const events = readEvents(text);
      if (events.length !== 1) throw new Error(`${name}: ${events.length} VEVENTs`);
      const [event] = events as [ReturnType<typeof readEvents>[number]];
      const other = uids.get(event.uid);
      if (other !== undefined) throw new Error(`UID ${event.uid} held twice: ${other} and ${name}`);
      uids.set(event.uid, name);
      if (!unfolded(text).includes(`\n${MARKER_PROPERTY}:${target.source}\r`)) continue;
      views.push({ uid: event.uid, summary: event.summary, start: event.start, location: event.location });
    }
    return views.sort(byUid);
  }

  /** Write requests (PUT, DELETE) the proxy saw since `since` (a snapshot from {@link requests}). */
  writesSince(since: Map<string, number>): { PUT: number; DELETE: number } {
    const delta = (method: string) => (this.proxy.requests.get(method) ?? 0) - (since.get(method) ?? 0);
    return { PUT: delta('PUT'), DELETE: delta('DELETE') };
  }

  /** A copy of the proxy's request counts. */
  requests(): Map<string, number> {
    return new Map(this.proxy.requests);
  }
}

/** A resource's text with folded lines joined. */
export function unfolded(text: string): string {
  return text.replace(/\r\n[ \t]/g, '');
}
