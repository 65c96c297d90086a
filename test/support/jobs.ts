/** Waiting for BullMQ jobs in tests. */
import type { Job, JobType } from 'bullmq';
import { until } from '../../testkit/poll.ts';

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
  const read = async () => {
    const state = await queue.getJobState(id);
    const ended = state === 'completed' || state === 'failed';
    return { state, job: ended ? await queue.getJob(id) : undefined };
  };
  const last = await until(read, ({ job }) => job !== undefined, timeoutMs);
  if (last.job === undefined || (last.state !== 'completed' && last.state !== 'failed'))
    throw new Error(`job ${id} did not end within ${timeoutMs} ms (last state: ${last.state})`);
  return { job: last.job, state: last.state };
}

/** What a queue offers for listing its jobs in a set of states. */
export interface JobLister<T extends Job> {
  getJobs(types: JobType[]): Promise<T[]>;
}

/** Every state a job can be in until it ended, and both ends. */
const ALL_STATES: JobType[] = ['completed', 'failed', 'active', 'wait', 'delayed', 'prioritized'];

/**
 * Waits until at least `count` jobs of `queue` whose `data.target` is `target` exist and every one of them has ended
 * (completed or failed); answers their ids, oldest first. A list cut by a Redis failover (the client drops its
 * connection when told of the new primary, which on a busy machine can come after the test saw the promotion) is
 * read again: the service's own work is what the tests judge, not this look at it.
 */
export async function targetJobsEnded<T extends Job<{ target: string }>>(
  queue: JobLister<T>,
  target: string,
  count: number,
  timeoutMs: number,
): Promise<string[]> {
  const read = async () => {
    try {
      const jobs = (await queue.getJobs(ALL_STATES)).filter((job) => job.data.target === target);
      return { jobs, states: await Promise.all(jobs.map((job) => job.getState())) };
    } catch (error) {
      if (error instanceof Error && error.message === 'Connection is closed.') return { jobs: [], states: [] };
      throw error;
    }
  };
  const ended = ({ jobs, states }: Awaited<ReturnType<typeof read>>) =>
    jobs.length >= count && states.every((state) => state === 'completed' || state === 'failed');
  const seen = await until(read, ended, timeoutMs);
  if (!ended(seen))
    throw new Error(`target ${target}: ${seen.jobs.length} jobs (${seen.states.join(', ')}), wanted ${count} ended`);
  return seen.jobs.sort((a, b) => a.timestamp - b.timestamp || Number(a.id) - Number(b.id)).map((job) => job.id ?? '');
}

/**
 * Asks the api at `apiUrl` for a resync of `source` (as an admin, `adminToken`) and waits until each refresh it
 * queued on `refresh` has completed; throws with the job's reason for one that did not. The end-to-end tests drive
 * a change through the running service so.
 */
export async function resyncAndWait(
  apiUrl: string,
  adminToken: string,
  refresh: JobReader<Job>,
  source: string,
): Promise<void> {
  const response = await fetch(`${apiUrl}/admin/resync`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ source }),
  });
  if (response.status !== 202) throw new Error(`resync of ${source}: ${response.status} ${await response.text()}`);
  const { jobs } = (await response.json()) as { jobs: string[] };
  for (const id of jobs) {
    const { state, job } = await jobEnded(refresh, id, 30_000);
    if (state !== 'completed') throw new Error(`refresh ${id} ${state}: ${job.failedReason}`);
  }
}
