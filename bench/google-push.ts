/**
 * Benchmark of Google push (its measures: "Google API write calls per sync divided by the number of changed
 * occurrences — target exactly 1.00, and 0 writes when nothing changed; a first push of 500 events against
 * the fake's 600/min/user quota provokes no quota error").
 *
 * Setup: a private redis-server; the simulator and the fake Google (testkit/fake-google: its default quota of
 * 600 requests per minute per user, 30 ms latency on every answer, like a real API) in this process; one
 * `timetable-sync worker` child process with the Google settings pointing at the fake and the DEFAULT budget
 * (GOOGLE_USER_RATE_LIMIT 500/min, GOOGLE_RATE_LIMIT 100/s, PUSH_CONCURRENCY 4). A child process rather
 * than workers in this process: it is how the service runs, configured by its environment alone, and it
 * reaches "Google" only over HTTP; this process's inspection of the fake cannot delay its pushes.
 * This process connects the target (`connectGoogleTarget`, as the admin API does: it creates the calendar, queues
 * the first push) and drives the simulator.
 *
 * The group is the simulator's largest, grown with weekly classes to at least 1,000 confirmed occurrences:
 * 500 events make about 502 requests, which fit within 600 in any minute however fast they go, so they would
 * prove nothing about pacing. 1,000 take about two minutes at the default 500/min; sent unpaced (4 requests
 * in flight, 30 ms each: about 130/s) the quota would refuse everything after the 600th of the first minute.
 *
 * Figures: (a) the first push: events written, write calls, quota errors and 403/429 answers (must be 0),
 * duration, achieved requests/min, the busiest minute the fake saw; (b) rounds of timetable changes, each
 * refresh → push: write calls (the fake's counters) / changed occurrences (the fake's calendar compared
 * before and after: inserted + patched + deleted; also what the feed's change record implies), which must be
 * exactly 1.00; (c) a resync with nothing changed, a push with nothing to do, a reconcile push: 0 writes.
 * After every round the calendar must equal what the feed shows exactly: its confirmed classes, and its
 * cancelled ones titled with the cancelled-title prefix (a cancellation is a title patch; the delete comes when
 * the class leaves the feed). Every class a round edits or adds is still to come: ended ones are history,
 * which no refresh rewrites. The last round brings back the classes cancelled in an earlier one, a patch of
 * their retitled events (bench/RESULTS.md says what it cost when a cancellation was a delete).
 */
import { join } from 'node:path';
import type { ServiceContext } from '../src/runtime/context.ts';
import { connectGoogleTarget } from '../src/subscriptions/google-connect.ts';
import { calendarState, mismatches } from '../testkit/calendar-diff.ts';
import { type FakeGoogle, startFakeGoogle } from '../testkit/fake-google/index.ts';
import {
  Cleanup,
  privateRedis,
  privateSimulator,
  serviceEnvironment,
  spawnRole,
  tempDir,
} from '../testkit/processes.ts';
import type { OneOff } from '../testkit/timetable-edits.ts';
import { openBenchContext } from './support/bench-context.ts';
import { CpuMeter } from './support/cpu.ts';
import { type PushGroup, prepareGroup } from './support/push-group.ts';
import {
  countsDelta,
  describeRun,
  forbiddenAnswers,
  pushRunsSince,
  RequestSampler,
  settle,
  syncCounts,
} from './support/push-phase.ts';
import { desiredFor, measureRound, measureSteady, methods, type PushBench, type Round } from './support/push-rounds.ts';

const LATENCY_MS = 30;
const MIN_OCCURRENCES = 1_000;
/** Changes per round (each kind's list in a change record holds up to 50). */
const PER_ROUND = 10;

/** Runs the google-push benchmark and returns its figures. */
export async function runGooglePushBenchmark(): Promise<Record<string, number | string>> {
  const cleanup = new Cleanup();
  try {
    return await measure(cleanup);
  } finally {
    await cleanup.run();
  }
}

async function measure(cleanup: Cleanup): Promise<Record<string, number | string>> {
  const dir = await tempDir(cleanup, 'push');
  const redisUrl = await privateRedis(cleanup, join(dir, 'redis'));
  const simulator = await privateSimulator(cleanup);
  const fake = await startFakeGoogle();
  cleanup.add('fake google', fake.close);
  fake.latency(LATENCY_MS);
  const { refreshToken } = fake.addUser();
  const env = { ...serviceEnvironment(redisUrl, simulator.url), ...googleEnvironment(fake) };
  const worker = await spawnRole(cleanup, 'worker', env, dir);
  const ctx = openBenchContext(cleanup, env, redisUrl);
  const group = await prepareGroup(ctx, simulator.url, MIN_OCCURRENCES, PER_ROUND);
  const sampler = new RequestSampler(fake);
  sampler.start();
  cleanup.add('sampler', async () => sampler.stop());
  const first = await firstPush(ctx, fake, group, refreshToken);
  const bench: PushBench = {
    ctx,
    fake,
    source: group.source,
    targetId: first.targetId,
    calendarId: first.calendarId,
    edits: group.edits,
  };
  const ratios: number[] = [];
  let figures: Record<string, number | string> = {};
  for (const [index, round] of roundsFor(group).entries()) {
    const measured = await measureRound(bench, `round ${index + 1}`, round);
    ratios.push(measured.ratio);
    figures = { ...figures, ...measured.figures };
  }
  const steady = await measureSteady(bench);
  sampler.stop();
  const total = fake.counts();
  const stderr = worker.stderr().trim();
  return {
    'fake Google latency ms': LATENCY_MS,
    'GOOGLE_USER_RATE_LIMIT (default)': ctx.config.googleUserRateLimit,
    ...first.figures,
    ...figures,
    'write calls / changed occurrences, every round': ratios.map((ratio) => ratio.toFixed(2)).join(', '),
    ...steady,
    'whole run: API requests': total.total,
    'whole run: quota errors': total.quotaErrors,
    'whole run: error answers': JSON.stringify(total.errors),
    'whole run: most API requests within any 60 s (sampled every 100 ms)': sampler.maxInWindow(60_000),
    target:
      'first push: 0 quota errors, 0 403/429; every round exactly 1.00 write calls per changed occurrence; 0 writes when nothing changed',
    ...(stderr === '' ? {} : { 'worker stderr': stderr.slice(0, 800) }),
  };
}

