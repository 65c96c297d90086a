/** Typed failures of the subscription use cases: signing up, replacing a credential, connecting Google. */

/** The university rejected the credential a person offered. */
export class CredentialRejectedError extends Error {
  override name = 'CredentialRejectedError';

  constructor(options?: ErrorOptions) {
    super('the university rejected this credential', options);
  }
}

/** The university could not be asked whose a credential is (it failed, or did not answer); `cause` says how. */
export class CredentialCheckError extends Error {
  override name = 'CredentialCheckError';

  constructor(cause: Error) {
    super(`could not verify the credential: ${cause.message}`, { cause });
  }
}

/** A replacement credential belongs to another university user than the subscription's. */
export class OtherUserCredentialError extends Error {
  override name = 'OtherUserCredentialError';

  constructor() {
    super('this credential belongs to another university user');
  }
}

/**
 * A replacement credential whose owner cannot be checked: the subscription or the credential's profile has no
 * university user id (some deployments send none), and it is not the credential the subscription was made with.
 */
export class UnverifiableCredentialError extends Error {
  override name = 'UnverifiableCredentialError';

  constructor() {
    super(
      'the university does not say whose credential this is, so it cannot replace the credential of this ' +
        'subscription; sign up with it for a new feed',
    );
  }
}

/** The personal source of a Google connection has no subscription (any more). */
export class UnknownSourceError extends Error {
  override name = 'UnknownSourceError';
}
