/** Typed failures of the sources stage. */

/** A source that does not parse; `message` says what was wrong. */
export class InvalidSourceError extends Error {
  override name = 'InvalidSourceError';
}
