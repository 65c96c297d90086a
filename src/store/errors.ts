/** Typed failures of the Redis stores. */

/**
 * Other writes to one subscription (sign-ups of the same person) kept getting in between a sign-up's read
 * and its write; nothing was changed, and trying again shortly succeeds.
 */
export class SignUpContentionError extends Error {
  override name = 'SignUpContentionError';

  constructor() {
    super('too many simultaneous sign-ups of this university user: try again in a moment');
  }
}

/** Thrown by `PushTargetStore.create` when the id the caller chose is taken. */
export class TargetExistsError extends Error {
  override name = 'TargetExistsError';
}
