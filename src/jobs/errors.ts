/** Typed failures of the jobs and of the requests that queue them. */

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
