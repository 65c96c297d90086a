/**
 * The push job: one Google push target brought in line with its source's published timetable. Everything it
 * does is idempotent (deterministic event ids, an index updated after every write), so BullMQ's
 * at-least-once delivery and retries never duplicate an event.
 */
import { performance } from 'node:perf_hooks';
import type { Processor } from 'bullmq';
import type { Counter, Histogram } from 'prom-client';
import type { Config } from '../config.ts';
import type { CalendarClient } from '../google/calendar-client.ts';
import { GoogleError } from '../google/errors.ts';
import { markerFor } from '../google/event-marker.ts';
import type { GoogleServices } from '../google/google-services.ts';
import { type GoogleTarget, googleDetails } from '../google/google-targets.ts';
import { nameCalendar } from '../google/name-calendar.ts';
import { syncTarget } from '../google/sync-target.ts';
import type { Logger } from '../logger.ts';
import { TargetRemovedError } from '../push/errors.ts';
import { loadPublished, type PublishedDeps } from '../push/pending-changes.ts';
import type { SyncCounts } from '../store/push-target-record.ts';
import type { PushJobData, PushJobResult } from './contract.ts';
import { handlePushFailure, type PushFailureDeps, type PushTuning } from './push-failure.ts';
import { PushRun } from './push-run.ts';

/** What the push processor uses: Google's side, the published timetable, and what a failure records. */
export type PushDeps = PublishedDeps &
  PushFailureDeps & {
    readonly config: Pick<Config, 'googleReconcileIntervalMs'>;
    readonly logger: Logger;
    readonly google: Pick<GoogleServices, 'configured' | 'targets' | 'index' | 'calendar'>;
    readonly metrics: {
      readonly pushDuration: Pick<Histogram<'outcome'>, 'observe'>;
      readonly googleWrites: Pick<Counter<'operation'>, 'inc'>;
    };
  };

/** Requests in flight per push (the request budget paces them further). */
const SYNC_CONCURRENCY = 4;

/** The push processor. */
export function pushProcessor(ctx: PushDeps, tuning: PushTuning = {}): Processor<PushJobData, PushJobResult> {
  return async (job, _token, signal) => {
    const { target, source, reason } = job.data;
    const run = new PushRun(
      ctx.logger.child({ target, source, jobId: job.id, attempt: job.attemptsMade + 1, reason }),
      signal,
    );
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    try {
      const result = await push(ctx, job.data, run);
      ctx.metrics.pushDuration.observe({ outcome: 'skipped' in result ? 'skipped' : 'synced' }, seconds());
      return result;
    } catch (error) {
      const failure = await handlePushFailure(ctx, job, error, run, tuning);
      ctx.metrics.pushDuration.observe({ outcome: failure.outcome }, seconds());
      throw failure.error;
    }
  };
}

/** Why a push does nothing, if it does not run. */
function skipReason(target: GoogleTarget | undefined, source: string, now: number): string | undefined {
  if (target === undefined) return 'target removed';
  if (target.source !== source) return 'target belongs to another source';
  if (target.status === 'needs-consent') return 'target needs a new consent';
  if (target.status === 'calendar-deleted') return 'calendar was deleted';
  // The pause moved the target's reconcile to its end, which pushes everything then.
  if (target.status === 'paused' && target.pausedUntil !== undefined && target.pausedUntil > now)
    return `paused until ${new Date(target.pausedUntil).toISOString()}`;
  return undefined;
}

/** One push: load, plan, write, record. */
async function push(ctx: PushDeps, data: PushJobData, run: PushRun): Promise<PushJobResult> {
  if (!ctx.google.configured) return { skipped: 'Google push is not configured' };
  const { targets } = ctx.google;
  const target = await targets.get(data.target);
  const skipped = skipReason(target, data.source, ctx.now());
  if (target === undefined || skipped !== undefined) {
    // The scheduler moved the reconcile an interval ahead when it queued this push; a pause not yet over here
    // (this worker's clock may lag the scheduler's) puts it back at the pause's end, not hours later.
    if (target?.status === 'paused' && target.pausedUntil !== undefined)
      await targets.scheduleReconcile(target.id, target.pausedUntil);
    return { skipped: skipped ?? 'target removed' };
  }
  const published = await loadPublished(ctx, target.source);
  if (published === undefined) return { skipped: 'no timetable yet' };
  const { desired } = published;
  const credential = await targets.credential(target.id);
  if (credential === undefined) return { skipped: 'target removed' };
  run.started(credential.version, target.calendarId);
  const index = ctx.google.index(target.id);
  const reconcile = target.reconcileRequested || data.reason !== 'refresh' || (await index.size()) === 0;
  const started = performance.now();
  let summary: SyncCounts;
  const calendar = ctx.google.calendar(credential.secret, googleDetails(target).budgetKey, run.signal);
  try {
    summary = await syncTarget({
      calendar,
      calendarId: target.calendarId,
      targetId: target.id,
      marker: markerFor(target.source),
      desired,
      index,
      reconcile,
      concurrency: SYNC_CONCURRENCY,
      log: run.log,
      onWrite: (operation) => ctx.metrics.googleWrites.inc({ operation }),
      onRefusal: (example) => run.noteRefusal(example),
      onIndexed: () => run.noteProgress(),
      now: ctx.now,
      signal: run.signal,
    });
  } catch (error) {
    if (error instanceof TargetRemovedError) return { skipped: 'target removed during push' };
    throw error;
  }
  await renameIfNamed(ctx, run, calendar, target, published.name);
  const durationMs = Math.round(performance.now() - started);
  const at = ctx.now();
  // Refusal examples are kept on the target for admins; the push summary and the job's result stay counts.
  const pushed = { at, reason: data.reason, ...summary, durationMs };
  if (!(await targets.recordPush(target.id, pushed, { calendarId: target.calendarId }, run.refusals)))
    return { skipped: 'target removed or reconnected during push' };
  if (reconcile) {
    await targets.clearReconcileRequest(target.id, target.reconcileToken);
    await targets.scheduleReconcile(target.id, at + ctx.config.googleReconcileIntervalMs);
  }
  const level = summary.writes > 0 || summary.conflicts > 0 ? 'info' : 'debug';
  run.log[level]({ ...summary, reconciled: reconcile, durationMs }, 'pushed to Google Calendar');
  return { ...summary, reconciled: reconcile, durationMs };
}

/**
 * Gives a calendar created before its timetable was named the timetable's name. After the events: Google failing
 * the rename is logged and tried again by the next push (the placeholder stays recorded), and never costs the
 * events a retry. Anything else (Redis failing to record the name, a bug) fails the push like any other step:
 * swallowed, it would hide a broken store or a broken release behind a warning.
 */
async function renameIfNamed(
  ctx: PushDeps,
  run: PushRun,
  calendar: CalendarClient,
  target: GoogleTarget,
  name: string,
): Promise<void> {
  const record = (id: string, calendarId: string, calendarName: string) =>
    ctx.google.targets.recordCalendarName(id, calendarId, calendarName);
  try {
    await nameCalendar(calendar, target, name, record, run.log);
  } catch (error) {
    if (!(error instanceof GoogleError)) throw error;
    run.log.warn(
      { reason: `${error.name}: ${error.message}` },
      'could not rename the google calendar; the next push tries again',
    );
  }
}
