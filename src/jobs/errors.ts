/** Typed failures of the jobs and of the requests that queue them. */
import { UnrecoverableError } from 'bullmq';
import { secondsText } from '../lib/retry-after.ts';
import { type SourceKey, sourceOf } from '../timetable/source.ts';

/** The subscription an admin named does not exist. */
export class UnknownSubscriptionError extends Error {
  override name = 'UnknownSubscriptionError';
  readonly subscription: string;

  constructor(subscription: string) {
    super(`no subscription with id "${subscription.length > 40 ? `${subscription.slice(0, 37)}...` : subscription}"`);
    this.subscription = subscription;
  }
}

/** A personal source whose subscription was deleted, or whose credential is known to be rejected. */
export class SubscriptionUnusableError extends Error {
  override name = 'SubscriptionUnusableError';
}

/**
 * The university does not know a source that was never fetched (it answered 404, or 400 to the id). Ends a
 * refresh for good; the registry remembers the answer for a while (`rememberMissing`), so that requests for
 * the id answer 404 without a job or an upstream call. Also what a connection to such a source throws.
 */
export class SourceNotFoundError extends UnrecoverableError {
  override name = 'SourceNotFoundError';
  readonly source: SourceKey;
  /** The upstream's own words, maybe empty. */
  readonly upstreamText: string;

  constructor(source: SourceKey, upstreamText: string) {
    const { kind, id } = sourceOf(source);
    const detail = upstreamText === '' ? '' : `: ${upstreamText}`;
    super(`${kind === 'personal' ? 'this subscription' : `${kind} ${id}`} is not known to the university${detail}`);
    this.source = source;
    this.upstreamText = upstreamText;
  }
}

/** A source that has not been fetched successfully yet, and whose first fetch did not end within the wait. */
export class SourceNotReadyError extends Error {
  override name = 'SourceNotReadyError';
  readonly source: SourceKey;
  /** How long the caller should wait before asking again. */
  readonly retryAfterMs: number;

  constructor(source: SourceKey, retryAfterMs: number) {
    const { kind, id } = sourceOf(source);
    super(
      `the timetable of ${kind} ${id} has not been fetched from the university yet; try again in ${secondsText(retryAfterMs)}`,
    );
    this.source = source;
    this.retryAfterMs = retryAfterMs;
  }
}
