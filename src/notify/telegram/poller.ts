/**
 * Long polling by exactly one process of the deployment: Telegram answers a second concurrent `getUpdates` with
 * 409 Conflict, so every worker runs a poller and only the one holding a Redis lock polls.
 *
 * The holder renews the lock every third of its lifetime and stops polling at once when a renewal fails (someone
 * else has it). The others try to take it every third of its lifetime: after a holder's orderly stop (it releases
 * the lock) one takes over within that third; after a crash, once the lock expires. `bot.start` rejects on 401
 * (a wrong token) and 409 (someone polls without the lock, or a webhook is set): the poller logs it, releases the
 * lock and waits a while before it competes again. Stopping aborts the pending `getUpdates` (grammY's `stop`,
 * which then confirms the offset of what was handled) and releases the lock: seconds, not a poll's 30.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { GrammyError } from 'grammy';
import { extendLock, lockOwner, releaseLock, tryLock } from '../../lib/redis-lock.ts';
import type { RedisClient } from '../../lib/redis-target.ts';
import type { Logger } from '../../logger.ts';
import { ALLOWED_UPDATES, POLL_TIMEOUT_SECONDS, type TelegramBot } from './bot.ts';

/** How long a poller waits before competing again after Telegram refused it (401, 409) or failed. */
const REFUSED_BACKOFF_MS = 5_000;

/** Options of {@link TelegramPoller}. */
export interface TelegramPollerOptions {
  telegram: Pick<TelegramBot, 'bot'>;
  redis: RedisClient;
  /** The lock's key (`keys.tgPollLock`). */
  lockKey: string;
  /** The lock's lifetime (`TELEGRAM_POLL_LOCK`). */
  lockMs: number;
  logger: Pick<Logger, 'info' | 'warn' | 'error'>;
  /** After a refusal; default 5 s (tests shorten it). */
  backoffMs?: number;
}

/** One process's poller: polls while it holds the lock, waits for it otherwise. */
export class TelegramPoller {
  private readonly options: TelegramPollerOptions;
  private readonly owner = lockOwner();
  private stopping = false;
  private wake = new AbortController();
  private running: Promise<void> | undefined;
  private holding = false;

  constructor(options: TelegramPollerOptions) {
    this.options = options;
  }

  /** Whether this process is the one polling now. */
  get polling(): boolean {
    return this.holding;
  }

  /** Starts competing for the lock, in the background. */
  start(): void {
    this.running ??= this.loop().catch((error: unknown) => {
      this.options.logger.error({ err: error }, 'the Telegram poller stopped on an error');
    });
  }

  /** Stops polling (aborting the pending getUpdates) and releases the lock. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wake.abort();
    const { bot } = this.options.telegram;
    if (bot.isRunning()) await bot.stop();
    await this.running;
  }

  private async loop(): Promise<void> {
    const { redis, lockKey, lockMs, logger } = this.options;
    while (!this.stopping) {
      let waitMs = Math.max(100, Math.floor(lockMs / 3));
      let taken = false;
      try {
        taken = await tryLock(redis, lockKey, this.owner, lockMs);
      } catch (error) {
        logger.warn({ err: error }, 'could not ask Redis for the Telegram poll lock');
      }
      if (taken && !this.stopping) waitMs = await this.poll();
      else if (taken) await releaseLock(redis, lockKey, this.owner).catch(() => undefined);
      if (this.stopping) break;
      await sleep(waitMs, undefined, { signal: this.wake.signal }).catch(() => undefined);
    }
  }

  /** Polls while the lock is ours; how long to wait before competing again. */
  private async poll(): Promise<number> {
    const { telegram, redis, lockKey, lockMs, logger } = this.options;
    const { bot } = telegram;
    this.holding = true;
    let lost = false;
    const renew = setInterval(
      () => {
        extendLock(redis, lockKey, this.owner, lockMs)
          .then((held) => {
            if (held || this.stopping) return;
            lost = true;
            logger.warn({}, 'lost the Telegram poll lock: another process polls now');
            if (bot.isRunning()) return bot.stop();
          })
          .catch((error: unknown) => logger.warn({ err: error }, 'could not renew the Telegram poll lock'));
      },
      Math.max(100, Math.floor(lockMs / 3)),
    );
    let waitMs = Math.max(100, Math.floor(lockMs / 3));
    try {
      logger.info({}, 'polling Telegram for updates');
      await bot.start({ allowed_updates: ALLOWED_UPDATES, timeout: POLL_TIMEOUT_SECONDS });
    } catch (error) {
      waitMs = this.options.backoffMs ?? REFUSED_BACKOFF_MS;
      if (error instanceof GrammyError && (error.error_code === 401 || error.error_code === 409))
        logger.error(
          { code: error.error_code, description: error.description },
          error.error_code === 401
            ? 'Telegram refused the bot token (TELEGRAM_BOT_TOKEN)'
            : 'Telegram says another process polls or a webhook is set',
        );
      else logger.warn({ err: error }, 'polling Telegram failed');
    } finally {
      clearInterval(renew);
      this.holding = false;
      if (!lost) await releaseLock(redis, lockKey, this.owner).catch(() => undefined);
    }
    return waitMs;
  }
}
