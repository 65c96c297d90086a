/**
 * Keeps a worker process from spinning while Redis refuses writes (`maxmemory` reached under `noeviction`).
 * BullMQ fetches the next job again at once, without a delay, after any error that is not a lost connection:
 * against a full Redis one worker process ran its job-fetching script and logged the refusal about 5,000 times
 * a second. On the first refusal the guard logs one error, pauses the process's workers (jobs already running
 * go on and fail on their own, keeping their last good feed), and asks Redis every few seconds whether it has
 * room again, with `INFO memory`, a read a full Redis still answers. Then it resumes the workers and says so.
 * Nothing is restarted: raising `maxmemory` or freeing memory is enough. On a Cluster it asks the primary
 * holding the service's slot (every key shares one hash tag): another primary's memory says nothing of it.
 */
import { RedisFullError } from '../lib/errors.ts';
import { redisFailure } from '../lib/redis-failure.ts';
import { primaryFor } from '../lib/redis-node.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import type { Logger } from '../logger.ts';

/** What the guard needs of a BullMQ worker. */
export interface PausableWorker {
  pause(doNotWaitActive?: boolean): Promise<void>;
  resume(): void | Promise<void>;
}

/** How often a full Redis is asked whether it has room again; default 5 s. */
const DEFAULT_PROBE_MS = 5_000;

/**
 * Share of `maxmemory` under which a full Redis counts as having room again. Resuming at the first byte
 * below the limit would have the workers fill it again at once, and pause, and resume, every few seconds;
 * 5% of a 256 MB limit is room for thousands of feeds.
 */
export const RESUME_BELOW = 0.95;

/** Pauses workers while Redis is full, resumes them when it has room (see the module comment). */
export class RedisFullGuard {
  private readonly workers: PausableWorker[];
  private readonly redis: RedisClient;
  /** A key of the service (its prefix): its slot's primary is the one probed on a Cluster. */
  private readonly key: string;
  private readonly logger: Logger;
  private readonly probeMs: number;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(workers: PausableWorker[], redis: RedisClient, key: string, logger: Logger, probeMs = DEFAULT_PROBE_MS) {
    this.workers = workers;
    this.redis = redis;
    this.key = key;
    this.logger = logger;
    this.probeMs = probeMs;
  }

  /** Whether Redis is known to refuse writes now (the workers are paused). */
  get full(): boolean {
    return this.timer !== undefined;
  }

  /**
   * Takes a worker's `error` event: a refused write pauses the workers (logged on the first one only) and
   * answers true, so that the caller does not log it again; anything else answers false.
   */
  handle(error: unknown): boolean {
    if (!(redisFailure(error) instanceof RedisFullError)) return false;
    if (this.full || this.closed) return true;
    this.logger.error(
      { err: redisFailure(error) },
      'Redis is full (maxmemory under noeviction) and refuses writes: workers paused until it has room',
    );
    for (const worker of this.workers) void worker.pause(true).catch(() => undefined);
    this.timer = setInterval(() => void this.probe(), this.probeMs);
    this.timer.unref();
    return true;
  }

  /** Stops probing (the workers are being closed). */
  close(): void {
    this.closed = true;
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private async probe(): Promise<void> {
    let info: string;
    try {
      info = await (await primaryFor(this.redis, this.key)).info('memory');
    } catch {
      return; // Down or paused as well: asked again at the next tick.
    }
    if (!hasRoom(info) || this.timer === undefined) return;
    clearInterval(this.timer);
    this.timer = undefined;
    this.logger.info('Redis has room again: workers resumed');
    for (const worker of this.workers) await Promise.resolve(worker.resume()).catch(() => undefined);
  }
}

/** Whether `INFO memory` text says there is room for writes: no limit, or use below `share` of it. */
export function hasRoom(info: string, share = RESUME_BELOW): boolean {
  const field = (name: string) => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(info)?.[1] ?? Number.NaN);
  const limit = field('maxmemory');
  const used = field('used_memory');
  if (Number.isNaN(limit) || Number.isNaN(used)) return false;
  return limit === 0 || used < limit * share;
}
