/** Typed failures of the MAX Bot API client (client.ts): what MAX answered, or that it could not be reached. */

/**
 * MAX answered with an error: its HTTP status and the body's `code` (`verify.token`, `chat.denied`,
 * `chat.not.found`, `too.many.requests`, …) and `message`. `retryAfterMs` is set on a 429: the `Retry-After`
 * MAX sent, or else the client's own growing wait (from a second). The token is never in the message.
 */
export class MaxApiError extends Error {
  override name = 'MaxApiError';
  readonly status: number;
  readonly code: string;
  readonly retryAfterMs: number | undefined;

  constructor(status: number, code: string, message: string, retryAfterMs?: number) {
    super(`MAX answered ${status} ${code}: ${message}`);
    this.status = status;
    this.code = code;
    this.retryAfterMs = retryAfterMs;
  }
}

/** MAX could not be reached, or did not answer in time, or answered what is not its API (retried). */
export class MaxNetworkError extends Error {
  override name = 'MaxNetworkError';
}

/**
 * Updates of a page (long polling) failed, before their dialog's lane or in it: the page must be asked for again,
 * and those of its updates answered already are then dropped as copies. `cause` is the first failure.
 */
export class MaxPageError extends Error {
  override name = 'MaxPageError';
  readonly failed: number;

  constructor(failed: number, of: number, cause: unknown) {
    super(`${failed} of ${of} MAX updates failed`, { cause });
    this.failed = failed;
  }
}
