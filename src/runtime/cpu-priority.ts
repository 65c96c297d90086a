import { readdirSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import type { Logger } from '../logger.ts';

/**
 * Lowers this process's CPU priority to niceness `nice` (never raises it: that needs privileges, and an operator
 * who started us lower meant it). A worker's first publication of every feed is CPU work; where workers share
 * cores with the api, the kernel then gives the api the core first, so feeds already published keep answering
 * promptly while the workers take what is left.
 *
 * On Linux niceness belongs to each thread, and a thread starts with its creator's: the threads already running
 * (V8's, and libuv's pool if something used it) are lowered one by one from /proc/self/task, and those started
 * later (the pool on its first use) inherit the main thread's. Elsewhere it is the whole process's. Returns the
 * niceness the process has now; a refusal is logged and leaves the priority as it was.
 */
export function lowerCpuPriority(nice: number, logger: Logger): number {
  const before = getPriority();
  if (nice <= before) return before;
  try {
    for (const thread of threadIds()) setPriority(thread, nice);
    logger.info({ nice, before }, 'worker runs at a lower CPU priority than the api (WORKER_NICE)');
    return nice;
  } catch (error) {
    logger.warn({ err: error, nice }, 'could not lower the CPU priority (WORKER_NICE); it stays as it was');
    return before;
  }
}

/** The ids of this process's threads (Linux), or `[0]`: the calling process, where threads are not listed. */
function threadIds(): number[] {
  try {
    const ids = readdirSync('/proc/self/task').map(Number).filter(Number.isInteger);
    // The main thread (its id is the process's) last, so a refusal part-way leaves the main thread as it was.
    return [...ids.filter((id) => id !== process.pid), ...ids.filter((id) => id === process.pid)];
  } catch {
    return [0];
  }
}
