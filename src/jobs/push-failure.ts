/**
 * What a failed push means for its target and what BullMQ does next, for every calendar kind (the shared
 * policy of all jobs is `failure.ts`; the kind's adapter says what its server's error means). A rate limit is
 * waited out as the kind chose: its whole push queue pauses (Google), or only the job is put aside while the
 * host that asked cools down (CalDAV: one throttling server must not stop the pushes to the others); neither
 * uses an attempt. A refused credential, a pause the server asked for and a deleted calendar stop the target
 * with a status saying why; anything else is retried with backoff, and a push that fails for good comes back
 * as a reconcile.
 */
import { DelayedError, type Job } from 'bullmq';
import type { PushAdapter, PushVerdict } from '../push/adapter.ts';
import { DecryptionError, SecretKeyMissingError } from '../security/errors.ts';
import type { StoppedStatus } from '../store/push-target-record.ts';
import type { PushJobData } from './contract.ts';
import { asError, failWith, isLastAttempt, mayWaitAgain, rateLimitPause, waitOutRateLimit } from './failure.ts';
import type { PushRun } from './push-run.ts';
import type { Queues } from './queues.ts';

/** What {@link handlePushFailure} uses besides the adapter: the push queues (one pauses on a rate limit), a clock. */
export interface PushFailureDeps {
  readonly queues: Pick<Queues, 'pushQueue'>;
  /** Epoch ms. */
  readonly now: () => number;
}

/** Tuning that tests shorten. */
export interface PushTuning {
  /** First wait after a rate limit without `Retry-After` (doubles per round). */
  rateLimitBaseMs?: number | undefined;
}

/** The failed run: its job, the job's lock token (a delayed job is moved with it), what was thrown. */
export interface FailedPush {
  readonly job: Job<PushJobData>;
  readonly token: string | undefined;
  readonly error: unknown;
  readonly run: PushRun;
}

/** When a push that used up its attempts is tried again (by the scheduler, as a reconcile). */
const RETRY_FAILED_PUSH_MS = 15 * 60_000;

/** The metric outcome of a failed push and what the processor throws. */
export interface PushFailure {
  outcome: 'rate-limited' | StoppedStatus | 'failed';
  error: Error;
}

/**
 * Decides what a failure means for the target and what BullMQ does next. Logged once: when the job ends, when
 * the target stops, or when the rate limit is waited out.
 */
export async function handlePushFailure(
  ctx: PushFailureDeps,
  adapter: PushAdapter,
  { job, token, error, run }: FailedPush,
  tuning: PushTuning,
): Promise<PushFailure> {
  const id = job.data.target;
  const now = ctx.now();
  const verdict = verdictOf(adapter, error, now);
  if (verdict.label !== undefined) adapter.metrics.errors.inc({ kind: verdict.label });
  const rounds = await rateLimitRounds(job, run.progressed);
  if (verdict.kind === 'rate-limit' && mayWaitAgain(rounds)) {
    const waitMs = rateLimitPause(verdict.retryAfterMs, rounds, tuning.rateLimitBaseMs ?? 1_000);
    const waited = await waitOut(ctx, adapter, job, token, verdict, waitMs);
    if (waited !== undefined) {
      run.log.warn({ ...waited.fields, rounds }, adapter.words.rateLimited);
      return { outcome: 'rate-limited', error: waited.error };
    }
  }
  const { targets, words } = adapter;
  if (verdict.kind === 'stop') {
    const status = verdict.status === 'needs-credential' ? targets.needsCredential : verdict.status;
    const { reason, pausedUntil } = verdict;
    // Guarded: a push that outlived a new credential (perhaps a new calendar) must not stop the new target.
    await targets.markStatus(id, status, reason, now, { ...run.guard, pausedUntil });
    run.log.warn({ err: error, status }, `${words.push} stopped: ${reason}`);
    return { outcome: status, error: failWith(error, true) };
  }
  const permanent = verdict.kind === 'permanent';
  if (!permanent && !isLastAttempt(job)) {
    run.log.debug({ err: error }, `${words.push} failed; will retry`);
    return { outcome: 'failed', error: asError(error) };
  }
  // What the server refused in this run (the refusals that tripped the breaker, say): the error names only the first.
  await targets.recordError(id, asError(error).message, now, { calendarId: run.guard.calendarId }, run.refusals);
  // Nothing else may change the source for hours: the scheduler comes back for the target soon instead.
  await targets.requestReconcile(id);
  await targets.scheduleReconcile(id, now + RETRY_FAILED_PUSH_MS);
  run.log.error(
    { err: error, permanent, retryAt: new Date(now + RETRY_FAILED_PUSH_MS).toISOString() },
    `${words.push} failed`,
  );
  return { outcome: 'failed', error: failWith(error, permanent) };
}

/** The adapter's verdict, after what means the same for every kind: the secret box failing. */
function verdictOf(adapter: PushAdapter, error: unknown, now: number): PushVerdict {
  // Sealed under another SECRET_KEY (or tampered with): only a new credential gives one this service can read.
  if (error instanceof DecryptionError) {
    const reason = `stored ${adapter.words.credential} unreadable: SECRET_KEY changed?`;
    return { kind: 'stop', status: 'needs-credential', reason };
  }
  if (error instanceof SecretKeyMissingError) return { kind: 'permanent' };
  return adapter.classify(error, now);
}

/**
 * Waits the rate limit out as the kind chose; undefined when this job cannot be put aside (no lock token: it
 * then fails as any other failure would).
 */
async function waitOut(
  ctx: PushFailureDeps,
  adapter: PushAdapter,
  job: Job<PushJobData>,
  token: string | undefined,
  verdict: Extract<PushVerdict, { kind: 'rate-limit' }>,
  waitMs: number,
): Promise<{ error: Error; fields: Record<string, unknown> } | undefined> {
  const strategy = adapter.rateLimit;
  if (strategy.mode === 'pause-queue') {
    const error = await waitOutRateLimit(ctx.queues.pushQueue(adapter.kind), waitMs);
    return { error, fields: { pauseMs: waitMs } };
  }
  if (token === undefined) return undefined;
  // Only what the server said cools its host down: a wait our own budget refused adds nothing to it.
  if (verdict.status !== undefined && verdict.host !== undefined) await strategy.coolDown(verdict.host, waitMs);
  // BullMQ's delays run on the wall clock, whatever the service's clock says.
  await job.moveToDelayed(Date.now() + waitMs, token);
  return { error: new DelayedError(), fields: { delayMs: waitMs, host: verdict.host, status: verdict.status } };
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
