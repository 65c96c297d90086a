/** Polling for tests that watch another process. */

/** Reads every 100 ms until `done` holds or `timeoutMs` passed; answers the last value read either way (the caller asserts on it). */
export async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
