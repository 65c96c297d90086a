/** One upstream fetch per refresh, and what a failure means for the source (transient or permanent, and why). */
import type { ServiceContext } from '../runtime/context.ts';
import { DecryptionError, SecretKeyMissingError } from '../security/errors.ts';
import { type SourceKey, sourceOf } from '../sources/source.ts';
import { calendarName, derivedName } from '../timetable/calendar-name.ts';
import {
  UpstreamAuthError,
  UpstreamError,
  UpstreamHttpError,
  UpstreamNetworkError,
  UpstreamNotFoundError,
  UpstreamProtocolError,
  UpstreamRateLimitError,
  UpstreamTimeoutError,
} from '../upstream/errors.ts';
import type { ScheduleResult } from '../upstream/schemas.ts';
import { SubscriptionUnusableError } from './errors.ts';
import type { RefreshRun } from './refresh-run.ts';

/** A timetable as fetched, with the name its calendar gets. */
export interface FetchedTimetable extends ScheduleResult {
  name: string;
}

/**
 * Fetches a source's timetable: one upstream request. Personal sources use their subscription's credential;
 * the fetch tells `run` which version it sent, so that a rejection marks only the credential actually used.
 */
export async function fetchSource(ctx: ServiceContext, run: RefreshRun): Promise<FetchedTimetable> {
  const ref = sourceOf(run.source);
  const options = { signal: run.signal };
  if (ref.kind === 'group' || ref.kind === 'employee') {
    const id = Number(ref.id);
    const result =
      ref.kind === 'group'
        ? await ctx.upstream.groupSchedule(id, options)
        : await ctx.upstream.employeeSchedule(id, options);
    const subject = { kind: ref.kind, id };
    // Only when the entries do not name the timetable (none, or a tie): the name it had before, not `Группа 4242`.
    const known = derivedName(subject, result.entries) ?? (await ctx.snapshots.snapshot(run.source))?.name;
    return { ...result, name: calendarName(subject, result.entries, known) };
  }
  const subscription = await ctx.subscriptions.get(ref.id);
  if (!subscription) throw new SubscriptionUnusableError(`subscription ${ref.id} no longer exists`);
  if (subscription.status === 'needs-credential')
    throw new SubscriptionUnusableError(
      `subscription ${ref.id} needs a new credential: ${subscription.statusReason ?? 'the university rejected it'}`,
    );
  const stored = await ctx.subscriptions.credentialFor(ref.id);
  if (stored === undefined) throw new SubscriptionUnusableError(`subscription ${ref.id} has no credential`);
  run.sentCredential(stored.version);
  const result = await ctx.upstream.mySchedule(stored.credential, options);
  return { ...result, name: subscription.name };
}

/** Failure classes as recorded on sources and counted in metrics. */
export type FailureKind =
  | 'not-found'
  | 'auth'
  | 'rate-limit'
  | 'timeout'
  | 'network'
  | 'http'
  | 'protocol'
  | 'subscription'
  | 'internal';

/** What a failed fetch means. */
export interface FailureClass {
  kind: FailureKind;
  /** Retrying cannot help: the job ends with UnrecoverableError and the source shows why. */
  permanent: boolean;
  /** For `rate-limit`: how long the whole queue pauses. */
  retryAfterMs?: number;
}

/** Classifies a refresh failure by error class (never by message text). */
export function classifyFailure(error: unknown, source: SourceKey): FailureClass {
  if (error instanceof SubscriptionUnusableError) return { kind: 'subscription', permanent: true };
  // A credential this worker cannot decrypt (SECRET_KEY missing or rotated) will not decrypt on a retry either.
  if (error instanceof DecryptionError || error instanceof SecretKeyMissingError)
    return { kind: 'subscription', permanent: true };
  if (error instanceof UpstreamRateLimitError)
    return { kind: 'rate-limit', permanent: false, retryAfterMs: error.retryAfterMs ?? 1_000 };
  if (error instanceof UpstreamNotFoundError) return { kind: 'not-found', permanent: true };
  // A rejected credential is the user's to replace; on a public timetable it is our configuration, worth retrying.
  if (error instanceof UpstreamAuthError) return { kind: 'auth', permanent: source.startsWith('personal:') };
  if (error instanceof UpstreamTimeoutError) return { kind: 'timeout', permanent: false };
  if (error instanceof UpstreamNetworkError) return { kind: 'network', permanent: false };
  if (error instanceof UpstreamHttpError) return { kind: 'http', permanent: false };
  // A malformed or truncated answer is usually a passing upstream fault: retried, then the feed goes stale.
  if (error instanceof UpstreamProtocolError || error instanceof UpstreamError)
    return { kind: 'protocol', permanent: false };
  return { kind: 'internal', permanent: false };
}
