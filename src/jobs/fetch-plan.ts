/**
 * The study plan of a personal source (`/users/@me/plan`), fetched at most daily by its refresh: one more
 * upstream request through the same budget, after the timetable's, and only when the stored plan is due. A
 * plan that fails to load never fails the refresh: the failure is logged once and recorded, and the feed is
 * published with the last good plan (or without plan lines when there never was one); a 429 on it still pauses
 * the refresh queue, after that publication.
 */

import type { Counter } from 'prom-client';
import type { RedisClient } from '../lib/redis-target.ts';
import type { RedisKeys } from '../store/keys.ts';
import { type PlanFailure, type StoredStudyPlan, StudyPlanStore } from '../store/study-plan-store.ts';
import type { UniversityClient } from '../upstream/client.ts';
import type { PlanSubject } from '../upstream/directory-schema.ts';
import { asError } from './failure.ts';
import { classifyFailure } from './failure-class.ts';
import type { RefreshRun } from './refresh-run.ts';

/** A plan fetched this long ago is fetched again (plans change a few times a year). */
export const PLAN_MAX_AGE_MS = 24 * 60 * 60 * 1000;

/** After a passing failure (network, timeout, a 5xx), the next try waits this long. */
export const PLAN_RETRY_MS = 60 * 60 * 1000;

/**
 * Failures retrying soon cannot mend: the university refusing this account its plan (the credential itself
 * works: the timetable was just read with it) or not having one. Tried again after {@link PLAN_MAX_AGE_MS}.
 */
const LASTING_FAILURES = new Set(['auth', 'not-found']);

/** What {@link refreshStudyPlan} uses. */
export interface StudyPlanFetchDeps {
  /** Plans are stored beside the timetable (a {@link StudyPlanStore} on this connection). */
  readonly redis: RedisClient;
  readonly keys: RedisKeys;
  /** The university for refresh jobs. */
  readonly upstream: Pick<UniversityClient, 'myPlan'>;
  readonly metrics: { readonly upstreamErrors: Pick<Counter<'kind'>, 'inc'> };
  /** Epoch ms. */
  readonly now: () => number;
}

/** Whether a plan stored as `stored` should be fetched at `now`. */
export function isPlanDue(stored: StoredStudyPlan | undefined, now: number): boolean {
  if (stored === undefined) return true;
  const { failure } = stored;
  const wait = failure === null || LASTING_FAILURES.has(failure.kind) ? PLAN_MAX_AGE_MS : PLAN_RETRY_MS;
  return now - stored.attemptedAt >= wait;
}

/**
 * Fetches and stores the plan of `run`'s personal source with `credential` when it is due. Never throws for
 * the upstream's sake; a rejected credential here does not mark the subscription (its timetable was read). A
 * rate limit is told to `run`, whose processor pauses the queue once the timetable is published. An empty plan
 * while a non-empty one is stored is taken for an upstream fault, not a plan that lost every subject: the
 * stored one is kept and the fetch counts as failed (retried after {@link PLAN_RETRY_MS}).
 */
export async function refreshStudyPlan(ctx: StudyPlanFetchDeps, run: RefreshRun, credential: string): Promise<void> {
  const plans = new StudyPlanStore(ctx.redis, ctx.keys);
  const stored = await plans.load(run.source);
  const now = ctx.now();
  if (!isPlanDue(stored, now)) return;
  let subjects: PlanSubject[];
  try {
    subjects = await ctx.upstream.myPlan(credential, { signal: run.signal });
  } catch (error) {
    const failure = classifyFailure(error, run.source);
    // Redis or a bug is not the university's failure: the refresh fails as it would without a plan.
    if (failure.kind === 'internal') throw error;
    ctx.metrics.upstreamErrors.inc({ kind: failure.kind });
    if (failure.kind === 'rate-limit') run.rateLimited(failure.retryAfterMs ?? 1_000);
    await keepStoredPlan(ctx, run, stored, { at: now, kind: failure.kind, message: asError(error).message }, error);
    return;
  }
  if (subjects.length === 0 && (stored?.subjects.length ?? 0) > 0) {
    const message = 'the university answered an empty study plan while a non-empty one is stored';
    await keepStoredPlan(ctx, run, stored, { at: now, kind: 'protocol', message });
    return;
  }
  await plans.saveFetched(run.source, subjects, now);
  run.log.debug({ subjects: subjects.length }, 'study plan fetched');
}

/** Records a failed plan fetch, keeping the stored plan, and logs it once. */
async function keepStoredPlan(
  ctx: Pick<StudyPlanFetchDeps, 'redis' | 'keys'>,
  run: RefreshRun,
  stored: StoredStudyPlan | undefined,
  failure: PlanFailure,
  error?: unknown,
): Promise<void> {
  await new StudyPlanStore(ctx.redis, ctx.keys).saveFailure(run.source, stored, failure);
  run.log.warn(
    {
      ...(error === undefined ? { reason: failure.message } : { err: error }),
      kind: failure.kind,
      lastGoodPlan: stored?.fetchedAt ?? null,
    },
    'study plan not loaded; the timetable is published with the last good plan, or without plan lines',
  );
}
