/**
 * Redis itself failing under a running service: killed (`kill -9`) in the middle of a push and started again
 * from its AOF, paused (`SIGSTOP`), and full (`maxmemory` under `noeviction`). The api keeps serving the feeds
 * it has; the worker resumes by itself; nothing acknowledged is lost.
 */
import { afterEach, expect, it } from 'vitest';
import { Cleanup, rawRequest, sleep } from '../../testkit/processes.ts';
import { converge, googleErrors, outcome, storedCounts } from './support/checks.ts';
import { isRunning, Rig } from './support/rig.ts';

let cleanup: Cleanup;
afterEach(() => cleanup.run());

const newTally = () => ({
  ok: 0,
  stale: 0,
  other: 0,
  statuses: new Set<number>(),
  failed: new Set<string>(),
  /** Personal feeds answered, how many of them marked stale, and the slowest answer's milliseconds. */
  personal: { answered: 0, stale: 0, slowestMs: 0 },
});

/** Fetches every feed once; counts 200s, stale 200s and other answers. */
async function fetchAll(rig: Rig, tally: ReturnType<typeof newTally>) {
  for (const source of rig.allSources()) {
    const started = performance.now();
    const answer = await rawRequest(rig.feedUrl(source)).catch(() => ({ status: 0 }));
    const stale = 'headers' in answer && answer.headers['x-timetable-stale'] !== undefined;
    tally.statuses.add(answer.status);
    if (answer.status !== 200) tally.failed.add(`${source.split(':')[0]} ${answer.status}`);
    if (answer.status !== 200) tally.other += 1;
    else if (stale) tally.stale += 1;
    else tally.ok += 1;
    if (!source.startsWith('personal:')) continue;
    tally.personal.answered += 1;
    if (answer.status === 200 && stale) tally.personal.stale += 1;
    tally.personal.slowestMs = Math.max(tally.personal.slowestMs, Math.round(performance.now() - started));
  }
}

/** A tally as an outcome line prints it. */
function summary(tally: ReturnType<typeof newTally>) {
  const { ok, stale, other, personal } = tally;
  return { ok, stale, other, statuses: [...tally.statuses], failed: [...tally.failed], personal };
}

/** What a personal feed is answered within, end to end, however Redis fails (the api answers from memory). */
const PERSONAL_WITHIN_MS = 1_500;

it('Redis kill -9 mid-push, restarted from its AOF: feeds served throughout, worker resumes, nothing lost', async () => {
  cleanup = new Cleanup();
  const rig = await Rig.start(cleanup, { groups: 3, targets: 1, personal: 2 });
  expect((await converge(rig)).verdict).toEqual({ feeds: [], stale: 0, calendars: [] });
  // More than appendfsync everysec's second: what exists now is on disk.
  await sleep(1_500);
  const before = await storedCounts(rig);
  rig.fake.latency(100);
  await rig.connect(rig.sources[2] ?? '');
  await sleep(2_000);
  await rig.redis.kill();
  const during = newTally();
  const downUntil = Date.now() + 5_000;
  while (Date.now() < downUntil) await fetchAll(rig, during);
  const readyz = await rawRequest(`${rig.api.url}/readyz`).catch(() => ({ status: 0, body: Buffer.alloc(0) }));
  await rig.redis.restart();
  const restartedAt = Date.now();
  rig.fake.latency(0);
  const { verdict } = await converge(rig, 150_000);
  const after = newTally();
  await fetchAll(rig, after);
  outcome('redis-kill-restart', {
    feedsDuringOutage: summary(during),
    readyzDuringOutage: `${readyz.status} ${readyz.body.toString().slice(0, 60)}`,
    exactAfterRestartMs: Date.now() - restartedAt,
    duplicates: googleErrors(rig).duplicates,
    exact: verdict,
  });
  // Every feed served before the outage, personal ones included, is served from the api's memory, marked stale;
  // personal ones within the bound, never waiting for their Redis read to fail.
  expect(during.failed).toEqual(new Set());
  expect(during.stale).toBeGreaterThan(0);
  expect(during.personal.stale).toBe(during.personal.answered);
  expect(during.personal.slowestMs).toBeLessThan(PERSONAL_WITHIN_MS);
  expect(verdict).toEqual({ feeds: [], stale: 0, calendars: [] });
  expect(googleErrors(rig).duplicates).toBe(0);
  expect(await storedCounts(rig)).toEqual({ ...before, targets: before.targets + 1 });
});

