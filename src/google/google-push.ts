/**
 * Google Calendar as a push kind (push/adapter.ts): sync with `syncGoogleTarget`, then give a calendar created before
 * its timetable was named that name; read Google's errors; Google's names in logs and metrics. A rate limit is
 * Google's for every job alike (one API, one project quota), so it pauses the whole Google push queue.
 */
import type { Config } from '../config.ts';
import type { PushAdapter, PushKindMetrics, PushSyncRequest, PushVerdict } from '../push/adapter.ts';
import { loadPublished, type PublishedDeps } from '../push/pending-changes.ts';
import type { SyncCounts } from '../store/push-target-record.ts';
import type { CalendarClient } from './calendar-client.ts';
import {
  CalendarGoneError,
  GoogleConsentError,
  GoogleError,
  GoogleNotConfiguredError,
  GooglePermanentError,
  GoogleQuotaError,
  GoogleRateLimitError,
  GoogleTransientError,
} from './errors.ts';
import { markerFor } from './event-marker.ts';
import type { GoogleServices } from './google-services.ts';
import { googleDetails } from './google-targets.ts';
import { nameCalendar } from './name-calendar.ts';
import { syncGoogleTarget } from './sync-target.ts';

/** What the Google adapter is built over: Google's services, the published timetable, its metrics. */
export type GooglePushDeps = PublishedDeps & {
  readonly config: Pick<Config, 'googleReconcileIntervalMs' | 'googleQuotaPauseMs' | 'googleRateLimit'>;
  readonly google: Pick<GoogleServices, 'configured' | 'targets' | 'calendar'>;
  readonly metrics: { readonly googlePush: PushKindMetrics };
};

/** Requests in flight per push (the request budget paces them further). */
const SYNC_CONCURRENCY = 4;

/** The Google push adapter. */
export function googlePush(ctx: GooglePushDeps): PushAdapter {
  return {
    kind: 'google',
    words: {
      needsCredential: 'target needs a new consent',
      credential: 'token',
      pushed: 'pushed to Google Calendar',
      push: 'push',
      rateLimited: 'Google rate limit: push queue paused',
      movedOn: 'target removed or reconnected during push',
    },
    targets: ctx.google.targets,
    reconcileIntervalMs: ctx.config.googleReconcileIntervalMs,
    // The limiter paces push starts and is what lets a Google rate limit pause the queue (`queue.rateLimit`).
    rateLimit: { mode: 'pause-queue', startsPerSecond: ctx.config.googleRateLimit },
    metrics: ctx.metrics.googlePush,
    notConfigured: () => (ctx.google.configured ? undefined : 'Google push is not configured'),
    sync: (request) => sync(ctx, request),
    classify: (error, now) => classify(error, now, ctx.config.googleQuotaPauseMs),
  };
}

async function sync(ctx: GooglePushDeps, { target, secret, reconcile, hooks }: PushSyncRequest) {
  const published = await loadPublished(ctx, target.source, target.options);
  if (published === undefined) return undefined;
  const calendar = ctx.google.calendar(secret, googleDetails(target).budgetKey, hooks.signal);
  const summary: SyncCounts = await syncGoogleTarget({
    calendar,
    calendarId: target.calendarId,
    targetId: target.id,
    marker: markerFor(target.source),
    desired: published.desired,
    index: ctx.google.targets.index(target.id),
    reconcile,
    concurrency: SYNC_CONCURRENCY,
    log: hooks.log,
    onWrite: (operation) => ctx.metrics.googlePush.writes.inc({ operation }),
    onRefusal: hooks.onRefusal,
    onIndexed: hooks.onIndexed,
    now: hooks.now,
    signal: hooks.signal,
  });
  await renameIfNamed(ctx, { target, hooks }, calendar, published.name);
  return summary;
}

/**
 * Gives a calendar created before its timetable was named the timetable's name. After the events: Google failing
 * the rename is logged and tried again by the next push (the placeholder stays recorded), and never costs the
 * events a retry. Anything else (Redis failing to record the name, a bug) fails the push like any other step:
 * swallowed, it would hide a broken store or a broken release behind a warning.
 */
async function renameIfNamed(
  ctx: GooglePushDeps,
  { target, hooks }: Pick<PushSyncRequest, 'target' | 'hooks'>,
  calendar: CalendarClient,
  name: string,
): Promise<void> {
  const record = (id: string, calendarId: string, calendarName: string) =>
    ctx.google.targets.recordCalendarName(id, calendarId, calendarName);
  try {
    await nameCalendar(calendar, target, name, record, hooks.log);
  } catch (error) {
    if (!(error instanceof GoogleError)) throw error;
    hooks.log.warn(
      { reason: `${error.name}: ${error.message}` },
      'could not rename the google calendar; the next push tries again',
    );
  }
}

/** What a Google failure means for the push core. */
function classify(error: unknown, now: number, quotaPauseMs: number): PushVerdict {
  if (error instanceof GoogleRateLimitError)
    return { kind: 'rate-limit', label: 'rate-limit', retryAfterMs: error.retryAfterMs, status: error.status };
  if (error instanceof GoogleQuotaError) {
    const pausedUntil = now + quotaPauseMs;
    const reason = `Google calendar usage limits exceeded; pushes resume at ${new Date(pausedUntil).toISOString()}`;
    return { kind: 'stop', label: 'quota', status: 'paused', reason, pausedUntil };
  }
  if (error instanceof GoogleConsentError)
    return {
      kind: 'stop',
      label: 'consent',
      status: 'needs-credential',
      reason: `Google refused the grant: ${error.message}`,
    };
  if (error instanceof CalendarGoneError) {
    const reason = 'the calendar was deleted or is no longer reachable';
    return { kind: 'stop', label: 'calendar-gone', status: 'calendar-deleted', reason };
  }
  if (error instanceof GoogleTransientError) return { kind: 'transient', label: 'transient' };
  if (error instanceof GooglePermanentError) return { kind: 'permanent', label: 'permanent' };
  if (error instanceof GoogleNotConfiguredError) return { kind: 'permanent' };
  return { kind: 'transient' };
}
