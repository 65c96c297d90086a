/**
 * Rejects with {@link DeadlineError} when `promise` takes longer than `ms`. The promise itself runs on (Redis
 * commands and shutdown steps cannot be cancelled); the timer never keeps the process alive.
 */
import { DeadlineError } from './errors.ts';
export async function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlineError(`no answer within ${ms} ms`)), ms);
    timer.unref();
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
