/**
 * CalDAV as a push kind (push/adapter.ts): sync with `syncCaldav`, keeping what each listing answered (sync
 * token, ctag) for the next; read the server's errors; CalDAV's names in logs and metrics. A server asking us
 * to slow down (429, 503, 504) never pauses the queue, as a Google rate limit does: one throttling host (Yandex
 * is known to) would stop the pushes to every other. Its host cools down instead, for every worker, and only
 * the job is put aside until then. A job has a budget of time over all its requests (`CALDAV_PUSH_JOB_TIMEOUT`):
 * past it the job fails for now and its host rests for a request's deadline.
 */
import type { Config } from '../config.ts';
import type { PushAdapter, PushKindMetrics, PushSyncRequest, PushVerdict } from '../push/adapter.ts';
import type { CalDavServices } from './caldav-services.ts';
import { caldavDetails, recordListing } from './caldav-targets.ts';
import {
  CalDavAuthError,
  CalDavBudgetError,
  CalDavCalendarGoneError,
  CalDavForbiddenError,
  CalDavPermanentError,
  CalDavQuotaError,
  CalDavRateLimitError,
  CalDavTransientError,
} from './errors.ts';
import { loadPublishedResources, type PublishedResourcesDeps } from './published-resources.ts';
import { syncCaldav } from './sync-caldav.ts';
import { withinBudget } from './time-budget.ts';

/** What the CalDAV adapter is built over: the targets and their servers, the published timetable, metrics. */
export type CalDavPushDeps = PublishedResourcesDeps & {
  readonly config: Pick<
    Config,
    'caldavReconcileIntervalMs' | 'caldavPauseMs' | 'caldavPushJobTimeoutMs' | 'caldavRequestTimeoutMs'
  >;
  readonly caldav: Pick<CalDavServices, 'targets' | 'client' | 'budget'>;
  readonly metrics: { readonly caldavPush: PushKindMetrics };
};

/** Requests in flight per push (the host's budget paces them further). */
const SYNC_CONCURRENCY = 4;

/** The CalDAV push adapter. */
export function caldavPush(ctx: CalDavPushDeps): PushAdapter {
  return {
    kind: 'caldav',
    words: {
      needsCredential: 'target needs a new app password',
      credential: 'password',
      pushed: 'pushed to a CalDAV calendar',
      push: 'CalDAV push',
      rateLimited: 'CalDAV server asked us to slow down',
      movedOn: 'target removed, or given a new password or calendar, during push',
    },
    logFields: { push: 'caldav' },
    targets: ctx.caldav.targets,
    reconcileIntervalMs: ctx.config.caldavReconcileIntervalMs,
    rateLimit: { mode: 'delay-job', coolDown: (host, ms) => ctx.caldav.budget.coolDown(host, ms) },
    metrics: ctx.metrics.caldavPush,
    notConfigured: () => undefined,
    sync: (request) => sync(ctx, request),
    classify: (error, now) => classify(error, now, ctx.config.caldavPauseMs),
  };
}

async function sync(ctx: CalDavPushDeps, request: PushSyncRequest) {
  const { target, hooks } = request;
  const budgetMs = ctx.config.caldavPushJobTimeoutMs;
  const host = hostOf(target.calendarId);
  const expired = () =>
    new CalDavBudgetError(`the CalDAV push took longer than ${budgetMs} ms; it is tried again later`, {
      host,
      reason: 'job-timeout',
      timeoutMs: budgetMs,
    });
  try {
    return await withinBudget(hooks.signal, budgetMs, expired, (signal) => syncWithin(ctx, request, signal));
  } catch (error) {
    // The host rests a while: its other targets' jobs would most likely spend their budgets the same way.
    if (error instanceof CalDavBudgetError && host !== undefined)
      await ctx.caldav.budget.coolDown(host, ctx.config.caldavRequestTimeoutMs);
    throw error;
  }
}

async function syncWithin(
  ctx: CalDavPushDeps,
  { target, secret, reconcile, hooks }: PushSyncRequest,
  signal: AbortSignal,
) {
  const published = await loadPublishedResources(ctx, target.source, target.options);
  if (published === undefined) return undefined;
  const { targets } = ctx.caldav;
  const details = caldavDetails(target);
  return syncCaldav({
    client: ctx.caldav.client({ username: details.username, password: secret }, signal),
    calendarUrl: target.calendarId,
    source: target.source,
    desired: published.desired,
    index: targets.index(target.id),
    reconcile,
    syncToken: details.syncToken,
    onListing: async (listing) => {
      await recordListing(targets, target.id, target.calendarId, listing);
    },
    signal,
    log: hooks.log,
    targetId: target.id,
    concurrency: SYNC_CONCURRENCY,
    onWrite: (operation) => ctx.metrics.caldavPush.writes.inc({ operation }),
    onRefusal: hooks.onRefusal,
    onIndexed: hooks.onIndexed,
    now: hooks.now,
  });
}

function hostOf(url: string): string | undefined {
  try {
    return new URL(url).host;
  } catch {
    return undefined;
  }
}

/** The server's own words, when it gave any, after ours. */
function withReason(text: string, error: { reason?: string | undefined }): string {
  return error.reason === undefined || error.reason === '' ? text : `${text}: ${error.reason}`;
}

/** What a CalDAV failure means for the push core. */
function classify(error: unknown, now: number, pauseMs: number): PushVerdict {
  if (error instanceof CalDavRateLimitError) {
    const { retryAfterMs, host, status } = error;
    return { kind: 'rate-limit', label: 'rate-limit', retryAfterMs, host, status };
  }
  if (error instanceof CalDavAuthError) {
    const reason = 'the server refused the login or the app password (401)';
    return { kind: 'stop', label: 'auth', status: 'needs-credential', reason };
  }
  if (error instanceof CalDavForbiddenError || error instanceof CalDavQuotaError) {
    const quota = error instanceof CalDavQuotaError;
    const what = quota
      ? 'the account has no room left (507)'
      : `the server refused access to the calendar (${error.status ?? 403})`;
    const reason = withReason(what, error);
    return { kind: 'stop', label: quota ? 'quota' : 'forbidden', status: 'paused', reason, pausedUntil: now + pauseMs };
  }
  if (error instanceof CalDavCalendarGoneError) {
    const reason = 'the calendar was deleted or is no longer reachable';
    return { kind: 'stop', label: 'calendar-gone', status: 'calendar-deleted', reason };
  }
  if (error instanceof CalDavBudgetError) return { kind: 'transient', label: 'job-timeout' };
  if (error instanceof CalDavTransientError) return { kind: 'transient', label: 'transient' };
  if (error instanceof CalDavPermanentError) return { kind: 'permanent', label: 'permanent' };
  return { kind: 'transient' };
}
