/**
 * The Telegram send job: one message telling one chat what one publication changed. The fan-out filtered the
 * change set for the chat and named the job after the delivery; this job makes the delivery happen once:
 *
 * - the delivery's record (store/notify-outbox.ts) is claimed first: `sent` (a re-added or doubled job) does
 *   nothing, a live lease of another job waits for it;
 * - classes that have started meanwhile (quiet hours, a queue that was behind) are dropped; nothing left, nothing
 *   sent; a chat that unsubscribed meanwhile (`/stop`) gets nothing;
 * - one message per chat per second (`tg:pace:<chat>`, over all workers); the queue's limiter keeps the total
 *   under `TELEGRAM_RATE_LIMIT`;
 * - 429 pauses the whole queue for `retry_after` without using an attempt; a chat that blocked the bot (403) or
 *   no longer exists is unsubscribed from everything and dropped, with whatever is held for it; a refused
 *   request (400) is dropped and fails for good; a server error or the network is retried with backoff.
 *
 * The record says `sent` right after Telegram's 200. A worker killed before that (while the request is in flight)
 * leaves the lease, which the same job's retry takes over at once: told once unless Telegram had already accepted
 * the request, one round trip's window in which a repeat is preferred to a loss.
 *
 * A collapsing send (`collapse`: the quiet hours' end, or a message that may go now while others wait) leases the
 * sets held for its chat and source instead, tells their net change (notify/net-change.ts) from what the chat last
 * heard, and settles exactly the sets it read: told, dropped or empty, each one's delivery record saying so. A net
 * change of nothing sends nothing. Sets held while it was sending stay for the next collapsing send. A send of
 * one set that finds sets held for its chat and source joins them and sends as a collapsing one, so that nothing
 * overtakes them.
 */
import { DelayedError, type Job, type Processor, type Queue, UnrecoverableError } from 'bullmq';
import type { Config } from '../config.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import type { Logger } from '../logger.ts';
import { netChange } from '../notify/net-change.ts';
import { formatChangeMessage } from '../notify/telegram/message.ts';
import { createTelegramSender, type SendOutcome, type TelegramSender } from '../notify/telegram/sender.ts';
import type { RedisKeys } from '../store/keys.ts';
import { type DeliveryEnd, heldDeliveryId, type NotifyOutbox } from '../store/notify-outbox.ts';
import type { TelegramChats } from '../store/telegram-chats.ts';
import type { ChangeSet } from '../timetable/notify-change.ts';
import type { SourceKey } from '../timetable/source.ts';
import { TELEGRAM_JOB, type TelegramJobData, type TelegramReplyJobData, type TelegramSendJobData } from './contract.ts';
import { mayWaitAgain, waitOutRateLimit } from './failure.ts';
import { type ReplyResult, sendReply } from './telegram-reply.ts';

/** What the Telegram send processor uses. */
export interface TelegramSendDeps {
  readonly config: Pick<Config, 'telegramBotToken' | 'telegramApiRoot'> & Partial<Pick<Config, 'telegramProxy'>>;
  readonly logger: Logger;
  readonly redis: RedisClient;
  readonly keys: Pick<RedisKeys, 'tgPace'>;
  readonly queues: { readonly telegram: Pick<Queue, 'rateLimit'> };
  readonly notify: {
    readonly outbox: Pick<NotifyOutbox, 'claim' | 'markDone' | 'release' | 'holdAll' | 'held' | 'settleHeld'>;
    readonly chats: Pick<TelegramChats, 'ofChat' | 'unsubscribe'>;
  };
  /** Epoch ms. */
  readonly now: () => number;
}

/** Tuning that tests change. */
export interface TelegramSendTuning {
  /** The sender (default: grammY's Api at `TELEGRAM_API_ROOT` with `TELEGRAM_BOT_TOKEN`). */
  sender?: Pick<TelegramSender, 'send'> & Partial<Pick<TelegramSender, 'sendPlain'>>;
  /** How long a claimed delivery stays leased: longer than a send may take. */
  leaseMs?: number;
}

/** What a send job came to. */
export type TelegramSendResult =
  | { outcome: 'sent'; messageId: number }
  | { outcome: DeliveryEnd | 'done-before' | 'unsubscribed' };

/** The sender of change messages and replies. */
type Sender = Pick<TelegramSender, 'send' | 'sendPlain'>;

/** A delivery's lease: well beyond the sender's timeout (15 s). */
export const DELIVERY_LEASE_MS = 60_000;
/** One message per chat per this. */
export const CHAT_PACE_MS = 1_000;
/** How long a job waits for another job's live lease of the same delivery before looking again. */
const BUSY_RETRY_MS = 5_000;

