/**
 * The study plan of a personal source (`/users/@me/plan`), fetched at most daily by its refresh: one more
 * upstream request through the same budget, after the timetable's, and only when the stored plan is due. A
 * plan that fails to load never fails the refresh: the failure is logged once and recorded, and the feed is
 * published with the last good plan (or without plan lines when there never was one).
 */

import type { ServiceContext } from '../runtime/context.ts';
import { type StoredStudyPlan, StudyPlanStore } from '../sources/study-plan-store.ts';
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

/** Whether a plan stored as `stored` should be fetched at `now`. */
export function isPlanDue(stored: StoredStudyPlan | undefined, now: number): boolean {
  if (stored === undefined) return true;
  const { failure } = stored;
  const wait = failure === null || LASTING_FAILURES.has(failure.kind) ? PLAN_MAX_AGE_MS : PLAN_RETRY_MS;
  return now - stored.attemptedAt >= wait;
}

/**
 * Fetches and stores the plan of `run`'s personal source with `credential` when it is due. Never throws for
 * the upstream's sake; a rejected credential here does not mark the subscription (its timetable was read).
 */
export async function refreshStudyPlan(ctx: ServiceContext, run: RefreshRun, credential: string): Promise<void> {
  const plans = new StudyPlanStore(ctx.redis, ctx.keys);
  const stored = await plans.load(run.source);
  const now = ctx.now();
  if (!isPlanDue(stored, now)) return;
  try {
    const subjects = await ctx.upstream.myPlan(credential, { signal: run.signal });
    await plans.saveFetched(run.source, subjects, now);
    run.log.debug({ subjects: subjects.length }, 'study plan fetched');
  } catch (error) {
    const { kind } = classifyFailure(error, run.source);
    // Redis or a bug is not the university's failure: the refresh fails as it would without a plan.
    if (kind === 'internal') throw error;
    const message = asError(error).message;
    ctx.metrics.upstreamErrors.inc({ kind });
    await plans.saveFailure(run.source, stored, { at: now, kind, message });
    run.log.warn(
      { err: error, kind, lastGoodPlan: stored?.fetchedAt ?? null },
      'study plan not loaded; the timetable is published with the last good plan, or without plan lines',
    );
  }
}
