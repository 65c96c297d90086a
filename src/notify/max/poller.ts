/**
 * Long polling of MAX by exactly one process of the deployment: every worker runs a poller, and only the one
 * holding a Redis lock (`MAX_POLL_LOCK`) polls. MAX does not refuse a second poller as Telegram does; it would
 * hand both the same updates, so the lock is what keeps one.
 *
 * Its place in MAX's queue is the `marker` (store/max-poll-marker.ts), kept in Redis and moved only after a page's
 * updates were handled (each answered in its dialog's lane, the lanes idle): a page is asked for with the stored
 * marker, which commits what came before it at MAX. A restart or a takeover goes on from the stored marker, so an
 * update handled is not asked for again and one not handled is not committed; a page cut short by a crash is
 * asked for again, and its updates handled already are dropped as copies (bot.ts). The marker is stored only
 * while the lock is still this process's.
 *
 * The holder renews the lock every third of its lifetime and stops at once when a renewal fails (someone else
 * has it). The others try to take it every third of its lifetime: after a holder's orderly stop (it releases the
 * lock) one takes over within that third; after a crash, once the lock expires. A holder first takes away any
 * webhook subscription (while one is active MAX answers polls with nothing). A refused token (401) or a failure
 * makes it wait a while before it polls again. Stopping aborts the pending poll (MAX holds it up to 30 s),
 * finishes the page in hand and releases the lock: seconds.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { extendLock, lockOwner, releaseLock, tryLock } from '../../lib/redis-lock.ts';
import type { RedisClient } from '../../lib/redis-target.ts';
import type { Logger } from '../../logger.ts';
import { readPollMarker, storePollMarker } from '../../store/max-poll-marker.ts';
import type { MaxBot } from './bot.ts';
import type { MaxClient } from './client.ts';
import { MaxApiError } from './errors.ts';
import { UPDATE_TYPES } from './updates.ts';

/** How long MAX holds a poll with nothing to answer. */
export const POLL_TIMEOUT_SECONDS = 30;
/** Updates asked for at most per page. */
const PAGE = 100;
/** How long a poller waits after MAX refused it or failed, before it polls again. */
const FAILED_BACKOFF_MS = 5_000;

/** Options of {@link MaxPoller}. */
export interface MaxPollerOptions {
  bot: Pick<MaxBot, 'handle' | 'idle'>;
  client: Pick<MaxClient, 'updates' | 'subscriptions' | 'unsubscribe'>;
  redis: RedisClient;
  /** The lock's key (`keys.mxPollLock`) and the marker's (`keys.mxPollMarker(digest)`). */
  keys: { lock: string; marker: string };
  /** The lock's lifetime (`MAX_POLL_LOCK`). */
  lockMs: number;
  logger: Pick<Logger, 'info' | 'warn' | 'error'>;
  /** After a refusal or a failure; default 5 s (tests shorten it). */
  backoffMs?: number;
  /** How long MAX holds an empty poll; default 30 s (tests shorten it). */
  timeoutSeconds?: number;
}

/** One process's poller: polls while it holds the lock, waits for it otherwise. */
export class MaxPoller {
  private readonly options: MaxPollerOptions;
  private readonly owner = lockOwner();
  private stopping = false;
  private readonly wake = new AbortController();
  private running: Promise<void> | undefined;
  private holding = false;

  constructor(options: MaxPollerOptions) {
    this.options = options;
  }

  /** Whether this process is the one polling now. */
  get polling(): boolean {
    return this.holding;
  }

  /** Starts competing for the lock, in the background. */
  start(): void {
    this.running ??= this.loop().catch((error: unknown) => {
      this.options.logger.error({ err: error }, 'the MAX poller stopped on an error');
    });
  }

