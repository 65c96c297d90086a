/** The refresh job: one upstream fetch for one source, then publication; failures never touch the feed's data. */
import { performance } from 'node:perf_hooks';
import type { Job, Processor } from 'bullmq';
import type { Histogram } from 'prom-client';
import type { Config } from '../config.ts';
import { redisFailure } from '../lib/redis-failure.ts';
import type { Logger } from '../logger.ts';
import type { FreshnessStore } from '../store/freshness-store.ts';
import type { SubscriptionStore } from '../store/subscription-store.ts';
import { type SourceKey, sourceOf } from '../timetable/source.ts';
import { UpstreamNotFoundError } from '../upstream/errors.ts';
import type { RefreshJobData, RefreshJobResult } from './contract.ts';
import { SourceNotFoundError, SubscriptionUnusableError } from './errors.ts';
import {
  asError,
  failWith,
  isLastAttempt,
  MAX_RATE_LIMIT_PAUSE_MS,
  mayWaitAgain,
  pauseQueue,
  waitOutRateLimit,
} from './failure.ts';
import { classifyFailure, type FailureClass } from './failure-class.ts';
import { type FetchDeps, type FetchedTimetable, fetchSource } from './fetch-source.ts';
import { type LearnDeps, type LearnInput, learnFromRefresh } from './freshness-learn.ts';
import { type FreshnessPlanDeps, planAfterRefresh, type RefreshLearning } from './freshness-plan.ts';
import { markFeedStale, type PublishDeps, publishTimetable } from './publish-timetable.ts';
import { REFRESH_PRIORITY } from './queues.ts';
import { RefreshRun } from './refresh-run.ts';
import { type ForgetSourceDeps, forgetSource } from './term-starts.ts';

/** What the refresh processor uses: a fetch's, a publication's, and what recording a failure writes. */
export type RefreshDeps = FetchDeps &
  PublishDeps &
  ForgetSourceDeps &
  LearnDeps &
  FreshnessPlanDeps & {
    readonly config: Pick<Config, 'refreshPolicy'>;
    /** Counts each background fetch as it starts: the pacer's spend. */
    readonly freshness: Pick<FreshnessStore, 'countBackgroundFetch'>;
    readonly logger: Logger;
    readonly subscriptions: Pick<SubscriptionStore, 'get' | 'markNeedsCredential'>;
    readonly metrics: { readonly refreshDuration: Pick<Histogram<'outcome'>, 'observe'> };
  };

/** The refresh processor (BullMQ delivers at least once: everything it does is idempotent). */
export function refreshProcessor(ctx: RefreshDeps): Processor<RefreshJobData, RefreshJobResult> {
  return async (job, _token, signal) => {
    const { source, reason, cause } = job.data;
    const run = new RefreshRun(
      source,
      ctx.logger.child({ source, jobId: job.id, attempt: job.attemptsMade + 1, reason }),
      signal,
    );
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    try {
      if (ctx.config.refreshPolicy === 'adaptive') await ctx.freshness.countBackgroundFetch(reason);
      const fetched = reason === 'rerender' ? await storedTimetable(ctx, source) : await fetchSource(ctx, run);
      // A source removed before its re-render has nothing left to render.
      if (fetched === undefined) return { outcome: 'unchanged', occurrences: 0, pushJobs: 0 };
      const now = ctx.now();
      const { result, facts } = await publishTimetable(ctx, { source, fetched, reason, cause, now }, run.log);
      // A subscription deleted while its fetch was in flight must not leave a feed behind.
      if (source.startsWith('personal:') && (await ctx.subscriptions.get(sourceOf(source).id)) === undefined)
        await forgetSource(ctx, source, run.log);
      else if (reason !== 'rerender' && ctx.config.refreshPolicy === 'adaptive')
        await learnAndPlan(ctx, { source, reason, cause, facts, now }, run.log);
      await pauseIfRateLimited(ctx, run);
      ctx.metrics.refreshDuration.observe({ outcome: result.outcome }, seconds());
      return result;
    } catch (error) {
      ctx.metrics.refreshDuration.observe({ outcome: 'failed' }, seconds());
      throw await handleFailure(ctx, job, error, run);
    }
  };
}

/**
 * Learns from the fetch and plans the source's next background refresh. The feed is published already: a
 * failure here must not fail (and so repeat) the refresh; it is logged once, and the planner still hears of the
 * fetch (unparked, with nothing queued: the safe side).
 */
async function learnAndPlan(ctx: RefreshDeps, input: LearnInput, log: Logger): Promise<void> {
  let learning: RefreshLearning = { changed: false, relatedQueued: 0, classSoon: false };
  try {
    learning = await learnFromRefresh(ctx, input);
  } catch (error) {
    // A Redis outage is reported by the outage log, once; anything else is this source's to tell.
    if (redisFailure(error) === undefined)
      log.warn({ err: error }, 'could not learn from the refresh; planning it as an unparked source');
  }
  try {
    await planAfterRefresh(ctx, input.source, input.now, learning);
  } catch (error) {
    if (redisFailure(error) === undefined)
      log.warn({ err: error, learning }, 'could not plan the next background refresh');
  }
}