/** The Google settings of the service, pointing at the fake; the budget settings are left at their defaults. */
function googleEnvironment(fake: FakeGoogle): Record<string, string> {
  return {
    GOOGLE_CLIENT_ID: fake.clientId,
    GOOGLE_CLIENT_SECRET: fake.clientSecret,
    GOOGLE_API_ROOT_URL: fake.rootUrl,
    GOOGLE_OAUTH_TOKEN_URL: fake.tokenUrl,
    GOOGLE_OAUTH_AUTH_URL: fake.authUrl,
  };
}

/** Connects the target (its calendar is created, its first push queued) and waits for every push to end. */
async function firstPush(
  ctx: ServiceContext,
  fake: FakeGoogle,
  group: PushGroup,
  refreshToken: string,
): Promise<{ figures: Record<string, number | string>; targetId: string; calendarId: string }> {
  const before = fake.counts();
  const cpu = new CpuMeter();
  await cpu.start();
  const started = Date.now();
  const connected = await connectGoogleTarget(ctx, { source: group.source, refreshToken });
  await settle(ctx);
  const used = await cpu.stop();
  const delta = countsDelta(before, fake.counts());
  const runs = await pushRunsSince(ctx, started);
  const counts = syncCounts(runs.find((run) => run.reason === 'connect'));
  if (counts === undefined) throw new Error(`the first push did not sync: ${runs.map(describeRun).join('; ')}`);
  const desired = await desiredFor(ctx, group.source);
  const state = calendarState(fake, connected.calendarId, group.source);
  const eventWrites = delta.writes - (delta.byMethod['calendars.insert'] ?? 0);
  const requests = counts.writes + counts.reads;
  const lastEnd = Math.max(...runs.map((run) => run.finishedAt));
  return {
    targetId: connected.id,
    calendarId: connected.calendarId,
    figures: {
      source: `${group.source}: ${group.occurrences} confirmed occurrences from ${group.entries.original} entries of its own, ${group.entries.weekly} weekly and ${group.entries.oneOff} one-off classes added`,
      'first push: desired events': desired.length,
      'first push: events in the calendar afterwards': state.size,
      'first push: calendar events differing from the feed': mismatches(state, desired),
      'first push: event write calls': eventWrites,
      'first push: event write calls / events written': Number((eventWrites / state.size).toFixed(2)),
      'first push: read calls of the push': counts.reads,
      'first push: API requests by method (calendar creation and every push job)': methods(delta),
      'first push: quota errors': delta.quotaErrors,
      'first push: 403/429 answers': forbiddenAnswers(delta),
      'first push: push job duration s': counts.durationMs / 1000,
      'first push: requests/min during the push job': Math.round(requests / (counts.durationMs / 60_000)),
      'first push: connect → last push done s': (lastEnd - started) / 1000,
      'first push: push jobs': runs.map(describeRun).join('; '),
      // These machines are shared: say how busy the rest of the machine was meanwhile.
      "first push: CPU cores used by the benchmark's processes / by other processes": `${used.ours} / ${used.others}`,
    },
  };
}

/** The measured rounds, in order (one-off classes are edited in place by their rounds). */
function roundsFor(group: PushGroup): Round[] {
  const { edits, oneOffs, roomEntry, teacherEntry } = group;
  const each = (list: OneOff[], action: (oneOff: OneOff) => Promise<void>) => async () => {
    for (const oneOff of list) await action(oneOff);
  };
  const add = async (n: number) => {
    for (let i = 0; i < n; i += 1) await edits.addOneOff();
  };
  const [moved, cancelled] = oneOffs.mixed as [OneOff, OneOff];
  return [
    {
      name: `move ${PER_ROUND} one-off classes to the next slot of the same day`,
      edit: each(oneOffs.slot, (oneOff) => edits.moveSlot(oneOff)),
    },
    {
      name: `move ${PER_ROUND} one-off classes a week later (another date: another event id)`,
      edit: each(oneOffs.week, (oneOff) => edits.moveWeek(oneOff)),
    },
    { name: `cancel ${PER_ROUND} one-off classes`, edit: each(oneOffs.cancel, (oneOff) => edits.cancel(oneOff)) },
    { name: `add ${PER_ROUND} one-off classes`, edit: () => add(PER_ROUND) },
    {
      name: `change the room of the weekly class with the most occurrences (${roomEntry.occurrences})`,
      edit: () => edits.patchEntry(roomEntry.id, { num_auditorium_schedule: '999' }),
    },
    {
      name: `mixed: move 1 class to another slot, cancel 1, add 1, change the teacher of a class with ${teacherEntry.occurrences} occurrences`,
      edit: async () => {
        await edits.moveSlot(moved);
        await edits.cancel(cancelled);
        await add(1);
        await edits.patchEntry(teacherEntry.id, { teacher_id: teacherEntry.otherTeacher });
      },
    },
    {
      name: `restore the ${PER_ROUND} classes cancelled in round 3 (same entries, same dates)`,
      edit: each(oneOffs.cancel, (oneOff) => edits.restore(oneOff)),
    },
  ];
}
