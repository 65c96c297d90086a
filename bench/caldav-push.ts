/**
 * Benchmark of CalDAV push (its measures: "first push of a median group (about 330 events) and a 10-event
 * change, writes per changed occurrence (goal 1.00), time to converge, against Radicale on loopback").
 *
 * Setup: a private redis-server, the simulator, a real Radicale (Debian's package) behind the counting proxy
 * (testkit/dav-fault-proxy.ts, no faults: it only counts what the service sends), and one `timetable-sync
 * worker` child process with the DEFAULT CalDAV settings (CALDAV_RATE_LIMIT 5 requests/s per host), loopback
 * allowed (CALDAV_ALLOW_PRIVATE). This process picks the group, connects the target as the connect flow does
 * (MKCALENDAR, the target stored, a `connect` push queued) and drives the simulator.
 *
 * The group is the simulator's median group by classes, grown with weekly classes to the university's median
 * of about 330 events, plus 10 one-off classes (one date each, still to come) that the change round moves to
 * another slot of their day: exactly 10 changed occurrences. The first push is paced by the per-host limit
 * (5 requests/s by default), so its duration is about requests / 5 s: the figure to compare is that floor. Figures:
 * (a) the first push: resources, PUTs, Radicale's folder against the desired resources, duration; (b) the
 * change: write requests (PUT + DELETE seen by the proxy) / changed occurrences (the desired resources'
 * digests compared before and after), which must be 1.00, and the time from the refresh to the push's end;
 * (c) a push and a reconcile with nothing to do: 0 writes.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { caldavDetailFields } from '../src/caldav/caldav-targets.ts';
import { loadPublishedResources } from '../src/caldav/published-resources.ts';
import type { PushJobResult, PushReason } from '../src/jobs/contract.ts';
import { enqueuePush, enqueueRefresh } from '../src/jobs/queues.ts';
import type { ServiceContext } from '../src/runtime/context.ts';
import type { SourceKey } from '../src/timetable/source.ts';
import { type DavFaultProxy, startDavFaultProxy } from '../testkit/dav-fault-proxy.ts';
import {
  Cleanup,
  privateRedis,
  privateSimulator,
  rawRequest,
  serviceEnvironment,
  sleep,
  spawnRole,
  tempDir,
} from '../testkit/processes.ts';
import { startRadicale } from '../testkit/radicale.ts';
import { type OneOff, TimetableEdits } from '../testkit/timetable-edits.ts';
import { openBenchContext } from './support/bench-context.ts';

const USER = 'bench';
const PASSWORD = 'bench-app-password';
const SLUG = 'timetable';
/** Occurrences the change round changes. */
const CHANGED = 10;
/** Resources of the university's median group (its feed's events): the first push's size. */
const MEDIAN_RESOURCES = 330;
/** Occurrences of a weekly class in a semester, at least (as bench/support/push-group.ts counts them). */
const WEEKLY_OCCURRENCES = 15;
const PENDING = ['waiting', 'active', 'delayed', 'prioritized', 'waiting-children'] as const;

/** Runs the caldav-push benchmark and returns its figures. */
export async function runCaldavPushBenchmark(): Promise<Record<string, number | string>> {
  const cleanup = new Cleanup();
  try {
    return await measure(cleanup);
  } finally {
    await cleanup.run();
  }
}

