/**
 * A real worker process through Redis faults, on a redis-server of the test's own (AOF on): killed with
 * `kill -9` and started again on the same port and data folder, full (`maxmemory` under `noeviction`), and
 * paused (`SIGSTOP`). The worker is never restarted: it must carry on by itself, and nothing stored is lost.
 */
import type { ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { enqueueRefresh } from '../../src/jobs/queues.ts';
import { requestResync } from '../../src/jobs/resync.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { type RunningSimulator, startSimulator } from '../../src/simulator/index.ts';
import { signUp } from '../../src/subscriptions/personal.ts';
import { until } from '../../testkit/poll.ts';
import { type RedisProcess, startRedisProcess } from '../../testkit/redis-process.ts';
import { testContext } from '../support/service.ts';
import { startWorkerProcess } from '../support/spawn-worker.ts';
import { storedIcs } from '../support/stored-feed.ts';
import { type SimControl, simControl } from '../upstream/sim-control.ts';
import { waitForJob } from './helpers.ts';

let sim: RunningSimulator;
let control: SimControl;
let redis: RedisProcess | undefined;
let closeContext: (() => Promise<void>) | undefined;
const children: ChildProcess[] = [];

beforeAll(async () => {
  sim = await startSimulator({ port: 0, seed: 11, groups: 3, employees: 2, users: 2 });
  control = simControl(sim.url);
});
afterAll(() => sim?.close());
afterEach(async () => {
  redis?.resume();
  for (const child of children.splice(0))
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await closeContext?.().catch(() => undefined);
  await redis?.close();
  redis = undefined;
  closeContext = undefined;
});

/** A worker's process and everything it logged (JSON lines on stderr). */
interface Worker {
  child: ChildProcess;
  log: () => { level: number; msg: string; err?: { type?: string; message?: string } }[];
}

/** Its own Redis, a context on it and one worker process on the same prefix. */
async function start(): Promise<{ context: ServiceContext; worker: Worker; server: RedisProcess }> {
  const server = await startRedisProcess();
  redis = server;
  const opened = await testContext({ REDIS_URL: server.url, UNIVERSITY_API_URL: sim.url });
  closeContext = opened.close;
  let output = '';
  const { child } = await startWorkerProcess(
    {
      REDIS_URL: server.url,
      REDIS_PREFIX: opened.context.config.redisPrefix,
      UNIVERSITY_API_URL: sim.url,
      LOG_LEVEL: 'info',
      REFRESH_ATTEMPTS: '3',
      REFRESH_BACKOFF: '200ms',
    },
    (started) => {
      children.push(started);
      started.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    },
  );
  const log = () =>
    output
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line));
  return { context: opened.context, worker: { child, log }, server };
}

/** A weekly class for `groupId` from today on, named `subject`: a change the next refresh must publish. */
async function addClass(groupId: number, subject: string): Promise<void> {
  const [teacher] = await control.employees();
  const today = new Date();
  const day = (offset: number) => {
    const date = new Date(today.getTime() + offset * 86_400_000);
    const pad = (value: number) => String(value).padStart(2, '0');
    return `${pad(date.getUTCDate())}.${pad(date.getUTCMonth() + 1)}.${String(date.getUTCFullYear()).slice(2)}`;
  };
  await control.addEntry({
    subject_name: subject,
    subject_kind_name: 'семинар',
    teacher_id: teacher?.id,
    day_week_schedule: ((today.getUTCDay() + 6) % 7) + 1,
    type_week_schedule: 0,
    begin_time_schedule: '19:00',
    end_time_schedule: '20:30',
    start_day_schedule: day(0),
    finish_day_schedule: day(27),
    num_auditorium_schedule: '1205',
    note_schedule: '',
    groupIds: [groupId],
  });
}

async function firstGroup(): Promise<number> {
  const [group] = await control.groups();
  if (group === undefined) throw new Error('the simulator has no group');
  return group.id;
}

async function feedText(context: ServiceContext, source: string): Promise<string> {
  return storedIcs(context.feeds, source);
}

/** Keys that do not expire: what the service stores for good (locks, heartbeats and rate windows expire). */
async function lastingKeys(url: string, prefix: string): Promise<string[]> {
  const admin = new Redis(url);
  try {
    // BullMQ's own bookkeeping (the queues' keys, e.g. the priority counter `q:refresh:pc`) comes and goes with
    // the jobs: what must survive is the service's data.
    const keys = (await admin.keys(`${prefix}:*`)).filter((key) => !key.startsWith(`${prefix}:q:`));
    const ttls = await Promise.all(keys.map((key) => admin.pttl(key)));
    return keys.filter((_, index) => ttls[index] === -1).sort();
  } finally {
    admin.disconnect();
  }
}

/**
 * Makes Redis write out every write it took so far (Redis 7.0 has no WAITAOF): under `appendfsync always`, the
 * next write flushes the whole AOF buffer before its reply, and what is written survives a `kill -9` of Redis.
 */
async function onDisk(url: string): Promise<void> {
  const admin = new Redis(url);
  try {
    await admin.config('SET', 'appendfsync', 'always');
    await admin.set('test:flushed', '1');
  } finally {
    admin.disconnect();
  }
}

/** Resyncs `source` as the admin does, retrying while the context's own connection reconnects. */
async function resync(context: ServiceContext, source: string): Promise<string> {
  const ids = await until(
    () => requestResync(context, { source }).catch(() => undefined),
    (queued) => queued !== undefined,
    60_000,
  );
  const [id] = ids ?? [];
  if (id === undefined) throw new Error('no job queued');
  return id;
}