/** The Telegram send processor. */
export function telegramSendProcessor(
  ctx: TelegramSendDeps,
  tuning: TelegramSendTuning = {},
): Processor<TelegramJobData, TelegramSendResult | ReplyResult> {
  let sender = tuning.sender;
  const leaseMs = tuning.leaseMs ?? DELIVERY_LEASE_MS;
  return async (job, token, signal) => {
    if (isReply(job)) {
      const log = ctx.logger.child({ jobId: job.id, attempt: job.attemptsMade + 1 });
      sender ??= defaultSender(ctx.config);
      return sendReply(ctx, job, token, signal, log, sender as Sender, (sent) =>
        failed(
          ctx,
          job,
          log,
          sent.kind === 'rate-limited' ? sent : { kind: 'failed', permanent: false, reason: sent.reason },
        ),
      );
    }
    if (!isSend(job)) throw new UnrecoverableError(`not a job of the Telegram queue: ${job.name}`);
    const { chatId, set } = job.data;
    const log = ctx.logger.child({ jobId: job.id, source: set.source, attempt: job.attemptsMade + 1 });
    if (job.data.collapse) return deliver(job, token, signal, log, heldSets(job.data));
    // A message that could go on its own while sets wait for this chat and source joins them, so that the chat
    // hears the net change in order: one delayed before sets were held (queued by a version that sent each set
    // of the night on its own), or one that waited for its chat's turn while a set was held.
    const ref = { source: set.source, stamp: set.stamp };
    const [joined] = await ctx.notify.outbox.holdAll([{ chatId, ref, set, mode: 'if-held' }]);
    if (joined === 'held') {
      log.info({ stamp: set.stamp }, 'a change message joins those held for its chat: told together');
      return deliver(job, token, signal, log, heldSets(job.data));
    }
    return deliver(job, token, signal, log.child({ stamp: set.stamp }), oneSet(job.data));
  };

  /** A delivery of one change set: its own record. */
  function oneSet({ deliveryId, set }: TelegramSendJobData): Delivery {
    return {
      leaseId: deliveryId,
      read: async (now) => {
        const items = set.items.filter((item) => item.startsAt > now);
        return items.length === 0 ? undefined : { told: { ...set, items } };
      },
      settle: (outcome, owner) => ctx.notify.outbox.markDone(deliveryId, owner, outcome),
    };
  }

  /**
   * A collapsing delivery: the net change of the sets held for one chat and source, under their own lease; it
   * settles exactly the sets it read (sets held meanwhile stay for the next collapsing send).
   */
  function heldSets({ chatId, set }: TelegramSendJobData): Delivery {
    const { outbox } = ctx.notify;
    const leaseId = heldDeliveryId(chatId, set.source);
    let stamps: number[] = [];
    return {
      leaseId,
      read: async (now) => {
        const held = await outbox.held(chatId, set.source);
        stamps = held.map((each) => each.stamp);
        const net = netChange(held.map((each) => each.set));
        const items = (net?.items ?? []).filter((item) => item.startsAt > now);
        return net === undefined || items.length === 0 ? undefined : { told: { ...net, items }, logged: { stamps } };
      },
      settle: async (outcome, owner) => {
        await outbox.settleHeld(chatId, set.source, stamps, outcome);
        await outbox.release(leaseId, owner);
      },
    };
  }

  /**
   * Makes one delivery happen once: claims its lease, reads what is left to tell, checks that the chat still
   * follows the source, takes the chat's turn, sends, and settles the delivery by Telegram's answer.
   */
  async function deliver(
    job: Job<TelegramSendJobData, TelegramSendResult>,
    token: string | undefined,
    signal: AbortSignal | undefined,
    log: Logger,
    delivery: Delivery,
  ): Promise<TelegramSendResult> {
    const { chatId, set, pageUrl, subgroup } = job.data;
    const { outbox, chats } = ctx.notify;
    // The job's id, not its lock token: the same job run again after its worker died takes its own lease over at
    // once (BullMQ runs one job in one place at a time), while any other job of the same delivery waits.
    const owner = job.id ?? token ?? 'telegram';
    const claim = await outbox.claim(delivery.leaseId, owner, leaseMs);
    if (claim === 'sent') return { outcome: 'done-before' };
    if (claim === 'busy') return delay(job, token, ctx.now() + BUSY_RETRY_MS);
    const now = ctx.now();
    const content = await delivery.read(now);
    if (content === undefined) {
      await delivery.settle('empty', owner);
      return { outcome: 'empty' };
    }
    const { told, logged } = content;
    if (!(await chats.ofChat(chatId)).some((subscription) => subscription.source === set.source)) {
      await delivery.settle('dropped', owner);
      return { outcome: 'unsubscribed' };
    }
    const paceLeft = await takePace(ctx, chatId);
    if (paceLeft > 0) {
      await outbox.release(delivery.leaseId, owner);
      return delay(job, token, now + paceLeft);
    }
    sender ??= defaultSender(ctx.config);
    const sent = await sender.send(chatId, formatChangeMessage(told, { pageUrl, subgroup }), signal);
    const items = told.items.length;
    switch (sent.kind) {
      case 'sent':
        await delivery.settle('sent', owner);
        log.debug({ messageId: sent.messageId, items, ...logged }, 'told a Telegram chat of changes');
        return { outcome: 'sent', messageId: sent.messageId };
      case 'blocked': {
        const left = await chats.unsubscribe(chatId);
        await delivery.settle('dropped', owner);
        // What waits for the chat's other sources would find it unsubscribed in the morning: drop it now.
        const dropped = await dropHeld(ctx.notify.outbox, chatId, left);
        log.info(
          { reason: sent.reason, sources: left.length, heldDropped: dropped, ...logged },
          'Telegram chat is gone: unsubscribed it',
        );
        return { outcome: 'dropped' };
      }
      default:
        if (sent.kind === 'failed' && sent.permanent) {
          // Sending it again cannot help. Settled as dropped, so that the next change for this chat is told on
          // its own, not rebuilt into the same refused message with what was held.
          await delivery.settle('dropped', owner);
          log.error(
            { reason: sent.reason, items, outcome: 'dropped', ...logged },
            'Telegram refused a change message: dropped it',
          );
          throw new UnrecoverableError(`Telegram refused the message: ${sent.reason}`);
        }
        await outbox.release(delivery.leaseId, owner);
        return failed(ctx, job, log, sent);
    }
  }
}