/** Once published: pauses the queue when a request the run went on without (the study plan's) met a 429. */
async function pauseIfRateLimited(ctx: RefreshDeps, run: RefreshRun): Promise<void> {
  const pauseMs = run.rateLimitPauseMs;
  if (pauseMs === undefined) return;
  run.log.warn(
    { pauseMs: Math.min(pauseMs, MAX_RATE_LIMIT_PAUSE_MS) },
    'upstream rate limit on the study plan: refresh queue paused',
  );
  await pauseQueue(ctx.queues.refresh, pauseMs);
}

/** The stored snapshot as a fetch would have returned it: a re-render publishes it with the term starts in force. */
async function storedTimetable(ctx: RefreshDeps, source: SourceKey): Promise<FetchedTimetable | undefined> {
  const snapshot = await ctx.snapshots.snapshot(source);
  if (snapshot === undefined) return undefined;
  return { name: snapshot.name, entries: snapshot.entries, problems: snapshot.problems };
}

/**
 * Records a failure on the source and decides what BullMQ does next (see `failure.ts`): a 429 pauses the whole
 * queue; a permanent failure ends the job; anything else is retried with backoff. The feed is marked stale once
 * the job has no attempts left.
 */
async function handleFailure(
  ctx: RefreshDeps,
  job: Job<RefreshJobData>,
  error: unknown,
  run: RefreshRun,
): Promise<Error> {
  const { source, log } = run;
  // Redis itself failed (full, down, paused): recording the failure would fail alike, and the feed keeps its
  // last good data untouched. Logged once per job, as a typed error; BullMQ retries it when Redis is back.
  const redis = redisFailure(error);
  if (redis !== undefined) {
    log.error({ err: redis }, 'refresh could not use Redis; the feed keeps its last good data');
    return redis;
  }
  const failure = classifyFailure(error, source);
  const message = asError(error).message;
  if (failure.kind !== 'internal' && failure.kind !== 'subscription')
    ctx.metrics.upstreamErrors.inc({ kind: failure.kind });
  if (failure.kind === 'rate-limit' && mayWaitAgain(job.attemptsStarted - job.attemptsMade)) {
    const pauseMs = Math.min(failure.retryAfterMs ?? 1_000, MAX_RATE_LIMIT_PAUSE_MS);
    log.warn({ pauseMs }, 'upstream rate limit: refresh queue paused');
    return waitOutRateLimit(ctx.queues.refresh, pauseMs);
  }
  const now = ctx.now();
  if (error instanceof SubscriptionUnusableError && (await ctx.subscriptions.get(sourceOf(source).id)) === undefined) {
    await forgetSource(ctx, source, log);
    log.info('subscription deleted: source removed');
    return failWith(error, true);
  }
  if (error instanceof UpstreamNotFoundError && !(await ctx.feeds.exists(source))) {
    await forgetUnknownSource(ctx, source, error, log);
    log.info({ upstream: error.upstreamMessage }, 'upstream does not know this source');
    return new SourceNotFoundError(source, error.upstreamMessage ?? '');
  }
  const final = failure.permanent || isLastAttempt(job);
  // A source asked for once and never fetched has no state to record: it is registered on its first success.
  if (await ctx.registry.exists(source)) {
    const details = { ...failure, error, message, now, final, credentialVersion: run.credentialVersion };
    await recordFailure(ctx, source, details);
  }
  if (!final) {
    log.debug({ err: error, kind: failure.kind }, 'refresh failed; will retry');
    return asError(error);
  }
  log.error(
    { err: error, kind: failure.kind, permanent: failure.permanent },
    'refresh failed; the feed keeps its last good data and is marked stale',
  );
  return failWith(error, failure.permanent);
}

/** A failure to record, with what the fetch used. */
interface FailureDetails extends FailureClass {
  error: unknown;
  message: string;
  now: number;
  /** No attempts left: the feed is marked stale. */
  final: boolean;
  /** The version of the personal credential that was sent, if one was. */
  credentialVersion: string | undefined;
}

/**
 * Records the failure on the source. A personal credential the upstream rejected is marked as needing
 * replacement, unless it was replaced meanwhile (the mark is conditional on the version that was sent).
 */
async function recordFailure(ctx: RefreshDeps, source: SourceKey, failure: FailureDetails): Promise<void> {
  const { now, message } = failure;
  await ctx.registry.recordFailure(source, { now, kind: failure.kind, message, ...statusOf(failure) });
  if (source.startsWith('personal:') && failure.permanent) {
    const id = sourceOf(source).id;
    if (failure.kind === 'auth')
      await ctx.subscriptions.markNeedsCredential(id, message, now, failure.credentialVersion);
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
  ctx: RefreshDeps,
  source: SourceKey,
  error: UpstreamNotFoundError,
  log: Logger,
): Promise<void> {
  await forgetSource(ctx, source, log);
  await ctx.registry.rememberMissing(source, error.upstreamMessage ?? 'not found');
}

/**
 * Removes a first request's refresh that ended because the university does not know the source: the registry
 * remembers that for an hour, so the failed job would only hold Redis memory for a week, once per made-up id.
 * A job someone else was answered with (an admin's resync deduplicated onto it raised its priority) is kept.
 */
export async function discardUnknownDemand(
  job: Pick<Job<RefreshJobData>, 'data' | 'priority' | 'remove'> | undefined,
  error: Error,
): Promise<boolean> {
  if (job === undefined || !(error instanceof SourceNotFoundError)) return false;
  if (job.data.reason !== 'demand' || job.priority !== REFRESH_PRIORITY.demand) return false;
  await job.remove();
  return true;
}
