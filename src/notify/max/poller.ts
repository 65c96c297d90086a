/**
 * Long polling of MAX by exactly one process of the deployment: every worker runs a poller, and only the one
 * holding a Redis lock (`MAX_POLL_LOCK`, lib/poll-lock.ts) polls. MAX does not refuse a second poller as Telegram
 * does; it would hand both the same updates, so the lock is what keeps one. The holder first takes away any
 * webhook subscription (while one is active MAX answers polls with nothing).
 *
 * Its place in MAX's queue is the `marker` (store/max-poll-marker.ts), kept in Redis and moved only after a page's
 * updates were all handled (each answered in its dialog's lane, the lanes idle): a page is asked for with the
 * stored marker, which commits what came before it at MAX. A restart or a takeover goes on from the stored marker,
 * so an update handled is not asked for again and one not handled is not committed; a page cut short by a crash is
 * asked for again, and its updates handled already are dropped as copies (bot.ts). The marker is stored only
 * while the lock is still this process's.
 *
 * Nothing stops the poller but a stop: a page that failed (MAX or Redis unreachable, a refused token, an update
 * whose work failed) is not committed, and is asked for again after a pause. A run of failures is logged when it
 * starts and when it ends, not at each try (a Redis outage goes to the process's one outage log). Updates whose
 * work fails every time, with Redis answering, are given up after {@link MOST_PAGE_TRIES} tries of their page, so
 * that one of them cannot hold back every update after it. Stopping aborts the pending poll (MAX holds it up to
 * 30 s), finishes the page in hand and releases the lock: seconds.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { RedisUnavailableError } from '../../lib/errors.ts';
import { PollLock } from '../../lib/poll-lock.ts';
import { redisFailure } from '../../lib/redis-failure.ts';
import type { RedisOutageLog } from '../../lib/redis-outage.ts';
import type { RedisClient } from '../../lib/redis-target.ts';
import type { Logger } from '../../logger.ts';
import { readPollMarker, storePollMarker } from '../../store/max-poll-marker.ts';
import type { MaxBot } from './bot.ts';
import type { MaxClient } from './client.ts';
import { MaxApiError, MaxNetworkError, MaxPageError } from './errors.ts';
import { UPDATE_TYPES } from './updates.ts';

/** How long MAX holds a poll with nothing to answer. */
export const POLL_TIMEOUT_SECONDS = 30;
/** Updates asked for at most per page. */
const PAGE = 100;
/** How long a poller waits after MAX refused it or a page failed, before it polls again. */
const FAILED_BACKOFF_MS = 5_000;
/** Tries of one page whose updates keep failing (Redis answering) before they are given up and it is committed. */
export const MOST_PAGE_TRIES = 5;
/** The poller's name in the process's Redis outage log. */
const OUTAGE_SOURCE = 'max-poller';

/** Options of {@link MaxPoller}. */
export interface MaxPollerOptions {
  bot: Pick<MaxBot, 'handlePage'>;
  client: Pick<MaxClient, 'updates' | 'subscriptions' | 'unsubscribe'>;
  redis: RedisClient;
  /** The lock's key (`keys.mxPollLock`) and the marker's (`keys.mxPollMarker(digest)`). */
  keys: { lock: string; marker: string };
  /** The lock's lifetime (`MAX_POLL_LOCK`). */
  lockMs: number;
  logger: Pick<Logger, 'info' | 'warn' | 'error'>;
  /** The process's Redis outage log: a page that failed because Redis did not answer is told there. */
  redisOutage?: Pick<RedisOutageLog, 'failed' | 'restored'> | undefined;
  /** After a refusal or a failure; default 5 s (tests shorten it). */
  backoffMs?: number;
  /** How long MAX holds an empty poll; default 30 s (tests shorten it). */
  timeoutSeconds?: number;
}

/** One process's poller: polls while it holds the lock, waits for it otherwise. */
export class MaxPoller {
  private readonly options: MaxPollerOptions;
  private readonly lock: PollLock;
  /** Pages that failed since one last succeeded, and the kind of failure last logged (undefined: none yet). */
  private failures = 0;
  private told: string | undefined;
  /** Failed tries of the page at one marker, for giving up on updates that fail every time. */
  private retries: { marker: string | undefined; tries: number } | undefined;

