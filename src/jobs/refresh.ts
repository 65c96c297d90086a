/** The refresh job: one upstream fetch for one source, then publication; failures never touch the feed's data. */
import { performance } from 'node:perf_hooks';
import { type Job, type Processor, RateLimitError, UnrecoverableError } from 'bullmq';
import type { Logger } from '../logger.ts';
import type { ServiceContext } from '../runtime/context.ts';
import { type SourceKey, sourceOf } from '../sources/source.ts';
import { UpstreamNotFoundError } from '../upstream/errors.ts';
import type { RefreshJobData, RefreshJobResult } from './contract.ts';
import { SubscriptionUnusableError } from './errors.ts';
import { classifyFailure, type FailureClass, type FetchNote, fetchSource } from './fetch-source.ts';
import { markFeedStale, publishTimetable } from './publish-timetable.ts';

/** The refresh processor (BullMQ delivers at least once: everything it does is idempotent). */
export function refreshProcessor(ctx: ServiceContext): Processor<RefreshJobData, RefreshJobResult> {
  return async (job, _token, signal) => {
    const { source } = job.data;
    const log = ctx.logger.child({ source, jobId: job.id, attempt: job.attemptsMade + 1, reason: job.data.reason });
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    const note: FetchNote = {};
    try {
      const fetched = await fetchSource(ctx, source, signal, note);
      const result = await publishTimetable(ctx, { source, fetched, reason: job.data.reason, now: ctx.now() }, log);
      // A subscription deleted while its fetch was in flight must not leave a feed behind.
      if (source.startsWith('personal:') && (await ctx.subscriptions.get(sourceOf(source).id)) === undefined)
        await ctx.registry.remove(source);
      ctx.metrics.refreshDuration.observe({ outcome: result.outcome }, seconds());
      return result;
    } catch (error) {
      ctx.metrics.refreshDuration.observe({ outcome: 'failed' }, seconds());
      throw await handleFailure(ctx, job, error, note, log);
    }
  };
}

/**
 * Records a failure on the source and decides what BullMQ does next: a 429 pauses the whole queue (the job
 * goes back to waiting without using an attempt); a permanent failure ends the job; anything else is
 * retried with backoff. The feed is marked stale once the job has no attempts left. Logged once, at the end.
 */
async function handleFailure(
  ctx: ServiceContext,
  job: Job<RefreshJobData>,
  error: unknown,
  note: FetchNote,
  log: Logger,
): Promise<Error> {
  const { source } = job.data;
  const failure = classifyFailure(error, source);
  const message = error instanceof Error ? error.message : String(error);
  if (failure.kind !== 'internal' && failure.kind !== 'subscription')
    ctx.metrics.upstreamErrors.inc({ kind: failure.kind });
  // Rounds spent waiting out 429s use no attempt; past a bound, a source that is always limited fails normally.
  if (failure.kind === 'rate-limit' && job.attemptsStarted - job.attemptsMade <= MAX_RATE_LIMIT_ROUNDS) {
    const pauseMs = Math.min(failure.retryAfterMs ?? 1_000, MAX_RATE_LIMIT_PAUSE_MS);
    await ctx.queues.refresh.rateLimit(pauseMs);
    log.warn({ pauseMs }, 'upstream rate limit: refresh queue paused');
    return new RateLimitError();
  }
  const now = ctx.now();
  if (error instanceof SubscriptionUnusableError && (await ctx.subscriptions.get(sourceOf(source).id)) === undefined) {
    await ctx.registry.remove(source);
    log.info('subscription deleted: source removed');
    return new UnrecoverableError(message);
  }
  if (error instanceof UpstreamNotFoundError && !(await ctx.feeds.exists(source))) {
    await forgetUnknownSource(ctx, source, error);
    log.info({ upstream: error.upstreamMessage }, 'upstream does not know this source');
    return new UnrecoverableError(message);
  }
  const final = failure.permanent || job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
  // A source asked for once and never fetched has no state to record: it is registered on its first success.
  if (await ctx.registry.exists(source))
    await recordFailure(ctx, source, { ...failure, error, message, now, final, note });
  if (!final) {
    log.debug({ err: error, kind: failure.kind }, 'refresh failed; will retry');
    return error instanceof Error ? error : new Error(message);
  }
  log.error(
    { err: error, kind: failure.kind, permanent: failure.permanent },
    'refresh failed; the feed keeps its last good data and is marked stale',
  );
  return failure.permanent ? new UnrecoverableError(message) : error instanceof Error ? error : new Error(message);
}

/** How many times one job may be put back by upstream 429s before they count as failures. */
const MAX_RATE_LIMIT_ROUNDS = 20;
/** The longest the whole refresh queue pauses for one 429, whatever `Retry-After` asks. */
const MAX_RATE_LIMIT_PAUSE_MS = 5 * 60_000;

/** A failure to record, with what the fetch used. */
interface FailureDetails extends FailureClass {
  error: unknown;
  message: string;
  now: number;
  /** No attempts left: the feed is marked stale. */
  final: boolean;
  note: FetchNote;
}

/**
 * Records the failure on the source. A personal credential the upstream rejected is marked as needing
 * replacement, unless it was replaced meanwhile (the mark is conditional on the version that was sent).
 */
async function recordFailure(ctx: ServiceContext, source: SourceKey, failure: FailureDetails): Promise<void> {
  const { now, message } = failure;
  await ctx.registry.recordFailure(source, { now, kind: failure.kind, message, ...statusOf(failure) });
  if (source.startsWith('personal:') && failure.permanent) {
    const id = sourceOf(source).id;
    if (failure.kind === 'auth')
      await ctx.subscriptions.markNeedsCredential(id, message, now, failure.note.credentialVersion);
    // A credential this worker cannot decrypt (already-marked subscriptions fail with SubscriptionUnusableError).
    else if (failure.kind === 'subscription' && !(failure.error instanceof SubscriptionUnusableError))
      await ctx.subscriptions.markNeedsCredential(id, message, now);
  }
  if (failure.final) await markFeedStale(ctx, source, now);
}

function statusOf(failure: FailureClass): { status?: 'not-found' | 'needs-credential' } {
  if (failure.kind === 'not-found') return { status: 'not-found' };
  if (failure.permanent && (failure.kind === 'auth' || failure.kind === 'subscription'))
    return { status: 'needs-credential' };
  return {};
}

/** A source the upstream never knew: removed from the registry, and its absence remembered for an hour. */
async function forgetUnknownSource(
  ctx: ServiceContext,
  source: SourceKey,
  error: UpstreamNotFoundError,
): Promise<void> {
  await ctx.registry.remove(source);
  await ctx.registry.rememberMissing(source, error.upstreamMessage ?? 'not found');
}
