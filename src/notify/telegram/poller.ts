/**
 * Long polling by exactly one process of the deployment: Telegram answers a second concurrent `getUpdates` with
 * 409 Conflict, so every worker runs a poller and only the one holding a Redis lock polls (lib/poll-lock.ts: the
 * holder stops polling at once when a renewal finds the lock gone; the others take over within a third of its
 * lifetime after an orderly stop, or once it expires after a crash). `bot.start` rejects on 401
 * (a wrong token) and 409 (someone polls without the lock, or a webhook is set): the poller logs it, releases the
 * lock and waits a while before it competes again. Stopping aborts the pending `getUpdates` (grammY's `stop`,
 * which then confirms the offset of what was handled) and releases the lock: seconds, not a poll's 30.
 */
import { GrammyError } from 'grammy';
import { PollLock } from '../../lib/poll-lock.ts';
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
  private readonly lock: PollLock;

  constructor(options: TelegramPollerOptions) {
    this.options = options;
    this.lock = new PollLock({
      redis: options.redis,
      key: options.lockKey,
      lockMs: options.lockMs,
      name: 'Telegram',
      logger: options.logger,
      hold: (lost) => this.poll(lost),
    });
  }

  /** Whether this process is the one polling now. */
  get polling(): boolean {
    return this.lock.held;
  }

  /** Starts competing for the lock, in the background. */
  start(): void {
    this.lock.start();
  }

  /** Stops polling (aborting the pending getUpdates) and releases the lock. */
  async stop(): Promise<void> {
    const stopped = this.lock.stop();
    const { bot } = this.options.telegram;
    if (bot.isRunning()) await bot.stop();
    await stopped;
  }

  /** Polls until stopped or the lock is lost; how long to wait before competing again (undefined: the default). */
  private async poll(lost: AbortSignal): Promise<number | undefined> {
    const { telegram, logger } = this.options;
    const { bot } = telegram;
    const onLost = () => {
      if (bot.isRunning())
        bot.stop().catch((error: unknown) => logger.warn({ err: error }, 'could not stop polling Telegram'));
    };
    lost.addEventListener('abort', onLost, { once: true });
    try {
      logger.info({}, 'polling Telegram for updates');
      await bot.start({ allowed_updates: ALLOWED_UPDATES, timeout: POLL_TIMEOUT_SECONDS });
      return undefined;
    } catch (error) {
      if (error instanceof GrammyError && (error.error_code === 401 || error.error_code === 409))
        logger.error(
          { code: error.error_code, description: error.description },
          error.error_code === 401
            ? 'Telegram refused the bot token (TELEGRAM_BOT_TOKEN)'
            : 'Telegram says another process polls or a webhook is set',
        );
      else logger.warn({ err: error }, 'polling Telegram failed');
      return this.options.backoffMs ?? REFUSED_BACKOFF_MS;
    } finally {
      lost.removeEventListener('abort', onLost);
    }
  }
}
