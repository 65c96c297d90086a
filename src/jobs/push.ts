/**
 * The push job: one Google push target brought in line with its source's published timetable. Everything it
 * does is idempotent (deterministic event ids, an index updated after every write), so BullMQ's
 * at-least-once delivery and retries never duplicate an event.
 */
import { performance } from 'node:perf_hooks';
import { type Job, type Processor, RateLimitError, UnrecoverableError } from 'bullmq';
import { markerFor } from '../google/desired-events.ts';
import {
  CalendarGoneError,
  GoogleConsentError,
  GoogleNotConfiguredError,
  GooglePermanentError,
  GoogleQuotaError,
  GoogleRateLimitError,
  GoogleTransientError,
  TargetRemovedError,
} from '../google/errors.ts';
import { loadDesired } from '../google/pending-changes.ts';
import { type RefusalExample, syncTarget } from '../google/sync-target.ts';
import type { PushGuard, PushTarget } from '../google/target-store.ts';
import type { Logger } from '../logger.ts';
import type { ServiceContext } from '../runtime/context.ts';
import { DecryptionError, SecretKeyMissingError } from '../security/errors.ts';
import type { PushJobData, PushJobResult } from './contract.ts';

/** Tuning that tests shorten. */
export interface PushTuning {
  /** First pause of the push queue after a Google rate limit without `Retry-After` (doubles per round). */
  rateLimitBaseMs?: number;
}

/** Requests in flight per push (the request budget paces them further). */
const SYNC_CONCURRENCY = 4;
/** How many times one job may be put back by rate limits before they count as failures (as for refreshes). */
const MAX_RATE_LIMIT_ROUNDS = 20;
/** When a push that used up its attempts is tried again (by the scheduler, as a reconcile). */
const RETRY_FAILED_PUSH_MS = 15 * 60_000;
/** The longest the push queue pauses for one rate limit, whatever `Retry-After` asks. */
const MAX_RATE_LIMIT_PAUSE_MS = 5 * 60_000;
/** Refusals of one run kept on the target for admins, as examples of Google's reasons. */
const REFUSAL_EXAMPLES = 3;

/** What the tracked parts of a run did, for failure handling: the token version and calendar it used guard what it records. */
export interface RunNote extends PushGuard {
  /** At least one write succeeded (and was indexed). */
  progressed?: boolean;
  /** The first few refusals of the run, stored on the target whether the push completes or fails for good. */
  refusals?: RefusalExample[];
}

/** The push processor. */
export function pushProcessor(ctx: ServiceContext, tuning: PushTuning = {}): Processor<PushJobData, PushJobResult> {
  return async (job, _token, signal) => {
    const { target, source, reason } = job.data;
    const log = ctx.logger.child({ target, source, jobId: job.id, attempt: job.attemptsMade + 1, reason });
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    const note: RunNote = {};
    try {
      const result = await push(ctx, job.data, { note, log, ...(signal ? { signal } : {}) });
      ctx.metrics.pushDuration.observe({ outcome: 'skipped' in result ? 'skipped' : 'synced' }, seconds());
      return result;
    } catch (error) {
      const failure = await handleFailure(ctx, job, error, note, log, tuning);
      ctx.metrics.pushDuration.observe({ outcome: failure.outcome }, seconds());
      throw failure.error;
    }
  };
}