  /** Stops polling (aborting the pending poll, finishing the page in hand) and releases the lock. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wake.abort();
    await this.running;
  }

  private async loop(): Promise<void> {
    const { redis, keys, lockMs, logger } = this.options;
    while (!this.stopping) {
      let waitMs = Math.max(100, Math.floor(lockMs / 3));
      let taken = false;
      try {
        taken = await tryLock(redis, keys.lock, this.owner, lockMs);
      } catch (error) {
        logger.warn({ err: error }, 'could not ask Redis for the MAX poll lock');
      }
      if (taken && !this.stopping) waitMs = await this.hold();
      else if (taken) await releaseLock(redis, keys.lock, this.owner).catch(() => undefined);
      if (this.stopping) break;
      await sleep(waitMs, undefined, { signal: this.wake.signal }).catch(() => undefined);
    }
  }

  /** Polls while the lock is ours; how long to wait before competing again. */
  private async hold(): Promise<number> {
    const { redis, keys, lockMs, logger } = this.options;
    this.holding = true;
    const lost = new AbortController();
    const renew = setInterval(
      () => {
        extendLock(redis, keys.lock, this.owner, lockMs)
          .then((held) => {
            if (held || this.stopping) return;
            logger.warn({}, 'lost the MAX poll lock: another process polls now');
            lost.abort();
          })
          .catch((error: unknown) => logger.warn({ err: error }, 'could not renew the MAX poll lock'));
      },
      Math.max(100, Math.floor(lockMs / 3)),
    );
    const signal = AbortSignal.any([lost.signal, this.wake.signal]);
    try {
      logger.info({}, 'polling MAX for updates');
      await this.dropWebhooks(signal);
      while (!signal.aborted) {
        const failed = await this.page(signal);
        if (failed !== undefined) return failed;
      }
      return Math.max(100, Math.floor(lockMs / 3));
    } finally {
      clearInterval(renew);
      this.holding = false;
      if (!lost.signal.aborted) await releaseLock(redis, keys.lock, this.owner).catch(() => undefined);
    }
  }

  /** One page: asked for, handled, its marker stored. Undefined, or the wait after a failure. */
  private async page(signal: AbortSignal): Promise<number | undefined> {
    const { bot, client, redis, keys, logger } = this.options;
    const marker = await readPollMarker(redis, keys.marker);
    let page: Awaited<ReturnType<MaxClient['updates']>>;
    try {
      page = await client.updates(
        {
          marker,
          timeoutSeconds: this.options.timeoutSeconds ?? POLL_TIMEOUT_SECONDS,
          limit: PAGE,
          types: UPDATE_TYPES,
        },
        signal,
      );
    } catch (error) {
      if (signal.aborted) return undefined;
      if (error instanceof MaxApiError && error.status === 401)
        logger.error({ code: error.code }, 'MAX refused the bot token (MAX_BOT_TOKEN)');
      else logger.warn({ err: error }, 'polling MAX failed');
      return this.options.backoffMs ?? FAILED_BACKOFF_MS;
    }
    // Handled in full even when a stop comes meanwhile: the marker then moves past exactly these.
    for (const update of page.updates) await bot.handle(update);
    await bot.idle();
    if (page.marker !== undefined && page.marker !== marker) {
      const stored = await storePollMarker(redis, keys, this.owner, page.marker);
      if (!stored) logger.warn({}, 'the MAX poll lock was lost while a page was handled: its marker was not stored');
    }
    return undefined;
  }

  /** Takes away every webhook subscription: while one is active, MAX answers polls with nothing. */
  private async dropWebhooks(signal: AbortSignal): Promise<void> {
    const { client, logger } = this.options;
    try {
      for (const { url } of await client.subscriptions(signal)) {
        logger.warn({ url }, 'MAX had a webhook subscription (MAX_WEBHOOK_URL is not set): removed it to poll');
        await client.unsubscribe(url, signal);
      }
    } catch (error) {
      if (!signal.aborted) logger.warn({ err: error }, 'could not ask MAX for its webhook subscriptions');
    }
  }
}
