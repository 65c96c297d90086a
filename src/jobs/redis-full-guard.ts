/**
 * Keeps a worker process from spinning while Redis refuses writes (`maxmemory` reached under `noeviction`).
 * BullMQ fetches the next job again at once, without a delay, after any error that is not a lost connection:
 * against a full Redis one worker process ran its job-fetching script and logged the refusal about 5,000 times
 * a second. On the first refusal the guard logs one error, pauses the process's workers (jobs already running
 * go on and fail on their own, keeping their last good feed), and asks Redis every few seconds whether it has
 * room again, with `INFO memory`, a read a full Redis still answers. Then it resumes the workers and says so:
 * once use is well below the limit, or has stayed under it for several probes in a row (Redis then takes
 * writes again, even if it does not drop as low as the margin asks).
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

/**
 * Free bytes under `maxmemory` that count as room too: with a large limit, 5% is far more than workers
 * need (16 MiB holds hundreds of feeds).
 */
export const RESUME_MARGIN_BYTES = 16 * 1024 * 1024;

/**
 * Probes in a row that must find use under the limit, though not by the margin, for the workers to resume.
 * A Redis settled at 95-99.9% of its limit takes writes: without this the workers would stay paused for
 * good. If they fill it again, they pause again and wait as long once more (30 s at the default probe).
 */
export const RESUME_AFTER_PROBES = 6;

/** How `INFO memory` text stands: room to resume at once, under the limit only, or at it (or unreadable). */
export type MemoryRoom = 'room' | 'under' | 'full';

/** Pauses workers while Redis is full, resumes them when it has room (see the module comment). */
export class RedisFullGuard {
  private readonly workers: PausableWorker[];
  private readonly redis: RedisClient;
  /** A key of the service (its prefix): its slot's primary is the one probed on a Cluster. */
  private readonly key: string;
  private readonly logger: Logger;
  private readonly probeMs: number;
  private timer: NodeJS.Timeout | undefined;
  /** Probes in a row, since the pause, that found use under the limit but not by the margin. */
  private underProbes = 0;
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
      {
        err: redisFailure(error),
        resumeBelowShare: RESUME_BELOW,
        resumeMarginBytes: RESUME_MARGIN_BYTES,
        resumeAfterProbes: RESUME_AFTER_PROBES,
        probeMs: this.probeMs,
      },
      'Redis is full (maxmemory under noeviction) and refuses writes: workers paused until use is below ' +
        `${RESUME_BELOW * 100}% of maxmemory or ${RESUME_MARGIN_BYTES / 1024 / 1024} MiB under it, ` +
        `or under it for ${RESUME_AFTER_PROBES} probes in a row`,
    );
    this.underProbes = 0;
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
    if (this.timer === undefined) return;
    const room = memoryRoom(info);
    this.underProbes = room === 'under' ? this.underProbes + 1 : 0;
    if (room === 'full' || (room === 'under' && this.underProbes < RESUME_AFTER_PROBES)) return;
    clearInterval(this.timer);
    this.timer = undefined;
    this.logger.info(
      { probesUnderLimit: this.underProbes },
      room === 'room'
        ? 'Redis has room again: workers resumed'
        : 'Redis has stayed under maxmemory, though near it: workers resumed',
    );
    for (const worker of this.workers) await Promise.resolve(worker.resume()).catch(() => undefined);
  }
}

/**
 * How `INFO memory` text stands: 'room' with no limit, use below `share` of it, or `margin` bytes free under
 * it; 'under' for any other use below the limit; 'full' at the limit or when the text cannot be read.
 */
export function memoryRoom(info: string, share = RESUME_BELOW, margin = RESUME_MARGIN_BYTES): MemoryRoom {
  const field = (name: string) => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(info)?.[1] ?? Number.NaN);
  const limit = field('maxmemory');
  const used = field('used_memory');
  if (Number.isNaN(limit) || Number.isNaN(used)) return 'full';
  if (limit === 0 || used < limit * share || limit - used >= margin) return 'room';
  return used < limit ? 'under' : 'full';
}
