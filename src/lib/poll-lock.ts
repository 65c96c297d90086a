/**
 * The lock loop of a long poller that exactly one process of a deployment may run (Telegram refuses a second
 * poller, MAX would hand both the same updates): every process competes for one Redis lock, and only its holder
 * polls.
 *
 * The holder renews the lock every third of its lifetime and is told at once when a renewal finds it gone
 * (someone else has it). The others try to take it every third of its lifetime: after a holder's orderly stop (it
 * releases the lock) one takes over within that third; after a crash, once the lock expires. Stopping wakes the
 * loop, and the holder's work is expected to end promptly (the poller aborts its pending poll); the lock is then
 * released.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../logger.ts';
import { RedisUnavailableError } from './errors.ts';
import { redisFailure } from './redis-failure.ts';
import { extendLock, lockOwner, releaseLock, tryLock } from './redis-lock.ts';
import type { RedisOutageLog } from './redis-outage.ts';
import type { RedisClient } from './redis-target.ts';

/** Options of {@link PollLock}. */
export interface PollLockOptions {
  redis: RedisClient;
  /** The lock's key. */
  key: string;
  /** The lock's lifetime. */
  lockMs: number;
  /** Names the poller in log lines: `Telegram`, `MAX`. */
  name: string;
  logger: Pick<Logger, 'warn' | 'error'>;
  /**
   * The process's Redis outage log: given, a lock request that failed because Redis did not answer is told there
   * (once per outage) rather than logged at each try.
   */
  redisOutage?: Pick<RedisOutageLog, 'failed' | 'restored'> | undefined;
  /**
   * Polls while the lock is held; `lost` aborts once another process has it. Resolves to how long to wait before
   * competing again (undefined: a third of the lock's lifetime).
   */
  hold: (lost: AbortSignal) => Promise<number | undefined>;
}

/** One process's place in the competition for the lock. */
export class PollLock {
  /** This process's name as the lock's owner (a Lua script may check that the lock is still ours). */
  readonly owner = lockOwner();
  private readonly options: PollLockOptions;
  private readonly wake = new AbortController();
  private running: Promise<void> | undefined;
  private holding = false;

  constructor(options: PollLockOptions) {
    this.options = options;
  }

  /** Whether this process holds the lock now. */
  get held(): boolean {
    return this.holding;
  }

  /** Aborted once {@link stop} was called. */
  get stopped(): AbortSignal {
    return this.wake.signal;
  }

  /** Starts competing for the lock, in the background. */
  start(): void {
    this.running ??= this.loop().catch((error: unknown) => {
      this.options.logger.error({ err: error }, `the ${this.options.name} poller stopped on an error`);
    });
  }

  /** Stops competing; resolves once the holder's work has ended and the lock was released. */
  async stop(): Promise<void> {
    this.wake.abort();
    await this.running;
  }

  private async loop(): Promise<void> {
    const { redis, key, lockMs, name } = this.options;
    while (!this.stopped.aborted) {
      let waitMs = this.third();
      let taken = false;
      try {
        taken = await tryLock(redis, key, this.owner, lockMs);
        this.options.redisOutage?.restored(this.source());
      } catch (error) {
        this.trouble(error, `could not ask Redis for the ${name} poll lock`);
      }
      if (taken && !this.stopped.aborted) waitMs = await this.holdLock();
      else if (taken) await releaseLock(redis, key, this.owner).catch(() => undefined);
      if (this.stopped.aborted) break;
      await sleep(waitMs, undefined, { signal: this.stopped }).catch(() => undefined);
    }
  }

  /** Runs `hold` while the lock is ours; how long to wait before competing again. */
  private async holdLock(): Promise<number> {
    const { redis, key, lockMs, logger, name } = this.options;
    this.holding = true;
    const lost = new AbortController();
    // One renewal at a time: while Redis does not answer, they would pile up and all report the loss at once.
    let renewing = false;
    const renew = setInterval(() => {
      if (renewing) return;
      renewing = true;
      extendLock(redis, key, this.owner, lockMs)
        .then((held) => {
          this.options.redisOutage?.restored(this.source());
          if (held || this.stopped.aborted || lost.signal.aborted) return;
          logger.warn({}, `lost the ${name} poll lock: another process polls now`);
          lost.abort();
        })
        .catch((error: unknown) => this.trouble(error, `could not renew the ${name} poll lock`))
        .finally(() => {
          renewing = false;
        });
    }, this.third());
    try {
      return (await this.options.hold(lost.signal)) ?? this.third();
    } finally {
      clearInterval(renew);
      this.holding = false;
      if (!lost.signal.aborted) await releaseLock(redis, key, this.owner).catch(() => undefined);
    }
  }

  /** A lock request failed: Redis not answering goes to the outage log when there is one, the rest is logged. */
  private trouble(error: unknown, what: string): void {
    const { redisOutage, logger } = this.options;
    if (redisOutage !== undefined && redisFailure(error) instanceof RedisUnavailableError)
      redisOutage.failed(this.source(), error);
    else logger.warn({ err: error }, what);
  }

  /** The lock's name in the outage log. */
  private source(): string {
    return `${this.options.name.toLowerCase()}-poll-lock`;
  }

  private third(): number {
    return Math.max(100, Math.floor(this.options.lockMs / 3));
  }
}
