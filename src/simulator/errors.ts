/** Typed failures of the university simulator. */

/** Thrown by `readBody` when a request body is larger than 1 MiB. */
export class BodyTooLargeError extends Error {
  override name = 'BodyTooLargeError';
}
