/**
 * What a failed CalDAV push means for its target and what BullMQ does next (the twin of push-failure.ts, the
 * shared policy is failure.ts). A server asking us to slow down (429, 503, 504) never pauses the queue, as a
 * Google rate limit pauses the Google push queue: one throttling host (Yandex is known to) would stop the
 * pushes to every other. Its host cools down instead, for every worker, and the job is put aside until then
 * without using an attempt. A refused password, a refusal of the calendar or a full account, and a deleted
 * calendar stop the target with a status saying why; anything else is retried with backoff, and a push that
 * fails for good comes back as a reconcile.
 */
import { DelayedError, type Job } from 'bullmq';
import type { Counter } from 'prom-client';
import type { CalDavServices } from '../caldav/caldav-services.ts';
import type { CalDavNeedsCredential } from '../caldav/caldav-targets.ts';
import {
  CalDavAuthError,
  CalDavCalendarGoneError,
  CalDavForbiddenError,
  CalDavPermanentError,
  CalDavQuotaError,
  CalDavRateLimitError,
  CalDavTransientError,
} from '../caldav/errors.ts';
import type { Config } from '../config.ts';
import { DecryptionError, SecretKeyMissingError } from '../security/errors.ts';
import type { StoppedStatus } from '../store/push-target-record.ts';
import type { PushGuard } from '../store/push-target-store.ts';
import type { CalDavPushJobData } from './contract.ts';
import { asError, failWith, isLastAttempt, mayWaitAgain, rateLimitPause } from './failure.ts';
import { rateLimitRounds } from './push-failure.ts';
import type { PushRun } from './push-run.ts';

/** What {@link handleCaldavPushFailure} uses: the target's record, the host budget, a metric. */
export interface CalDavPushFailureDeps {
  readonly config: Pick<Config, 'caldavPauseMs'>;
  readonly caldav: {
    readonly targets: Pick<
      CalDavServices['targets'],
      'markStatus' | 'recordError' | 'requestReconcile' | 'scheduleReconcile'
    >;
    readonly budget: Pick<CalDavServices['budget'], 'coolDown'>;
  };
  readonly metrics: { readonly caldavErrors: Pick<Counter<'kind'>, 'inc'> };
  /** Epoch ms. */
  readonly now: () => number;
}

/** Tuning that tests shorten. */
export interface CalDavPushTuning {
  /** First delay of a job after a server's rate limit without `Retry-After` (doubles per round). */
  rateLimitBaseMs?: number | undefined;
}

/** When a push that used up its attempts is tried again (by the scheduler, as a reconcile). */
const RETRY_FAILED_PUSH_MS = 15 * 60_000;

/** The metric outcome of a failed push and what the processor throws. */
export interface CalDavPushFailure {
  outcome: 'rate-limited' | StoppedStatus<CalDavNeedsCredential> | 'failed';
  error: Error;
}

/** How a failure stops its target, if it does. */
interface Stop {
  status: StoppedStatus<CalDavNeedsCredential>;
  reason: string;
  pausedUntil?: number | undefined;
}

/** The guard of what a run records: the password version and the calendar it started with. */
export function guardOf(run: PushRun): PushGuard {
  return { credentialVersion: run.guard.credentialVersion, calendarId: run.guard.calendarId };
}

/**
 * Decides what a failure means for the target and what BullMQ does next. `token` is the job's lock token (a
 * delayed job is moved with it). Logged once: when the job ends, when the target stops, or when the job is put
 * aside.
 */
