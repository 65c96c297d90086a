/** Waiting for BullMQ jobs in tests. */
import type { Job } from 'bullmq';

/** What a queue offers for reading one job. */
export interface JobReader<T extends Job> {
  getJobState(id: string): Promise<string>;
  getJob(id: string): Promise<T | undefined>;
}

/**
 * Waits until job `id` completed or failed for good, and reads it only then: a job read first and found
 * finished by a later state check would still hold what it held while active (no return value yet).
 */
export async function jobEnded<T extends Job>(
  queue: JobReader<T>,
  id: string,
  timeoutMs = 20_000,
): Promise<{ job: T; state: 'completed' | 'failed' }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const state = await queue.getJobState(id);
    if (state === 'completed' || state === 'failed') {
      const job = await queue.getJob(id);
      if (job) return { job, state };
    }
    if (Date.now() > deadline) throw new Error(`job ${id} did not end within ${timeoutMs} ms (last state: ${state})`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