  constructor(options: MaxPollerOptions) {
    this.options = options;
    this.lock = new PollLock({
      redis: options.redis,
      key: options.keys.lock,
      lockMs: options.lockMs,
      name: 'MAX',
      logger: options.logger,
      redisOutage: options.redisOutage,
      hold: (lost) => this.hold(lost),
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

  /** Stops polling (aborting the pending poll, finishing the page in hand) and releases the lock. */
  async stop(): Promise<void> {
    await this.lock.stop();
  }

  /** Polls while the lock is ours and the poller is not stopped; a failed page is asked for again after a pause. */
  private async hold(lost: AbortSignal): Promise<undefined> {
    const signal = AbortSignal.any([lost, this.lock.stopped]);
    this.options.logger.info({}, 'polling MAX for updates');
    await this.dropWebhooks(signal);
    while (!signal.aborted) {
      try {
        await this.page(signal);
      } catch (error) {
        if (signal.aborted && !(error instanceof MaxPageError)) break;
        const waitMs = this.failed(error);
        await sleep(waitMs, undefined, { signal }).catch(() => undefined);
      }
    }
    return undefined;
  }

  /** One page: asked for, handled, its marker stored. Throws when it failed (then nothing is committed). */
  private async page(signal: AbortSignal): Promise<void> {
    const { bot, client, redis, keys, logger } = this.options;
    const marker = await readPollMarker(redis, keys.marker);
    const page = await client.updates(
      {
        marker,
        timeoutSeconds: this.options.timeoutSeconds ?? POLL_TIMEOUT_SECONDS,
        limit: PAGE,
        types: UPDATE_TYPES,
      },
      signal,
    );
    // Handled in full even when a stop comes meanwhile: the marker then moves past exactly these.
    try {
      await bot.handlePage(page.updates);
    } catch (error) {
      if (!this.givenUp(marker, error)) throw error;
    }
    if (page.marker !== undefined && page.marker !== marker) {
      const stored = await storePollMarker(redis, keys, this.lock.owner, page.marker);
      if (!stored) logger.warn({}, 'the MAX poll lock was lost while a page was handled: its marker was not stored');
    }
    this.succeeded();
  }

  /**
   * Whether the failed updates of the page at `marker` are given up (the page is then committed): after
   * {@link MOST_PAGE_TRIES} tries whose updates failed while Redis answered.
   */
  private givenUp(marker: string | undefined, error: unknown): boolean {
    if (!(error instanceof MaxPageError) || redisFailure(error.cause) !== undefined) return false;
    const before = this.retries;
    const tries = before !== undefined && before.marker === marker ? before.tries + 1 : 1;
    this.retries = { marker, tries };
    if (tries < MOST_PAGE_TRIES) return false;
    this.retries = undefined;
    this.options.logger.error(
      { err: error.cause, failed: error.failed, tries },
      'MAX updates failed at every try: given up, their page is committed',
    );
    return true;
  }

  /** A page failed: the first failure of a kind is logged, the others counted; the wait before the next try. */
  private failed(error: unknown): number {
    const { logger, redisOutage } = this.options;
    this.failures += 1;
    const cause = error instanceof MaxPageError ? error.cause : error;
    if (redisOutage !== undefined && redisFailure(cause) instanceof RedisUnavailableError) {
      redisOutage.failed(OUTAGE_SOURCE, cause);
      return this.backoff();
    }
    const kind = failureKind(error);
    if (kind === this.told) return this.backoff();
    this.told = kind;
    if (error instanceof MaxApiError && kind === 'token')
      logger.error({ code: error.code }, 'MAX refused the bot token (MAX_BOT_TOKEN)');
    else if (error instanceof MaxPageError)
      logger.error({ err: cause, failed: error.failed }, 'MAX updates failed: their page is asked for again');
    else if (kind === 'poll') logger.warn({ err: error }, 'polling MAX failed: trying again after a pause');
    else logger.error({ err: error }, 'a page of MAX updates failed: trying again after a pause');
    return this.backoff();
  }

  /** A page went through: a run of failures ends (one line saying how many). */
  private succeeded(): void {
    this.options.redisOutage?.restored(OUTAGE_SOURCE);
    if (this.failures === 0) return;
    this.options.logger.info({ failedPages: this.failures }, 'MAX polling works again');
    this.failures = 0;
    this.told = undefined;
  }

  private backoff(): number {
    return this.options.backoffMs ?? FAILED_BACKOFF_MS;
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

/** What kind of failure a page met: one line is logged per run of one kind. */
function failureKind(error: unknown): 'token' | 'updates' | 'poll' | 'page' {
  if (error instanceof MaxApiError) return error.status === 401 ? 'token' : 'poll';
  if (error instanceof MaxNetworkError) return 'poll';
  return error instanceof MaxPageError ? 'updates' : 'page';
}