async function measure(cleanup: Cleanup): Promise<Record<string, number | string>> {
  const dir = await tempDir(cleanup, 'caldav-push');
  const redisUrl = await privateRedis(cleanup, join(dir, 'redis'));
  const simulator = await privateSimulator(cleanup);
  const radicale = await startRadicale({ users: { [USER]: PASSWORD } });
  cleanup.add('radicale', radicale.close);
  const proxy = await startDavFaultProxy(radicale.url);
  cleanup.add('dav proxy', proxy.close);
  const env = { ...serviceEnvironment(redisUrl, simulator.url), CALDAV_ALLOW_PRIVATE: 'true' };
  const worker = await spawnRole(cleanup, 'worker', env, dir);
  const ctx = openBenchContext(cleanup, env, redisUrl);

  const { groupId, entries } = await medianGroup(simulator.url);
  const source: SourceKey = `group:${groupId}`;
  const edits = new TimetableEdits(simulator.url, groupId);
  const oneOffs: OneOff[] = [];
  for (let n = 0; n < CHANGED; n += 1) oneOffs.push(await edits.addOneOff());
  // The simulator's median group is smaller than the university's: weekly classes bring it to its size.
  let weekly = 0;
  for (;;) {
    await refreshed(ctx, source);
    const count = (await loadPublishedResources(ctx, source, undefined))?.desired.length ?? 0;
    if (count >= MEDIAN_RESOURCES) break;
    for (let n = Math.ceil((MEDIAN_RESOURCES - count) / WEEKLY_OCCURRENCES); n > 0; n -= 1)
      await edits.addWeekly(++weekly);
  }
  const desired = (await loadPublishedResources(ctx, source, undefined))?.desired ?? [];

  // (a) The first push, as the connect flow starts it.
  const client = ctx.caldav.client({ username: USER, password: PASSWORD });
  const calendar = await client.makeCalendar(`${proxy.url}${USER}/`, SLUG, source, '#1E88E5');
  const { id } = await ctx.caldav.targets.create({
    source,
    secret: PASSWORD,
    calendarId: calendar.url,
    calendarOwned: true,
    calendarName: source,
    details: caldavDetailFields(calendar.url, {
      serverUrl: proxy.url,
      homeUrl: `${proxy.url}${USER}/`,
      username: USER,
      supportsSync: true,
    }),
    now: Date.now(),
  });
  const firstCounts = new Map(proxy.requests);
  const firstStarted = Date.now();
  const first = await pushed(ctx, id, source, 'connect');
  const firstMs = Date.now() - firstStarted;
  const firstRequests = delta(proxy, firstCounts);
  const folder = radicale.collectionDir(USER, SLUG);
  const files = (await readdir(folder)).filter((name) => name.endsWith('.ics'));
  const wanted = new Set(desired.map((resource) => `${resource.id}.ics`));
  const missing = [...wanted].filter((name) => !files.includes(name)).length;
  const extra = files.filter((name) => !wanted.has(name)).length;

  // (b) Ten one-off classes move to another slot of their day: ten changed occurrences.
  const before = await digests(ctx, source);
  for (const oneOff of oneOffs) await edits.moveSlot(oneOff);
  const changeCounts = new Map(proxy.requests);
  const changeStarted = Date.now();
  const refresh = await refreshed(ctx, source);
  await idle(ctx);
  const convergeMs = Date.now() - changeStarted;
  const after = await digests(ctx, source);
  const changed =
    [...after].filter(([uid, hash]) => before.get(uid) !== hash).length +
    [...before.keys()].filter((uid) => !after.has(uid)).length;
  const changeRequests = delta(proxy, changeCounts);
  const changeWrites = (changeRequests.PUT ?? 0) + (changeRequests.DELETE ?? 0);

  // (c) Nothing to do.
  const quietCounts = new Map(proxy.requests);
  const quietPush = await pushed(ctx, id, source, 'refresh');
  const quietReconcile = await pushed(ctx, id, source, 'reconcile');
  const quiet = delta(proxy, quietCounts);
  const stderr = worker.stderr().trim();
  return {
    'CALDAV_RATE_LIMIT (default, requests/s per host)': ctx.config.caldavRateLimit,
    source: `${source}: the simulator's median group (${entries} classes), ${weekly} weekly and ${CHANGED} one-off classes added`,
    'first push: desired resources': desired.length,
    'first push: resources in Radicale afterwards': files.length,
    'first push: missing / extra resources': `${missing} / ${extra}`,
    'first push: PUTs': firstRequests.PUT ?? 0,
    'first push: requests by method': JSON.stringify(firstRequests),
    'first push: connect → push done s': firstMs / 1000,
    'first push: push job duration s': Number(first.durationMs ?? 0) / 1000,
    'first push: requests/s': Number((sum(firstRequests) / (firstMs / 1000)).toFixed(1)),
    'first push: floor at CALDAV_RATE_LIMIT s': sum(firstRequests) / ctx.config.caldavRateLimit,
    [`change: ${CHANGED} one-off classes moved, changed occurrences`]: changed,
    'change: write requests (PUT + DELETE)': changeWrites,
    'change: write requests / changed occurrences': Number((changeWrites / Math.max(1, changed)).toFixed(2)),
    'change: push jobs fanned out': Number(refresh.pushJobs ?? 0),
    'change: refresh queued → calendar converged s': convergeMs / 1000,
    'nothing to do: writes of a refresh push / a reconcile push': `${quietPush.writes} / ${quietReconcile.writes}`,
    'nothing to do: PUT + DELETE seen': (quiet.PUT ?? 0) + (quiet.DELETE ?? 0),
    target: 'first push exact; 1.00 write per changed occurrence; 0 writes when nothing changed',
    ...(stderr === '' ? {} : { 'worker stderr': stderr.slice(0, 800) }),
  };
}