export async function handleCaldavPushFailure(
  ctx: CalDavPushFailureDeps,
  job: Job<CalDavPushJobData>,
  token: string | undefined,
  error: unknown,
  run: PushRun,
  tuning: CalDavPushTuning,
): Promise<CalDavPushFailure> {
  const id = job.data.target;
  const now = ctx.now();
  const kind = caldavErrorKind(error);
  if (kind !== undefined) ctx.metrics.caldavErrors.inc({ kind });
  const rounds = await rateLimitRounds(job, run.progressed);
  if (error instanceof CalDavRateLimitError && token !== undefined && mayWaitAgain(rounds)) {
    const delayMs = rateLimitPause(error.retryAfterMs, rounds, tuning.rateLimitBaseMs ?? 1_000);
    // Only what the server said cools its host down: a wait our own budget refused adds nothing to it.
    if (error.status !== undefined && error.host !== undefined) await ctx.caldav.budget.coolDown(error.host, delayMs);
    // BullMQ's delays run on the wall clock, whatever the service's clock says.
    await job.moveToDelayed(Date.now() + delayMs, token);
    run.log.warn({ delayMs, rounds, host: error.host, status: error.status }, 'CalDAV server asked us to slow down');
    return { outcome: 'rate-limited', error: new DelayedError() };
  }
  const stop = stopOf(error, ctx, now);
  if (stop !== undefined) {
    // Guarded: a push that outlived a new password (or another calendar) must not stop the target again.
    await ctx.caldav.targets.markStatus(id, stop.status, stop.reason, now, {
      ...guardOf(run),
      pausedUntil: stop.pausedUntil,
    });
    run.log.warn({ err: error, status: stop.status }, `CalDAV push stopped: ${stop.reason}`);
    return { outcome: stop.status, error: failWith(error, true) };
  }
  const permanent = error instanceof CalDavPermanentError || error instanceof SecretKeyMissingError;
  if (!permanent && !isLastAttempt(job)) {
    run.log.debug({ err: error }, 'CalDAV push failed; will retry');
    return { outcome: 'failed', error: asError(error) };
  }
  await ctx.caldav.targets.recordError(
    id,
    asError(error).message,
    now,
    { calendarId: run.guard.calendarId },
    run.refusals,
  );
  // Nothing else may change the source for hours: the scheduler comes back for the target soon instead.
  await ctx.caldav.targets.requestReconcile(id);
  await ctx.caldav.targets.scheduleReconcile(id, now + RETRY_FAILED_PUSH_MS);
  run.log.error(
    { err: error, permanent, retryAt: new Date(now + RETRY_FAILED_PUSH_MS).toISOString() },
    'CalDAV push failed',
  );
  return { outcome: 'failed', error: failWith(error, permanent) };
}

/** The server's own words, when it gave any, after ours. */
function withReason(text: string, error: { reason?: string | undefined }): string {
  return error.reason === undefined || error.reason === '' ? text : `${text}: ${error.reason}`;
}

/** The status a failure moves the target into, if it stops the target. */
function stopOf(error: unknown, ctx: Pick<CalDavPushFailureDeps, 'config'>, now: number): Stop | undefined {
  if (error instanceof CalDavAuthError)
    return { status: 'needs-password', reason: 'the server refused the login or the app password (401)' };
  // Sealed under another SECRET_KEY (or tampered with): only a new password gives one this service can read.
  if (error instanceof DecryptionError)
    return { status: 'needs-password', reason: 'stored password unreadable: SECRET_KEY changed?' };
  if (error instanceof CalDavForbiddenError || error instanceof CalDavQuotaError) {
    const pausedUntil = now + ctx.config.caldavPauseMs;
    const what =
      error instanceof CalDavQuotaError
        ? 'the account has no room left (507)'
        : `the server refused access to the calendar (${error.status ?? 403})`;
    return { status: 'paused', reason: withReason(what, error), pausedUntil };
  }
  if (error instanceof CalDavCalendarGoneError)
    return { status: 'calendar-deleted', reason: 'the calendar was deleted or is no longer reachable' };
  return undefined;
}

/** The metric label of a CalDAV failure. */
function caldavErrorKind(error: unknown): string | undefined {
  if (error instanceof CalDavRateLimitError) return 'rate-limit';
  if (error instanceof CalDavAuthError) return 'auth';
  if (error instanceof CalDavForbiddenError) return 'forbidden';
  if (error instanceof CalDavQuotaError) return 'quota';
  if (error instanceof CalDavCalendarGoneError) return 'calendar-gone';
  if (error instanceof CalDavTransientError) return 'transient';
  if (error instanceof CalDavPermanentError) return 'permanent';
  return undefined;
}