/** Why a push does nothing, if it does not run. */
function skipReason(target: PushTarget | undefined, source: string, now: number): string | undefined {
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
async function push(
  ctx: ServiceContext,
  data: PushJobData,
  run: { note: RunNote; log: Logger; signal?: AbortSignal },
): Promise<PushJobResult> {
  if (!ctx.google.configured) return { skipped: 'Google push is not configured' };
  const { targets, index } = ctx.google;
  const target = await targets.get(data.target);
  const skipped = skipReason(target, data.source, ctx.now());
  if (target === undefined || skipped !== undefined) {
    // The scheduler moved the reconcile an interval ahead when it queued this push; a pause not yet over here
    // (this worker's clock may lag the scheduler's) puts it back at the pause's end, not hours later.
    if (target?.status === 'paused' && target.pausedUntil !== undefined)
      await targets.scheduleReconcile(target.id, target.pausedUntil);
    return { skipped: skipped ?? 'target removed' };
  }
  const desired = await loadDesired(ctx, target.source);
  if (desired === undefined) return { skipped: 'no timetable yet' };
  const credential = await targets.refreshToken(target.id);
  if (credential === undefined) return { skipped: 'target removed' };
  run.note.tokenVersion = credential.version;
  run.note.calendarId = target.calendarId;
  const reconcile = target.reconcileRequested || data.reason !== 'refresh' || (await index.size(target.id)) === 0;
  const started = performance.now();
  let summary;
  try {
    // Noting progress lets rate-limit rounds count only waits without progress (see handleFailure).
    const tracked = {
      read: (id: string) => index.read(id),
      replace: (id: string, entries: Map<string, string>) => index.replace(id, entries),
      set: (id: string, eventId: string, hash: string) => ((run.note.progressed = true), index.set(id, eventId, hash)),
    };
    summary = await syncTarget({
      calendar: ctx.google.calendar(credential.token, target.budgetKey, run.signal),
      calendarId: target.calendarId,
      targetId: target.id,
      marker: markerFor(target.source),
      desired,
      index: tracked,
      reconcile,
      concurrency: SYNC_CONCURRENCY,
      log: run.log,
      onWrite: (operation) => ctx.metrics.googleWrites.inc({ operation }),
      onRefusal: (example) => noteRefusal(run.note, example),
      now: ctx.now,
      ...(run.signal ? { signal: run.signal } : {}),
    });
  } catch (error) {
    if (error instanceof TargetRemovedError) return { skipped: 'target removed during push' };
    throw error;
  }
  const durationMs = Math.round(performance.now() - started);
  const at = ctx.now();
  // Refusal examples are kept on the target for admins; the push summary and the job's result stay counts.
  if (
    !(await targets.recordPush(
      target.id,
      { at, reason: data.reason, ...summary, durationMs },
      { calendarId: target.calendarId },
      run.note.refusals,
    ))
  )
    return { skipped: 'target removed or reconnected during push' };
  if (reconcile) {
    await targets.clearReconcileRequest(target.id, target.reconcileToken);
    await targets.scheduleReconcile(target.id, at + ctx.config.googleReconcileIntervalMs);
  }
  const level = summary.writes > 0 || summary.conflicts > 0 ? 'info' : 'debug';
  run.log[level]({ ...summary, reconciled: reconcile, durationMs }, 'pushed to Google Calendar');
  return { ...summary, reconciled: reconcile, durationMs };
}

/** The metric outcome of a failed push and what the processor throws. */
interface Failure {
  outcome: 'rate-limited' | 'paused' | 'needs-consent' | 'calendar-deleted' | 'failed';
  error: Error;
}

/**
 * Decides what a failure means for the target and what BullMQ does next: a rate limit pauses the push queue
 * (the job goes back to waiting without using an attempt); quota, consent and a deleted calendar stop the
 * target with a status saying why; a refusal records the error and ends the job; anything else is retried
 * with backoff. Logged once: when the job ends, or when the target stops.
 */
async function handleFailure(
  ctx: ServiceContext,
  job: Job<PushJobData>,
  error: unknown,
  note: RunNote,
  log: Logger,
  tuning: PushTuning,
): Promise<Failure> {
  const id = job.data.target;
  const now = ctx.now();
  const message = error instanceof Error ? error.message : String(error);
  const kind = googleErrorKind(error);
  if (kind !== undefined) ctx.metrics.googleErrors.inc({ kind });
  const rounds = await rateLimitRounds(job, note);
  if (error instanceof GoogleRateLimitError && rounds <= MAX_RATE_LIMIT_ROUNDS) {
    const pauseMs = rateLimitPause(error.retryAfterMs, rounds, tuning.rateLimitBaseMs ?? 1_000);
    await ctx.queues.push.rateLimit(pauseMs);
    log.warn({ pauseMs, rounds }, 'Google rate limit: push queue paused');
    return { outcome: 'rate-limited', error: new RateLimitError() };
  }
  const stop = stoppedStatus(error, ctx, now);
  const guard: PushGuard = {
    ...(note.tokenVersion === undefined ? {} : { tokenVersion: note.tokenVersion }),
    ...(note.calendarId === undefined ? {} : { calendarId: note.calendarId }),
  };
  if (stop !== undefined) {
    // Guarded: a push that outlived a reconnect (new token, perhaps a new calendar) must not stop the reconnected target.
    await ctx.google.targets.markStatus(id, stop.status, stop.reason, now, {
      ...guard,
      ...(stop.pausedUntil === undefined ? {} : { pausedUntil: stop.pausedUntil }),
    });
    log.warn({ err: error, status: stop.status }, `push stopped: ${stop.reason}`);
    return { outcome: stop.outcome, error: new UnrecoverableError(message) };
  }
  const permanent =
    error instanceof GooglePermanentError ||
    error instanceof SecretKeyMissingError ||
    error instanceof GoogleNotConfiguredError;
  const final = permanent || job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
  if (!final) {
    log.debug({ err: error }, 'push failed; will retry');
    return { outcome: 'failed', error: error instanceof Error ? error : new Error(message) };
  }
  // What Google refused in this run (the refusals that tripped the breaker, say): the error names only the first.
  await ctx.google.targets.recordError(
    id,
    message,
    now,
    { ...(note.calendarId === undefined ? {} : { calendarId: note.calendarId }) },
    note.refusals,
  );
  // Nothing else may change the source for hours: the scheduler comes back for the target soon instead.
  await ctx.google.targets.requestReconcile(id);
  await ctx.google.targets.scheduleReconcile(id, now + RETRY_FAILED_PUSH_MS);
  log.error({ err: error, permanent, retryAt: new Date(now + RETRY_FAILED_PUSH_MS).toISOString() }, 'push failed');
  return {
    outcome: 'failed',
    error: permanent ? new UnrecoverableError(message) : error instanceof Error ? error : new Error(message),
  };
}

/**
 * Rounds this job has waited out rate limits since it last made progress. BullMQ counts every start
 * (`attemptsStarted`), rate-limited or not; a run that wrote something resets the count (kept in the job's
 * data), so a long push under steady rate limits keeps going as long as each round gets somewhere, and the
 * backoff starts small again.
 */
export async function rateLimitRounds(
  job: Pick<Job<PushJobData>, 'attemptsStarted' | 'attemptsMade' | 'data' | 'updateData'>,
  note: RunNote,
): Promise<number> {
  const started = job.attemptsStarted - job.attemptsMade;
  if (note.progressed) await job.updateData({ ...job.data, roundsBeforeProgress: started - 1 });
  return started - (job.data.roundsBeforeProgress ?? 0);
}

/** The status a failure moves the target into, if it stops the target. */
function stoppedStatus(
  error: unknown,
  ctx: ServiceContext,
  now: number,
):
  | {
      status: 'paused' | 'needs-consent' | 'calendar-deleted';
      outcome: Failure['outcome'];
      reason: string;
      pausedUntil?: number;
    }
  | undefined {
  if (error instanceof GoogleQuotaError) {
    const pausedUntil = now + ctx.config.googleQuotaPauseMs;
    return {
      status: 'paused',
      outcome: 'paused',
      reason: `Google calendar usage limits exceeded; pushes resume at ${new Date(pausedUntil).toISOString()}`,
      pausedUntil,
    };
  }
  if (error instanceof GoogleConsentError)
    return { status: 'needs-consent', outcome: 'needs-consent', reason: `Google refused the grant: ${error.message}` };
  // Sealed under another SECRET_KEY (or tampered with): only a new consent gives a token this service can read.
  if (error instanceof DecryptionError)
    return {
      status: 'needs-consent',
      outcome: 'needs-consent',
      reason: 'stored token unreadable: SECRET_KEY changed?',
    };
  if (error instanceof CalendarGoneError)
    return {
      status: 'calendar-deleted',
      outcome: 'calendar-deleted',
      reason: 'the calendar was deleted or is no longer reachable',
    };
  return undefined;
}

/**
 * How long the push queue pauses: Google's `Retry-After` when it sent one, else `baseMs` doubling per round
 * spent waiting, ±50% jitter (workers that hit the limit together do not come back together); at most 5 min.
 */
export function rateLimitPause(
  retryAfterMs: number | undefined,
  rounds: number,
  baseMs: number,
  random: () => number = Math.random,
): number {
  if (retryAfterMs !== undefined) return Math.min(retryAfterMs, MAX_RATE_LIMIT_PAUSE_MS);
  const exponential = Math.min(baseMs * 2 ** Math.max(0, rounds - 1), MAX_RATE_LIMIT_PAUSE_MS);
  return Math.round(Math.min(exponential * (0.5 + random()), MAX_RATE_LIMIT_PAUSE_MS));
}

/** Keeps the first few refusals of a run on its note. */
function noteRefusal(note: RunNote, example: RefusalExample): void {
  note.refusals ??= [];
  if (note.refusals.length < REFUSAL_EXAMPLES) note.refusals.push(example);
}

/** The metric label of a Google failure. */
function googleErrorKind(error: unknown): string | undefined {
  if (error instanceof GoogleRateLimitError) return 'rate-limit';
  if (error instanceof GoogleQuotaError) return 'quota';
  if (error instanceof GoogleConsentError) return 'consent';
  if (error instanceof CalendarGoneError) return 'calendar-gone';
  if (error instanceof GoogleTransientError) return 'transient';
  if (error instanceof GooglePermanentError) return 'permanent';
  return undefined;
}
