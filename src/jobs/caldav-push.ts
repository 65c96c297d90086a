/**
 * The CalDAV push job: one CalDAV target brought in line with its source's published timetable (the twin of
 * push.ts). Everything it does is idempotent (resources named after the feed's UIDs, created with
 * `If-None-Match: *`, an index updated after every write), so BullMQ's at-least-once delivery, retries and a
 * worker killed mid-push never duplicate an event.
 */
import { performance } from 'node:perf_hooks';
import type { Processor } from 'bullmq';
import type { Counter, Histogram } from 'prom-client';
import type { CalDavServices } from '../caldav/caldav-services.ts';
import { type CalDavTarget, caldavDetails, recordListing } from '../caldav/caldav-targets.ts';
import { loadPublishedResources, type PublishedResourcesDeps } from '../caldav/published-resources.ts';
import { syncCaldav } from '../caldav/sync-caldav.ts';
import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';
import { TargetRemovedError } from '../push/errors.ts';
import type { SyncCounts } from '../store/push-target-record.ts';
import {
  type CalDavPushFailureDeps,
  type CalDavPushTuning,
  guardOf,
  handleCaldavPushFailure,
} from './caldav-push-failure.ts';
import type { CalDavPushJobData, PushJobResult } from './contract.ts';
import { PushRun } from './push-run.ts';

/** What the CalDAV push processor uses: the targets and their servers, the published timetable, metrics. */
export type CalDavPushDeps = PublishedResourcesDeps &
  CalDavPushFailureDeps & {
    readonly config: Pick<Config, 'caldavReconcileIntervalMs'>;
    readonly logger: Logger;
    readonly caldav: Pick<CalDavServices, 'targets' | 'index' | 'client' | 'budget'>;
    readonly metrics: {
      readonly caldavPushDuration: Pick<Histogram<'outcome'>, 'observe'>;
      readonly caldavWrites: Pick<Counter<'operation'>, 'inc'>;
    };
  };

/** Requests in flight per push (the host's budget paces them further). */
const SYNC_CONCURRENCY = 4;

/** The CalDAV push processor. */
export function caldavPushProcessor(
  ctx: CalDavPushDeps,
  tuning: CalDavPushTuning = {},
): Processor<CalDavPushJobData, PushJobResult> {
  return async (job, token, signal) => {
    const { target, source, reason } = job.data;
    const run = new PushRun(
      ctx.logger.child({ target, source, jobId: job.id, attempt: job.attemptsMade + 1, reason, push: 'caldav' }),
      signal,
    );
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    try {
      const result = await push(ctx, job.data, run);
      ctx.metrics.caldavPushDuration.observe({ outcome: 'skipped' in result ? 'skipped' : 'synced' }, seconds());
      return result;
    } catch (error) {
      const failure = await handleCaldavPushFailure(ctx, job, token, error, run, tuning);
      ctx.metrics.caldavPushDuration.observe({ outcome: failure.outcome }, seconds());
      throw failure.error;
    }
  };
}

/** Why a push does nothing, if it does not run. */
function skipReason(target: CalDavTarget | undefined, source: string | undefined, now: number): string | undefined {
  if (target === undefined) return 'target removed';
  if (source !== undefined && target.source !== source) return 'target belongs to another source';
  if (target.status === 'needs-password') return 'target needs a new app password';
  if (target.status === 'calendar-deleted') return 'calendar was deleted';
  // The pause moved the target's reconcile to its end, which pushes everything then.
  if (target.status === 'paused' && target.pausedUntil !== undefined && target.pausedUntil > now)
    return `paused until ${new Date(target.pausedUntil).toISOString()}`;
  return undefined;
}

/** One push: load, plan, write, record. */
async function push(ctx: CalDavPushDeps, data: CalDavPushJobData, run: PushRun): Promise<PushJobResult> {
  const { targets } = ctx.caldav;
  const target = await targets.get(data.target);
  const skipped = skipReason(target, data.source, ctx.now());
  if (target === undefined || skipped !== undefined) {
    // The scheduler moved the reconcile an interval ahead when it queued this push; a pause not yet over here
    // puts it back at the pause's end, not hours later.
    if (target?.status === 'paused' && target.pausedUntil !== undefined)
      await targets.scheduleReconcile(target.id, target.pausedUntil);
    return { skipped: skipped ?? 'target removed' };
  }
  // The published snapshot, never the university: one fetch per source feeds all its targets.
  const published = await loadPublishedResources(ctx, target.source);
  if (published === undefined) return { skipped: 'no timetable yet' };
  const credential = await targets.credential(target.id);
  if (credential === undefined) return { skipped: 'target removed' };
  run.started(credential.version, target.calendarId);
  const details = caldavDetails(target);
  const index = ctx.caldav.index(target.id);
  const reconcile = target.reconcileRequested || data.reason !== 'refresh' || (await index.size()) === 0;
  const started = performance.now();
  const client = ctx.caldav.client({ username: details.username, password: credential.secret }, run.signal);
  let summary: SyncCounts;
  try {
    summary = await syncCaldav({
      client,
      calendarUrl: target.calendarId,
      source: target.source,
      desired: published.desired,
      index,
      reconcile,
      syncToken: details.syncToken,
      onListing: async (listing) => {
        await recordListing(targets, target.id, target.calendarId, listing);
      },
      signal: run.signal,
      log: run.log,
      targetId: target.id,
      concurrency: SYNC_CONCURRENCY,
      onWrite: (operation) => ctx.metrics.caldavWrites.inc({ operation }),
      onRefusal: (example) => run.noteRefusal(example),
      onIndexed: () => run.noteProgress(),
      now: ctx.now,
    });
  } catch (error) {
    if (error instanceof TargetRemovedError) return { skipped: 'target removed during push' };
    throw error;
  }
  const durationMs = Math.round(performance.now() - started);
  const at = ctx.now();
  const pushed = { at, reason: data.reason, ...summary, durationMs };
  if (!(await targets.recordPush(target.id, pushed, guardOf(run), run.refusals)))
    return { skipped: 'target removed, or given a new password or calendar, during push' };
  if (reconcile) {
    await targets.clearReconcileRequest(target.id, target.reconcileToken);
    await targets.scheduleReconcile(target.id, at + ctx.config.caldavReconcileIntervalMs);
  }
  const level = summary.writes > 0 || summary.conflicts > 0 ? 'info' : 'debug';
  run.log[level]({ ...summary, reconciled: reconcile, durationMs }, 'pushed to a CalDAV calendar');
  return { ...summary, reconciled: reconcile, durationMs };
}
