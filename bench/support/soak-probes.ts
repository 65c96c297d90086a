/**
 * What the soak reads at each sample: a process's resident memory (`/proc/<pid>/status`), a Prometheus text
 * page (`/metrics` of every service process), Redis `INFO`, the depth of a BullMQ queue, and percentiles.
 */
import { readFile } from 'node:fs/promises';
import type { Queue } from 'bullmq';
import type { RedisClient } from '../../src/lib/redis-target.ts';

const MIB = 2 ** 20;

/** Resident memory of process `pid` in MiB (`VmRSS`), or null once it is gone. */
export async function rssMiB(pid: number): Promise<number | null> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const kb = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1];
    return kb === undefined ? null : Number(kb) / 1024;
  } catch {
    return null;
  }
}

/** Samples of a Prometheus text page: `name{labels}` → value (comments dropped). */
export type MetricsPage = Map<string, number>;

/** Fetches and parses `url` (a `/metrics` page); an empty page when it does not answer within 5 s. */
export async function scrape(url: string): Promise<MetricsPage> {
  const page: MetricsPage = new Map();
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(5_000) });
    for (const line of (await response.text()).split('\n')) {
      if (line === '' || line.startsWith('#')) continue;
      const space = line.lastIndexOf(' ');
      page.set(line.slice(0, space), Number(line.slice(space + 1)));
    }
  } catch {
    // A process being restarted, or too busy to answer: its figures are blank in this sample.
  }
  return page;
}

/** The sum of every sample of metric `name` (all label sets), or null when the page has none. */
export function metricSum(page: MetricsPage, name: string): number | null {
  let sum: number | null = null;
  for (const [key, value] of page) {
    if (key === name || key.startsWith(`${name}{`)) sum = (sum ?? 0) + value;
  }
  return sum;
}

/** Redis memory: `used_memory` and `used_memory_rss`, MiB. */
export async function redisMemory(redis: RedisClient): Promise<{ used: number; rss: number }> {
  const info = await redis.info('memory');
  const field = (name: string) => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(info)?.[1] ?? Number.NaN) / MIB;
  return { used: field('used_memory'), rss: field('used_memory_rss') };
}

/** Commands Redis has run since it started (`total_commands_processed`; INFO itself counts as one). */
export async function redisCommands(redis: RedisClient): Promise<number> {
  const info = await redis.info('stats');
  return Number(/^total_commands_processed:(\d+)/m.exec(info)?.[1] ?? Number.NaN);
}

/** A queue's jobs by what the soak charts. */
export interface QueueDepth {
  /** Waiting or prioritized (ready to run). */
  waiting: number;
  active: number;
  /** Delayed: retries after a backoff, and the job schedulers' next ticks. */
  delayed: number;
  /** Finished jobs Redis keeps (completed + failed), bounded by the queue's retention counts. */
  kept: number;
}

/** The depth of `queue`. */
export async function queueDepth(queue: Queue): Promise<QueueDepth> {
  const counts = await queue.getJobCounts('waiting', 'prioritized', 'active', 'delayed', 'completed', 'failed');
  return {
    waiting: (counts.waiting ?? 0) + (counts.prioritized ?? 0),
    active: counts.active ?? 0,
    delayed: counts.delayed ?? 0,
    kept: (counts.completed ?? 0) + (counts.failed ?? 0),
  };
}

/**
 * Bytes Redis spends on one finished job, measured by dropping every finished job of `queues` and dividing
 * the memory freed by their number: `MEMORY USAGE` of a job's hash misses the allocator's overhead and the
 * job's entries elsewhere (it read 1.0 KB a job where 1.58 KB were freed). Destructive: for the end of a run,
 * once nothing else writes to Redis. Null when no job was kept.
 */
export async function bytesPerKeptJob(redis: RedisClient, queues: readonly Queue[]): Promise<number | null> {
  const used = async () => Number(/^used_memory:(\d+)/m.exec(await redis.info('memory'))?.[1] ?? Number.NaN);
  const before = await used();
  let removed = 0;
  for (const queue of queues)
    for (const state of ['completed', 'failed'] as const) removed += (await queue.clean(0, 1_000_000, state)).length;
  if (removed === 0) return null;
  return (before - (await used())) / removed;
}

/** The `q` quantile (0..1) of `values` (nearest rank), or null when empty. */
export function quantile(values: readonly number[], q: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? null;
}