/** The simulator's group with the median number of classes. */
async function medianGroup(simulatorUrl: string): Promise<{ groupId: number; entries: number }> {
  const listing = JSON.parse((await rawRequest(`${simulatorUrl}/_sim/groups`)).body.toString()) as {
    groups: { id: number; entryCount: number }[];
  };
  const sorted = [...listing.groups].sort((a, b) => a.entryCount - b.entryCount);
  const median = sorted[Math.floor(sorted.length / 2)];
  if (!median) throw new Error('the simulator has no groups');
  return { groupId: median.id, entries: median.entryCount };
}

/** Refreshes a source (an admin resync) and waits for it; answers its result. */
async function refreshed(ctx: ServiceContext, source: SourceKey): Promise<Record<string, unknown>> {
  const id = await enqueueRefresh(ctx.queues, ctx.config, source, { reason: 'resync', now: Date.now() });
  const deadline = Date.now() + 120_000;
  for (;;) {
    const job = await ctx.queues.refresh.getJob(id);
    const state = job ? await job.getState() : 'unknown';
    if (job && state === 'failed') throw new Error(`refresh ${id} failed: ${job.failedReason}`);
    if (job && state === 'completed') return job.returnvalue as unknown as Record<string, unknown>;
    if (Date.now() > deadline) throw new Error(`refresh ${id} did not finish within 2 minutes (${state})`);
    await sleep(50);
  }
}

/** Waits until the refresh and CalDAV push queues have nothing waiting, delayed or running. */
async function idle(ctx: ServiceContext, timeoutMs = 600_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const [refresh, push] = await Promise.all([
      ctx.queues.refresh.getJobCounts(...PENDING),
      ctx.queues.pushQueue('caldav').getJobCounts(...PENDING),
    ]);
    if (PENDING.every((state) => (refresh[state] ?? 0) + (push[state] ?? 0) === 0)) return;
    if (Date.now() > deadline) throw new Error(`queues did not settle: ${JSON.stringify(push)}`);
    await sleep(50);
  }
}

/** Queues a push of the target and waits for it; answers its result (it must have synced). */
async function pushed(
  ctx: ServiceContext,
  target: string,
  source: SourceKey,
  reason: PushReason,
): Promise<PushJobResult & { writes?: number; durationMs?: number }> {
  const id = await enqueuePush(ctx.queues, 'caldav', target, source, reason);
  const deadline = Date.now() + 600_000;
  for (;;) {
    const job = await ctx.queues.pushQueue('caldav').getJob(id);
    const state = job ? await job.getState() : 'unknown';
    if (job && state === 'failed') throw new Error(`push ${id} failed: ${job.failedReason}`);
    if (job && state === 'completed') {
      const result = job.returnvalue as PushJobResult & { writes?: number; durationMs?: number };
      if ('skipped' in result) throw new Error(`push ${id} skipped: ${JSON.stringify(result)}`);
      return result;
    }
    if (Date.now() > deadline) throw new Error(`push ${id} did not finish within 10 minutes (${state})`);
    await sleep(50);
  }
}

/** The desired resources' digests by UID. */
async function digests(ctx: ServiceContext, source: SourceKey): Promise<Map<string, string>> {
  const published = await loadPublishedResources(ctx, source, undefined);
  return new Map((published?.desired ?? []).map((resource) => [resource.uid, resource.hash]));
}

/** Requests per method since `before`. */
function delta(proxy: DavFaultProxy, before: Map<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [method, count] of proxy.requests) {
    const n = count - (before.get(method) ?? 0);
    if (n > 0) out[method] = n;
  }
  return out;
}

const sum = (counts: Record<string, number>) => Object.values(counts).reduce((total, n) => total + n, 0);