describe('Redis killed with the worker running, then started again from its AOF', () => {
  it('the same worker refreshes again, the feed changes, and no lasting key is lost', async () => {
    const { context, worker, server } = await start();
    const group = await firstGroup();
    const source = `group:${group}`;
    const [user] = await control.users();
    if (user === undefined) throw new Error('the simulator has no user');
    const signedUp = await signUp(context, user.token);
    expect((await waitForJob(context, await resync(context, source), 60_000)).state).toBe('completed');
    const personal = signedUp.subscription.source;
    await until(
      () => context.feeds.exists(personal as never),
      (exists) => exists,
      60_000,
    );
    const before = await lastingKeys(server.url, context.config.redisPrefix);
    expect(before.length).toBeGreaterThan(0);
    expect(before).toContain(`${context.config.redisPrefix}:subscription:${signedUp.subscription.id}`);

    // What was written is written out before the kill: `appendfsync everysec` may hold up to two seconds of
    // writes back when the disk is slow (a loaded machine), and losing those is the policy, not what is tested.
    await onDisk(server.url);
    await server.kill();
    await server.restart();
    const after = await lastingKeys(server.url, context.config.redisPrefix);
    expect(after).toEqual(expect.arrayContaining(before));

    expect(await feedText(context, source)).not.toContain('Семинар после перезапуска');
    await addClass(group, 'Семинар после перезапуска');
    const id = await resync(context, source);
    expect((await waitForJob(context, id, 90_000)).state).toBe('completed');
    expect(await feedText(context, source)).toContain('Семинар после перезапуска');
    expect(worker.child.exitCode).toBeNull();
    expect(worker.child.signalCode).toBeNull();
  }, 180_000);
});

describe('Redis full (maxmemory under noeviction) while the worker refreshes', () => {
  it('fails the refresh once with a typed error, keeps the feed, and refreshes again once memory is raised', async () => {
    const { context, worker, server } = await start();
    const group = (await control.groups())[1]?.id ?? (await firstGroup());
    const source = `group:${group}`;
    expect((await waitForJob(context, await resync(context, source), 60_000)).state).toBe('completed');
    const good = await feedText(context, source);
    const keysBefore = await lastingKeys(server.url, context.config.redisPrefix);
    await addClass(group, 'Семинар при полной памяти');
    // The refresh is queued, then Redis fills up while the worker fetches (the university is slow this once).
    await control.fault({ endpoint: '*', kind: 'latency', latencyMs: 1_500, times: 1 });
    const id = await enqueueRefresh(context.queues, context.config, source, { reason: 'resync', now: Date.now() });
    await until(
      async () => (await context.queues.refresh.getJob(id))?.isActive(),
      (active) => active === true,
      30_000,
    );
    const admin = new Redis(server.url);
    try {
      await admin.config('SET', 'maxmemory', '1');
      const full = (line: ReturnType<Worker['log']>[number]) => line.err?.type === 'RedisFullError';
      await until(
        async () => worker.log().filter(full),
        (lines) => lines.length >= 2,
        60_000,
      );
      // Time for a crash loop or a flood to show: BullMQ alone logged some 5,000 refusals a second.
      await new Promise((done) => setTimeout(done, 5_000));
      const problems = worker.log().filter((line) => line.level >= 40);
      // Each said once, typed: the guard that paused the workers, the refresh that could not store its feed, and
      // the heartbeat.
      const said = problems.filter(full).map((line) => line.msg);
      expect(new Set(said).size).toBe(said.length);
      expect(said).toEqual(
        expect.arrayContaining([
          expect.stringMatching(/^Redis is full .*workers paused/),
          expect.stringMatching(/^refresh could not use Redis/),
        ]),
      );
      expect(problems.length).toBeLessThan(6);
      expect(await feedText(context, source)).toBe(good);
      expect(await lastingKeys(server.url, context.config.redisPrefix)).toEqual(expect.arrayContaining(keysBefore));
      await admin.config('SET', 'maxmemory', '0');
      const again = await resync(context, source);
      expect((await waitForJob(context, again, 90_000)).state).toBe('completed');
      expect(await feedText(context, source)).toContain('Семинар при полной памяти');
      expect(worker.log().some((line) => line.msg === 'Redis has room again: workers resumed')).toBe(true);
      expect(worker.child.exitCode).toBeNull();
    } finally {
      admin.disconnect();
    }
  }, 180_000);
});

describe('Redis paused (SIGSTOP) while the worker runs', () => {
  it('the worker carries on after SIGCONT, without a restart', async () => {
    const { context, worker, server } = await start();
    const group = (await control.groups())[2]?.id ?? (await firstGroup());
    const source = `group:${group}`;
    expect((await waitForJob(context, await resync(context, source), 60_000)).state).toBe('completed');

    server.pause();
    // Longer than a command timeout and than the worker's lock: heartbeats and lock renewals time out meanwhile.
    await new Promise((done) => setTimeout(done, 5_000));
    server.resume();

    await addClass(group, 'Семинар после паузы');
    expect((await waitForJob(context, await resync(context, source), 90_000)).state).toBe('completed');
    expect(await feedText(context, source)).toContain('Семинар после паузы');
    expect(worker.child.exitCode).toBeNull();
    expect(worker.child.signalCode).toBeNull();
    // Clear, and not a flood: a handful of lines about the pause at most.
    expect(worker.log().filter((line) => line.level >= 40).length).toBeLessThan(10);
  }, 180_000);
});
