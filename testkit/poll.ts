/** Polling for tests that watch another process, a queue or a server: wait for what is asserted, never sleep. */

const POLL_MS = 25;

/**
 * Reads until `done` holds or `timeoutMs` passed; answers the last value read either way, so that the caller's
 * assertion on it shows what was there instead of a bare timeout.
 */
export async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/** Reads until the value is defined, and answers it; throws naming `what` after `timeoutMs`. */
export async function eventually<T>(read: () => Promise<T | undefined>, what: string, timeoutMs = 15_000): Promise<T> {
  const value = await until(read, (found) => found !== undefined, timeoutMs);
  if (value === undefined) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
  return value;
}

/** Waits until `check` holds; throws naming `what` after `timeoutMs`. */
export async function waitUntil(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 15_000,
): Promise<void> {
  await eventually(async () => ((await check()) ? true : undefined), what, timeoutMs);
}
