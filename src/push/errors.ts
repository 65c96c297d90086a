/** Failures of the push core that mean the same for every calendar kind. */

/** A push target was removed while it was being used (a push ran, or a reconnect was under way). */
export class TargetRemovedError extends Error {
  override name = 'TargetRemovedError';

  constructor(id: string) {
    super(`push target ${id} was removed meanwhile`);
  }
}
