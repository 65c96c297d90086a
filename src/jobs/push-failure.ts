/**
 * What a failed push means for its target and what BullMQ does next (the shared policy is `failure.ts`): a
 * rate limit pauses the push queue; quota, consent and a deleted calendar stop the target with a status
 * saying why; anything else is retried with backoff, and a push that fails for good comes back as a reconcile.
 */
import type { Job } from 'bullmq';
import type { Counter } from 'prom-client';
import type { Config } from '../config.ts';
import {
  CalendarGoneError,
  GoogleConsentError,
  GoogleNotConfiguredError,
  GooglePermanentError,
  GoogleQuotaError,
  GoogleRateLimitError,
  GoogleTransientError,
} from '../google/errors.ts';
import type { GoogleNeedsCredential, GoogleTargetStore } from '../google/google-targets.ts';
import { DecryptionError, SecretKeyMissingError } from '../security/errors.ts';
import type { StoppedStatus } from '../store/push-target-record.ts';
import type { PushJobData } from './contract.ts';
import { asError, failWith, isLastAttempt, mayWaitAgain, rateLimitPause, waitOutRateLimit } from './failure.ts';
import type { PushRun } from './push-run.ts';
import type { Queues } from './queues.ts';

/** What {@link handlePushFailure} uses: the target's record, the push queue (paused on a rate limit), a metric. */
export interface PushFailureDeps {
  readonly config: Pick<Config, 'googleQuotaPauseMs'>;
  readonly queues: Pick<Queues, 'push'>;
  readonly google: {
    readonly targets: Pick<GoogleTargetStore, 'markStatus' | 'recordError' | 'requestReconcile' | 'scheduleReconcile'>;
  };
  readonly metrics: { readonly googleErrors: Pick<Counter<'kind'>, 'inc'> };
  /** Epoch ms. */
  readonly now: () => number;
}

/** Tuning that tests shorten. */
export interface PushTuning {
  /** First pause of the push queue after a Google rate limit without `Retry-After` (doubles per round). */
  rateLimitBaseMs?: number | undefined;
}

/** When a push that used up its attempts is tried again (by the scheduler, as a reconcile). */
const RETRY_FAILED_PUSH_MS = 15 * 60_000;

/** The metric outcome of a failed push and what the processor throws. */
export interface PushFailure {
  outcome: 'rate-limited' | 'paused' | 'needs-consent' | 'calendar-deleted' | 'failed';
  error: Error;
}

/** How a failure stops its target, if it does. */
interface Stop {
  status: StoppedStatus<GoogleNeedsCredential>;
  reason: string;
  pausedUntil?: number | undefined;
}

/**
 * Decides what a failure means for the target and what BullMQ does next. Logged once: when the job ends, or
 * when the target stops.
 */
export async function handlePushFailure(
  ctx: PushFailureDeps,
  job: Job<PushJobData>,
  error: unknown,
  run: PushRun,
  tuning: PushTuning,
): Promise<PushFailure> {
  const id = job.data.target;
  const now = ctx.now();
  const kind = googleErrorKind(error);
  if (kind !== undefined) ctx.metrics.googleErrors.inc({ kind });
  const rounds = await rateLimitRounds(job, run.progressed);
  if (error instanceof GoogleRateLimitError && mayWaitAgain(rounds)) {
    const pauseMs = rateLimitPause(error.retryAfterMs, rounds, tuning.rateLimitBaseMs ?? 1_000);
    run.log.warn({ pauseMs, rounds }, 'Google rate limit: push queue paused');
    return { outcome: 'rate-limited', error: await waitOutRateLimit(ctx.queues.push, pauseMs) };
  }
  const stop = stopOf(error, ctx, now);
  if (stop !== undefined) {
    // Guarded: a push that outlived a reconnect (new token, perhaps a new calendar) must not stop the new target.
    await ctx.google.targets.markStatus(id, stop.status, stop.reason, now, {
      ...run.guard,
      pausedUntil: stop.pausedUntil,
    });
    run.log.warn({ err: error, status: stop.status }, `push stopped: ${stop.reason}`);
    return { outcome: stop.status, error: failWith(error, true) };
  }
  const permanent =
    error instanceof GooglePermanentError ||
    error instanceof SecretKeyMissingError ||
    error instanceof GoogleNotConfiguredError;
  if (!permanent && !isLastAttempt(job)) {
    run.log.debug({ err: error }, 'push failed; will retry');
    return { outcome: 'failed', error: asError(error) };
  }
  // What Google refused in this run (the refusals that tripped the breaker, say): the error names only the first.
  await ctx.google.targets.recordError(
    id,
    asError(error).message,
    now,
    { calendarId: run.guard.calendarId },
    run.refusals,
  );
  // Nothing else may change the source for hours: the scheduler comes back for the target soon instead.
  await ctx.google.targets.requestReconcile(id);
  await ctx.google.targets.scheduleReconcile(id, now + RETRY_FAILED_PUSH_MS);
  run.log.error({ err: error, permanent, retryAt: new Date(now + RETRY_FAILED_PUSH_MS).toISOString() }, 'push failed');
  return { outcome: 'failed', error: failWith(error, permanent) };
}

/**
 * Rounds this job has waited out rate limits since it last made progress. BullMQ counts every start
 * (`attemptsStarted`), rate-limited or not; a run that got somewhere resets the count (kept in the job's data),
 * so a long push under steady rate limits keeps going as long as each round gets somewhere, and the backoff
 * starts small again.
 */
export async function rateLimitRounds<T extends Pick<PushJobData, 'roundsBeforeProgress'>>(
  job: Pick<Job<T>, 'attemptsStarted' | 'attemptsMade' | 'data' | 'updateData'>,
  progressed: boolean,
): Promise<number> {
  const started = job.attemptsStarted - job.attemptsMade;
  if (progressed) await job.updateData({ ...job.data, roundsBeforeProgress: started - 1 });
  return started - (job.data.roundsBeforeProgress ?? 0);
}

/** The status a failure moves the target into, if it stops the target. */
function stopOf(error: unknown, ctx: Pick<PushFailureDeps, 'config'>, now: number): Stop | undefined {
  if (error instanceof GoogleQuotaError) {
    const pausedUntil = now + ctx.config.googleQuotaPauseMs;
    const reason = `Google calendar usage limits exceeded; pushes resume at ${new Date(pausedUntil).toISOString()}`;
    return { status: 'paused', reason, pausedUntil };
  }
  if (error instanceof GoogleConsentError)
    return { status: 'needs-consent', reason: `Google refused the grant: ${error.message}` };
  // Sealed under another SECRET_KEY (or tampered with): only a new consent gives a token this service can read.
  if (error instanceof DecryptionError)
    return { status: 'needs-consent', reason: 'stored token unreadable: SECRET_KEY changed?' };
  if (error instanceof CalendarGoneError)
    return { status: 'calendar-deleted', reason: 'the calendar was deleted or is no longer reachable' };
  return undefined;
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
