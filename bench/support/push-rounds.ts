/**
 * The measured rounds of the google-push benchmark after the first push: timetable changes in the simulator,
 * a refresh that publishes them, the push it fans out; then a resync with nothing changed and a reconcile.
 * Every figure of "what changed" comes from the fake's calendar before and after, and separately from the
 * feed's change record; write calls come from the fake's counters.
 */
import { feedOccurrences } from '../../src/feeds/build-feed.ts';
import { enqueuePush } from '../../src/jobs/queues.ts';
import { type DesiredEvent, desiredEvents } from '../../src/push/desired-events.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import type { ChangeRecord } from '../../src/timetable/publication.ts';
import type { SourceKey } from '../../src/timetable/source.ts';
import type { Occurrence } from '../../src/timetable/types.ts';
import { calendarState, diffCalendars, mismatches } from '../../testkit/calendar-diff.ts';
import type { FakeGoogle } from '../../testkit/fake-google/index.ts';
import type { TimetableEdits } from '../../testkit/timetable-edits.ts';
import {
  type CountsDelta,
  countsDelta,
  describeRun,
  forbiddenAnswers,
  type PushRun,
  pushRunsSince,
  refreshAndSettle,
  settle,
} from './push-phase.ts';

/** What the rounds work on. */
export interface PushBench {
  ctx: ServiceContext;
  fake: FakeGoogle;
  source: SourceKey;
  targetId: string;
  calendarId: string;
  edits: TimetableEdits;
}

/** One timetable change and its name. */
export interface Round {
  name: string;
  edit(): Promise<void>;
}

/** The confirmed occurrences of the source's published feed. */
export async function confirmedOccurrences(ctx: ServiceContext, source: SourceKey): Promise<Occurrence[]> {
  const { snapshot, published } = await ctx.snapshots.load(source);
  if (!snapshot || !published) throw new Error(`${source} is not published`);
  return feedOccurrences(snapshot, published, ctx.config).filter((occurrence) => occurrence.status === 'CONFIRMED');
}

/**
 * The events the source's calendar should hold: what the feed shows, cancelled classes included (titled with
 * the cancelled-title prefix while the feed keeps them; with an empty prefix they are left out).
 */
export async function desiredFor(ctx: ServiceContext, source: SourceKey): Promise<DesiredEvent[]> {
  const { snapshot, published } = await ctx.snapshots.load(source);
  if (!snapshot || !published) throw new Error(`${source} is not published`);
  return desiredEvents(feedOccurrences(snapshot, published, ctx.config), ctx.config.cancelledTitlePrefix);
}

/** Runs `body` and answers the fake's counters over it, the push jobs that ran, and its wall time. */
export async function phase<T>(
  bench: PushBench,
  body: () => Promise<T>,
): Promise<{ value: T; delta: CountsDelta; runs: PushRun[]; ms: number }> {
  const before = bench.fake.counts();
  const started = Date.now();
  const value = await body();
  await settle(bench.ctx);
  return {
    value,
    delta: countsDelta(before, bench.fake.counts()),
    runs: await pushRunsSince(bench.ctx, started),
    ms: Date.now() - started,
  };
}

/** Google operations a change record implies: a class moved to another date has a new event id (delete + insert). */
function impliedOperations(record: ChangeRecord): number {
  const moves = record.moved.reduce((sum, pair) => sum + (pair.before.uid === pair.after.uid ? 1 : 2), 0);
  // The lists are capped; the counts are exact. A benchmark round stays under the cap.
  if (record.moved.length < record.counts.moved)
    throw new Error('change record list capped: use fewer changes per round');
  return record.counts.added + record.counts.removed + record.counts.changed + moves;
}

/** Measures one round: edit, refresh, push; figures prefixed with `label`. */
export async function measureRound(
  bench: PushBench,
  label: string,
  round: Round,
): Promise<{ figures: Record<string, number | string>; ratio: number }> {
  const { ctx, fake, source, calendarId } = bench;
  const before = calendarState(fake, calendarId, source);
  const {
    value: refresh,
    delta,
    runs,
  } = await phase(bench, async () => {
    await round.edit();
    return refreshAndSettle(ctx, source);
  });
  const after = calendarState(fake, calendarId, source);
  const diff = diffCalendars(before, after);
  const changed = diff.inserted + diff.patched + diff.deleted;
  const record = refresh.changes === undefined ? undefined : (await ctx.snapshots.changes(source))[0];
  const ratio = delta.writes / changed;
  const c = refresh.changes;
  return {
    ratio,
    figures: {
      [`${label}: change`]: round.name,
      [`${label}: change record`]:
        c === undefined
          ? `none (refresh ${refresh.outcome})`
          : `added ${c.added}, removed ${c.removed}, moved ${c.moved}, changed ${c.changed}`,
      [`${label}: Google operations the change record implies`]: record === undefined ? 0 : impliedOperations(record),
      [`${label}: changed occurrences in the calendar`]: `${changed} (inserted ${diff.inserted}, patched ${diff.patched}, deleted ${diff.deleted})`,
      [`${label}: write calls`]: delta.writes,
      [`${label}: write calls / changed occurrences`]: Number(ratio.toFixed(2)),
      [`${label}: read calls`]: delta.total - delta.writes,
      [`${label}: API requests by method`]: methods(delta),
      [`${label}: push jobs`]: runs.map(describeRun).join('; '),
      [`${label}: 403/429 answers`]: forbiddenAnswers(delta),
      [`${label}: calendar events differing from the feed afterwards`]: mismatches(
        after,
        await desiredFor(ctx, source),
      ),
    },
  };
}

/** A resync with nothing changed, a push with nothing to do, and a reconcile push: none may write. */
export async function measureSteady(bench: PushBench): Promise<Record<string, number | string>> {
  const { ctx, source, targetId } = bench;
  const resync = await phase(bench, () => refreshAndSettle(ctx, source));
  const idle = await phase(bench, () => enqueuePush(ctx.queues, 'google', targetId, source, 'refresh'));
  const reconcile = await phase(bench, async () => {
    await ctx.google.targets.requestReconcile(targetId);
    return enqueuePush(ctx.queues, 'google', targetId, source, 'reconcile');
  });
  const after = calendarState(bench.fake, bench.calendarId, source);
  return {
    'resync, nothing changed: refresh outcome': `${resync.value.outcome}, ${resync.value.pushJobs} push jobs`,
    'resync, nothing changed: write calls': resync.delta.writes,
    'resync, nothing changed: API requests': resync.delta.total,
    'push with nothing to do (reason refresh): write calls': idle.delta.writes,
    'push with nothing to do (reason refresh): API requests': idle.delta.total,
    'push with nothing to do (reason refresh): push jobs': idle.runs.map(describeRun).join('; '),
    'reconcile push: write calls': reconcile.delta.writes,
    'reconcile push: API requests by method': methods(reconcile.delta),
    'reconcile push: push jobs': reconcile.runs.map(describeRun).join('; '),
    'calendar events differing from the feed at the end': mismatches(after, await desiredFor(ctx, source)),
  };
}

/** `events.patch: 10, events.list: 1`. */
export function methods(delta: CountsDelta): string {
  const entries = Object.entries(delta.byMethod);
  return entries.length === 0 ? 'none' : entries.map(([method, n]) => `${method}: ${n}`).join(', ');
}
