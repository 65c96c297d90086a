/**
 * Writes the upgrade fixture of the code checked out: runs this version's api and workers (in process, at a
 * fixed service clock) against the bundled simulator, the fake Google and a redis-server of its own, publishes
 * a group, a teacher and a personal feed, makes a change log, a stale feed and a Google push target, then
 * exports every key under the prefix with what the api answered. The upgrade test restores it under later code
 * (docs/redis.md#upgrading-the-stored-format). Run it when the stored format is about to change, before the
 * change, on the commit that writes the old format:
 *
 *     npx node scripts/upgrade-fixture.ts    # writes test/fixtures/upgrade/redis-<short commit>.json.gz
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { Redis } from 'ioredis';
import { loadConfig } from '../src/config.ts';
import { buildApp } from '../src/http/app.ts';
import { startWorkers } from '../src/jobs/workers.ts';
import { silentLogger } from '../src/logger.ts';
import type { ServiceContext } from '../src/runtime/context.ts';
import { openServiceContext } from '../src/runtime/service-context.ts';
import { startSimulator } from '../src/simulator/index.ts';
import { connectGoogleTarget } from '../src/subscriptions/google-connect.ts';
import type { SourceKey } from '../src/timetable/source.ts';
import { exportPrefix } from '../test/deploy/redis-export.ts';
import {
  applyEdit,
  askFeed,
  CODINGS,
  FIXTURE_DIR,
  fixturePath,
  type ServedFeed,
  type SimulatorEdit,
  type UpgradeFixture,
  writeFixture,
} from '../test/deploy/upgrade-fixture.ts';
import { startFakeGoogle } from '../testkit/fake-google/index.ts';
import { until } from '../testkit/poll.ts';
import { startRedisProcess } from '../testkit/redis-process.ts';

const SIMULATOR = { seed: 1, referenceDate: '2025-10-01T00:00:00.000Z', groups: 12, employees: 12, users: 3 };
/** The service clock at the first publication; each later step moves it on by an hour. */
const START = Date.parse('2025-10-01T06:00:00Z');
const HOUR = 3_600_000;

const commit = execFileSync('git', ['rev-parse', '--short=7', 'HEAD'], { encoding: 'utf8' }).trim();
const redisProcess = await startRedisProcess();
const simulator = await startSimulator({ ...SIMULATOR, referenceDate: new Date(SIMULATOR.referenceDate), port: 0 });
const fake = await startFakeGoogle({ seed: 7 });
const env: Record<string, string> = {
  REDIS_PREFIX: 'tts',
  SECRET_KEY: randomBytes(32).toString('hex'),
  ADMIN_TOKEN: randomBytes(24).toString('hex'),
  REFRESH_ATTEMPTS: '2',
  REFRESH_BACKOFF: '50ms',
  CONFIRM_DELAY: '200ms',
  LOG_LEVEL: 'silent',
};
const clock = { now: START };
const config = loadConfig({
  ...env,
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
  role: 'fixture',
  now: () => clock.now,
});
const ctx = opened.context;
const workers = await startWorkers(ctx, redisProcess.url, { lockDurationMs: 5_000, stalledIntervalMs: 1_000 });
const app = await buildApp(ctx, { logger: silentLogger() });
const admin = { authorization: `Bearer ${env.ADMIN_TOKEN}` };

/** GETs a feed until it is published; answers what was served in each coding. */
async function served(path: string): Promise<ServedFeed> {
  const ready = await until(
    () => askFeed(app, path, 'identity'),
    (asked) => asked.status === 200,
  );
  if (ready.status !== 200) throw new Error(`${path}: ${ready.status}`);
  const answers: Partial<ServedFeed['answers']> = {};
  for (const coding of CODINGS) {
    const asked = await askFeed(app, path, coding);
    if (asked.status !== 200 || (coding !== 'identity' && asked.coding !== coding))
      throw new Error(`${path} in ${coding}: ${asked.status} ${asked.coding}`);
    answers[coding] = asked.answer;
  }
  return { path, answers: answers as ServedFeed['answers'] };
}