it('Redis paused 20 s (SIGSTOP): feeds served, no crash, everything resumes without a restart', async () => {
  cleanup = new Cleanup();
  const rig = await Rig.start(cleanup, { groups: 3, targets: 1, personal: 1 });
  expect((await converge(rig)).verdict).toEqual({ feeds: [], stale: 0, calendars: [] });
  const before = await storedCounts(rig);
  const pids = { api: rig.api.pid, worker: rig.worker.pid };
  await rig.dropOneClassEach();
  rig.redis.pause();
  const during = newTally();
  const pausedUntil = Date.now() + 20_000;
  while (Date.now() < pausedUntil) await fetchAll(rig, during);
  rig.redis.resume();
  const resumedAt = Date.now();
  await rig.resyncAll();
  const { verdict } = await converge(rig, 150_000);
  const alive = [pids.api, pids.worker].every(isRunning);
  outcome('redis-pause-20s', {
    feedsDuringPause: summary(during),
    exactAfterResumeMs: Date.now() - resumedAt,
    processesAlive: alive,
    exact: verdict,
  });
  expect(alive).toBe(true);
  // As with Redis down: every feed, personal ones included, is served from memory while Redis is paused. A pause
  // closes no connection, so the cache may keep answering public feeds from its trusted entries, unmarked, until
  // a read times out; a personal feed's token read that Redis does not answer within a second marks its feed
  // stale at once, and the next ones do not wait.
  expect(during.failed).toEqual(new Set());
  expect(during.personal.stale).toBe(during.personal.answered);
  expect(during.personal.slowestMs).toBeLessThan(PERSONAL_WITHIN_MS);
  expect(verdict).toEqual({ feeds: [], stale: 0, calendars: [] });
  expect(await storedCounts(rig)).toEqual(before);
});

it('Redis full (maxmemory, noeviction): writes refused clearly, nothing stored lost, recovery without a restart', async () => {
  cleanup = new Cleanup();
  const rig = await Rig.start(cleanup, { groups: 3, targets: 1, personal: 1 });
  expect((await converge(rig)).verdict).toEqual({ feeds: [], stale: 0, calendars: [] });
  const before = await storedCounts(rig);
  const pids = { api: rig.api.pid, worker: rig.worker.pid };
  // Full: the limit set just under what is used, as when ballast from elsewhere filled the instance.
  const used = Number(/used_memory:(\d+)/.exec(await rig.ctx.redis.info('memory'))?.[1]);
  await rig.ctx.redis.config('SET', 'maxmemory', String(used - 1024));
  await rig.dropOneClassEach();
  await rig.resyncAll();
  const signUp = await rawRequest(`${rig.api.url}/api/subscriptions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ credential: rig.subscriptions[0]?.credential }),
  });
  const during = newTally();
  const fullUntil = Date.now() + 10_000;
  while (Date.now() < fullUntil) await fetchAll(rig, during);
  await rig.ctx.redis.config('SET', 'maxmemory', '0');
  const freedAt = Date.now();
  const { verdict } = await converge(rig, 150_000);
  const alive = [pids.api, pids.worker].every(isRunning);
  outcome('redis-full', {
    signUpWhileFull: signUp.status,
    retryAfter: signUp.headers['retry-after'],
    feedsWhileFull: summary(during),
    exactAfterFreedMs: Date.now() - freedAt,
    processesAlive: alive,
    exact: verdict,
  });
  expect(alive).toBe(true);
  expect(during.other).toBe(0);
  expect(verdict).toEqual({ feeds: [], stale: 0, calendars: [] });
  expect(await storedCounts(rig)).toEqual(before);
});
