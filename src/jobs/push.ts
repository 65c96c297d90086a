/**
 * The push job: one push target, of any calendar kind, brought in line with its source's published timetable.
 * The kind's part (how to sync, how to read its server's errors, its names) is its adapter (push/adapter.ts).
 * Everything a push does is idempotent (ids derived from the data, an index updated after every write), so
 * BullMQ's at-least-once delivery, retries and a worker killed mid-push never duplicate an event.
 */
import { performance } from 'node:perf_hooks';
import type { Processor } from 'bullmq';
import type { Logger } from '../logger.ts';
import type { PushAdapter } from '../push/adapter.ts';
import { TargetRemovedError } from '../push/errors.ts';
import type { PushTarget } from '../store/push-target-record.ts';
import type { PushJobData, PushJobResult } from './contract.ts';
import { handlePushFailure, type PushFailureDeps, type PushTuning } from './push-failure.ts';
import { PushRun } from './push-run.ts';

/** What the push processor uses besides the kind's adapter: the logger, the clock, and what a failure uses. */
export type PushDeps = PushFailureDeps & { readonly logger: Logger };

/** The push processor of one calendar kind. */
export function pushProcessor(
  ctx: PushDeps,
  adapter: PushAdapter,
  tuning: PushTuning = {},
): Processor<PushJobData, PushJobResult> {
  return async (job, token, signal) => {
    const { target, source, reason } = job.data;
    const fields = { target, source, jobId: job.id, attempt: job.attemptsMade + 1, reason, ...adapter.logFields };
    const run = new PushRun(ctx.logger.child(fields), signal);
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    try {
      const result = await push(ctx, adapter, job.data, run);
      adapter.metrics.duration.observe({ outcome: 'skipped' in result ? 'skipped' : 'synced' }, seconds());
      return result;
    } catch (error) {
      const failure = await handlePushFailure(ctx, adapter, { job, token, error, run }, tuning);
      adapter.metrics.duration.observe({ outcome: failure.outcome }, seconds());
      throw failure.error;
    }
  };
}

/** Why a push does nothing, if it does not run. `source` is absent from jobs some earlier releases queued. */
function skipReason(
  adapter: PushAdapter,
  target: PushTarget | undefined,
  source: string | undefined,
  now: number,
): string | undefined {
  if (target === undefined) return 'target removed';
  if (source !== undefined && target.source !== source) return 'target belongs to another source';
  if (target.status === adapter.targets.needsCredential) return adapter.words.needsCredential;
  if (target.status === 'calendar-deleted') return 'calendar was deleted';
  // The pause moved the target's reconcile to its end, which pushes everything then.
  if (target.status === 'paused' && target.pausedUntil !== undefined && target.pausedUntil > now)
    return `paused until ${new Date(target.pausedUntil).toISOString()}`;
  return undefined;
}

/** One push: load, plan, write, record. */
async function push(ctx: PushDeps, adapter: PushAdapter, data: PushJobData, run: PushRun): Promise<PushJobResult> {
  const notConfigured = adapter.notConfigured();
  if (notConfigured !== undefined) return { skipped: notConfigured };
  const { targets } = adapter;
  const target = await targets.get(data.target);
  const skipped = skipReason(adapter, target, data.source, ctx.now());
  if (target === undefined || skipped !== undefined) {
    // The scheduler moved the reconcile an interval ahead when it queued this push; a pause not yet over here
    // (this worker's clock may lag the scheduler's) puts it back at the pause's end, not hours later.
    if (target?.status === 'paused' && target.pausedUntil !== undefined)
      await targets.scheduleReconcile(target.id, target.pausedUntil);
    return { skipped: skipped ?? 'target removed' };
  }
  const credential = await targets.credential(target.id);
  if (credential === undefined) return { skipped: 'target removed' };
  run.started(credential.version, target.calendarId);
  const reconcile =
    target.reconcileRequested || data.reason !== 'refresh' || (await targets.index(target.id).size()) === 0;
  const started = performance.now();
  const hooks = {
    log: run.log,
    signal: run.signal,
    onRefusal: run.noteRefusal.bind(run),
    onIndexed: run.noteProgress.bind(run),
    now: ctx.now,
  };
  let summary: Awaited<ReturnType<PushAdapter['sync']>>;
  try {
    summary = await adapter.sync({ target, secret: credential.secret, reconcile, reason: data.reason, hooks });
  } catch (error) {
    if (error instanceof TargetRemovedError) return { skipped: 'target removed during push' };
    throw error;
  }
  // The published snapshot, never the university: one fetch per source feeds all its targets.
  if (summary === undefined) return { skipped: 'no timetable yet' };
  const durationMs = Math.round(performance.now() - started);
  const at = ctx.now();
  // Refusal examples are kept on the target for admins; the push summary and the job's result stay counts.
  const pushed = { at, reason: data.reason, ...summary, durationMs };
  if (!(await targets.recordPush(target.id, pushed, run.guard, run.refusals)))
    return { skipped: adapter.words.movedOn };
  if (reconcile) {
    await targets.clearReconcileRequest(target.id, target.reconcileToken);
    await targets.scheduleReconcile(target.id, at + adapter.reconcileIntervalMs);
  }
  const level = summary.writes > 0 || summary.conflicts > 0 ? 'info' : 'debug';
  run.log[level]({ ...summary, reconciled: reconcile, durationMs }, adapter.words.pushed);
  return { ...summary, reconciled: reconcile, durationMs };
}