/** Queues a resync through the admin API and waits until its job ended; answers the job's state. */
async function resync(payload: { source: SourceKey } | { subscription: string }): Promise<string> {
  const queued = await app.inject({ method: 'POST', url: '/admin/resync', headers: admin, payload });
  const [id] = queued.json<{ jobs: string[] }>().jobs;
  const state = async () => (await app.inject({ method: 'GET', url: `/admin/jobs/${id}`, headers: admin })).json();
  const ended = await until(state, (job: { state?: string }) => job.state === 'completed' || job.state === 'failed');
  return String(ended.state);
}

/** Waits until no refresh or push is queued or running and no push is owed. */
async function settled(context: ServiceContext): Promise<void> {
  const busy = async () => {
    const refresh = await context.queues.refresh.getJobCounts('active', 'wait', 'prioritized');
    const push = await context.queues.pushQueue('google').getJobCounts('active', 'wait', 'prioritized', 'delayed');
    const owed = await context.redis.scard(context.keys.pushOwed);
    return [...Object.values(refresh), ...Object.values(push), owed].reduce((sum, count) => sum + count, 0);
  };
  if ((await until(busy, (count) => count === 0, 20_000)) !== 0) throw new Error('the queues did not settle');
}

async function simJson<T>(path: string): Promise<T> {
  return (await fetch(`${simulator.url}${path}`)).json() as Promise<T>;
}