/** Whether a job of the Telegram queue is the bot's reply (told apart by its name). */
function isReply(job: Job<TelegramJobData>): job is Job<TelegramReplyJobData> {
  return job.name === TELEGRAM_JOB.reply;
}

/** Whether a job of the Telegram queue is a change message. */
function isSend(job: Job<TelegramJobData>): job is Job<TelegramSendJobData> {
  return job.name !== TELEGRAM_JOB.reply && 'set' in job.data;
}

/** One delivery as {@link telegramSendProcessor}'s `deliver` makes it. */
interface Delivery {
  /** The delivery record it leases: the set's own, or the held sets' of its chat and source. */
  leaseId: string;
  /** What to tell, read once the lease is taken: the classes still to come; undefined when none is. */
  read(now: number): Promise<{ told: ChangeSet; logged?: Record<string, unknown> } | undefined>;
  /** Records how it ended and gives the lease up. */
  settle(outcome: DeliveryEnd, owner: string): Promise<void>;
}

/** Drops what is held for a chat that is gone, for each of `sources`; resolves to how many sets it dropped. */
async function dropHeld(
  outbox: Pick<NotifyOutbox, 'held' | 'settleHeld'>,
  chatId: string,
  sources: readonly SourceKey[],
): Promise<number> {
  let dropped = 0;
  for (const source of sources) {
    const stamps = (await outbox.held(chatId, source)).map((each) => each.stamp);
    await outbox.settleHeld(chatId, source, stamps, 'dropped');
    dropped += stamps.length;
  }
  return dropped;
}

/** A send that Telegram rate-limited (the queue waits) or that failed for now (retried with backoff). */
async function failed(
  ctx: Pick<TelegramSendDeps, 'queues'>,
  job: Pick<Job, 'attemptsStarted' | 'attemptsMade'>,
  log: Pick<Logger, 'warn'>,
  sent: Extract<SendOutcome, { kind: 'rate-limited' | 'failed' }>,
): Promise<never> {
  if (sent.kind === 'rate-limited') {
    const rounds = job.attemptsStarted - job.attemptsMade;
    if (!mayWaitAgain(rounds)) throw new Error(`Telegram rate limit, ${rounds} times in a row`);
    log.warn({ pauseMs: sent.retryAfterMs }, 'Telegram rate limit: telegram queue paused');
    throw await waitOutRateLimit(ctx.queues.telegram, sent.retryAfterMs);
  }
  throw new Error(`Telegram send failed: ${sent.reason}`);
}

function defaultSender(config: TelegramSendDeps['config']): Sender {
  if (config.telegramBotToken === undefined) throw new UnrecoverableError('TELEGRAM_BOT_TOKEN is not set');
  const { telegramBotToken: token, telegramApiRoot: apiRoot, telegramProxy: proxy } = config;
  return createTelegramSender({ token, apiRoot, proxy });
}

/**
 * Takes the chat's turn: 0 when this job may send now, else the ms until the chat's last message is a pace old.
 */
async function takePace(ctx: Pick<TelegramSendDeps, 'redis' | 'keys'>, chatId: string): Promise<number> {
  const key = ctx.keys.tgPace(chatId);
  if ((await ctx.redis.set(key, '1', 'PX', CHAT_PACE_MS, 'NX')) === 'OK') return 0;
  const left = await ctx.redis.pttl(key);
  return Math.max(left, 50);
}

/** Puts the job back until `at` without using an attempt. */
async function delay(
  job: { moveToDelayed(timestamp: number, token?: string): Promise<void> },
  token: string | undefined,
  at: number,
): Promise<never> {
  await job.moveToDelayed(at, token);
  throw new DelayedError();
}
