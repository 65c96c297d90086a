/**
 * What a failed upstream fetch means for its source: transient or permanent, and why. Classified by error class,
 * never by message text; refreshes and the study plan's fetch share it.
 */
import { DecryptionError, SecretKeyMissingError } from '../security/errors.ts';
import type { SourceKey } from '../timetable/source.ts';
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
import { SubscriptionUnusableError } from './errors.ts';

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