async function build(): Promise<Omit<UpgradeFixture, 'madeBy' | 'keys'>> {
  // Small sources keep the fixture small: the user whose group has the fewest classes, two other small groups.
  const { groups } = await simJson<{ groups: { id: number; entryCount: number }[] }>('/_sim/groups');
  const { users } = await simJson<{ users: { token: string; groupId: number }[] }>('/_sim/users');
  const { employees } = await simJson<{ employees: { id: number }[] }>('/_sim/employees');
  const bySize = [...groups].sort((a, b) => a.entryCount - b.entryCount || a.id - b.id);
  const user = [...users].sort(
    (a, b) => bySize.findIndex((g) => g.id === a.groupId) - bySize.findIndex((g) => g.id === b.groupId),
  )[0];
  const [groupId, staleId] = bySize.filter((g) => g.id !== user?.groupId && g.entryCount >= 6).map((g) => g.id);
  const teacherId = employees[0]?.id;
  if (!user || groupId === undefined || staleId === undefined || teacherId === undefined)
    throw new Error('the simulator has too few users, groups or employees');
  const sources = {
    group: `group:${groupId}`,
    teacher: `employee:${teacherId}`,
    personal: '',
    stale: `group:${staleId}`,
  };
  const paths: Record<string, string> = {
    [sources.group]: `/feeds/groups/${groupId}.ics`,
    [sources.teacher]: `/feeds/employees/${teacherId}.ics`,
    [sources.stale]: `/feeds/groups/${staleId}.ics`,
  };

  // First requests publish the public feeds (the demand path), a sign-up the personal one with its study plan.
  for (const path of Object.values(paths)) await served(path);
  const signUp = await app.inject({ method: 'POST', url: '/api/subscriptions', payload: { credential: user.token } });
  if (signUp.statusCode !== 201) throw new Error(`sign-up: ${signUp.statusCode} ${signUp.body}`);
  const { id: subscriptionId, source: personal, token: feedToken } = signUp.json<Record<string, string>>();
  if (!subscriptionId || !personal || !feedToken) throw new Error(`sign-up answered ${signUp.body}`);
  sources.personal = personal;
  paths[personal] = `/feeds/personal/${feedToken}.ics`;
  await served(paths[personal]);

  // A Google calendar pushed from the group, before its changes (each then pushes too).
  const { user: googleUser, refreshToken } = fake.addUser({ user: 'upgrade-user', refreshToken: 'upgrade-refresh' });
  const target = await connectGoogleTarget(ctx, { source: sources.group, refreshToken, googleUser });
  await settled(ctx);

  // A change log of three changes: a moved class, a removed one (kept cancelled), an added one.
  const { entries } = await ctx.upstream.groupSchedule(groupId);
  const ongoing = entries.filter((entry) => entry.startDate < '2025-09-20' && entry.finishDate > '2025-10-20');
  const [moved, removed] = ongoing;
  if (!moved || !removed) throw new Error(`${sources.group} has too few classes running through October`);
  const edits: SimulatorEdit[] = [
    {
      method: 'PATCH',
      path: `/_sim/entries/${moved.id}`,
      body: { begin_time_schedule: '18:00', end_time_schedule: '19:30' },
    },
    { method: 'DELETE', path: `/_sim/entries/${removed.id}` },
    {
      method: 'POST',
      path: '/_sim/entries',
      body: {
        groupIds: [groupId],
        subject_name: 'Extra seminar',
        start_day_schedule: '2025-10-15',
        finish_day_schedule: '2025-10-15',
        day_week_schedule: 3,
        time_interval_id: 2,
      },
    },
  ];
  for (const edit of edits) {
    clock.now += HOUR;
    await applyEdit(simulator.url, edit);
    if ((await resync({ source: sources.group })) !== 'completed') throw new Error(`refresh after ${edit.path} failed`);
    await settled(ctx);
  }
  // Classes are shared (a teacher's, several groups'): the other feeds are refreshed too, so that every stored
  // snapshot is of the final timetable, the one the upgrade test's simulator serves.
  for (const request of [{ source: sources.teacher }, { source: sources.stale }, { subscription: subscriptionId }])
    if ((await resync(request)) !== 'completed') throw new Error(`refresh of ${JSON.stringify(request)} failed`);
  await settled(ctx);

  // The stale group: its refreshes fail until the last attempt gives up and the feed is marked stale.
  clock.now += HOUR;
  const fault = await fetch(`${simulator.url}/_sim/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ endpoint: 'groupSchedule', kind: 'status', status: 500 }),
  });
  if (!fault.ok) throw new Error(`fault: ${fault.status}`);
  if ((await resync({ source: sources.stale })) !== 'failed') throw new Error('the failing refresh did not fail');
  await fetch(`${simulator.url}/_sim/faults`, { method: 'DELETE' });
  await settled(ctx);

  // What this version answers, read last so that every answer is of the final state.
  const feeds: Record<string, ServedFeed> = {};
  for (const [source, path] of Object.entries(paths)) feeds[source] = await served(path);
  if (!feeds[sources.stale]?.answers.identity.stale) throw new Error(`${sources.stale} is not served stale`);
  const variantPath = `${paths[sources.group]}?exclude=${encodeURIComponent(moved.kind)}`;
  const variant = await served(variantPath);
  const changes: Record<string, unknown> = {};
  for (const source of Object.values(sources)) {
    const answer = await app.inject({ method: 'GET', url: `/admin/sources/${source}/changes`, headers: admin });
    changes[source] = answer.json();
  }
  const table = (await app.inject({ method: 'GET', url: '/admin/sources', headers: admin })).json<unknown>();
  const subscription = (
    await app.inject({
      method: 'GET',
      url: `/api/subscriptions/${subscriptionId}`,
      headers: { authorization: `Bearer ${feedToken}` },
    })
  ).json<Record<string, unknown>>();
  return {
    env,
    clockMs: clock.now,
    simulator: SIMULATOR,
    edits,
    sources,
    personal: { subscriptionId, feedToken },
    google: { targetId: target.id, calendarId: target.calendarId },
    answers: { feeds, variant, changes, sources: table, subscription },
  };
}

try {
  let scenario: Awaited<ReturnType<typeof build>>;
  try {
    scenario = await build();
  } finally {
    // The old version stops as an upgrade stops it: HTTP first, then workers, then its connections.
    await app.close();
    await workers.close();
    await opened.close();
  }
  const redis = new Redis(redisProcess.url);
  try {
    const info = await redis.info('server');
    const redisVersion = /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown';
    const keys = await exportPrefix(redis, config.redisPrefix);
    await mkdir(FIXTURE_DIR, { recursive: true });
    const path = fixturePath(commit);
    await writeFixture(path, { madeBy: { commit, redisVersion }, ...scenario, keys });
    console.log(`wrote ${path}: ${keys.length} keys`);
  } finally {
    redis.disconnect();
  }
} finally {
  await simulator.close();
  await fake.close();
  await redisProcess.close();
}
