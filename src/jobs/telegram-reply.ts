/**
 * The bot's reply to a command, sent as a job of the Telegram queue so that it obeys what change messages obey:
 * the queue's limiter (`TELEGRAM_RATE_LIMIT` over all workers, shared: a reply is a prioritised job, and BullMQ
 * takes change messages, which have no priority, first) and one message per chat per second (`tg:pace:<chat>`,
 * the same key). A reply is retried as a change message is: 429 pauses the queue for `retry_after` without
 * using an attempt, a server error or the network is retried with backoff. It is dropped, and logged, when
 * Telegram refuses it for good (400), when the chat is gone (403), or when it waited longer than
 * {@link REPLY_MAX_AGE_MS}: an answer minutes late is noise.
 */
import { DelayedError, type Job, UnrecoverableError } from 'bullmq';
import type { RedisClient } from '../lib/redis-target.ts';
import type { Logger } from '../logger.ts';
import type { ReplySender } from '../notify/telegram/sender.ts';
import type { RedisKeys } from '../store/keys.ts';
import type { TelegramReplyJobData } from './contract.ts';

/** A reply older than this (from its command) is dropped instead of sent. */
export const REPLY_MAX_AGE_MS = 120_000;

/** What sending a reply reads. */
export interface TelegramReplyDeps {
  readonly redis: RedisClient;
  readonly keys: Pick<RedisKeys, 'tgPace'>;
}

/** What a reply job came to, or `undefined` for a failure the caller handles (rate limit, transient). */
export type ReplyResult = { outcome: 'sent'; messageId: number } | { outcome: 'dropped' };

/**
 * Sends one reply. Resolves when it was sent or dropped; rejects with DelayedError (the chat's turn is later),
 * UnrecoverableError (refused for good), or hands a rate limit or a transient failure to `failed`.
 */
export async function sendReply(
  ctx: TelegramReplyDeps,
  job: Job<TelegramReplyJobData>,
  token: string | undefined,
  signal: AbortSignal | undefined,
  log: Logger,
  sender: ReplySender,
  failed: (sent: { kind: 'rate-limited'; retryAfterMs: number } | { kind: 'failed'; reason: string }) => Promise<never>,
): Promise<ReplyResult> {
  const { chatId, text, buttons, askedAt } = job.data;
  // BullMQ's delays run on the wall clock, whatever clock the service is given.
  const now = Date.now();
  if (now - askedAt > REPLY_MAX_AGE_MS) {
    log.warn({ waitedMs: now - askedAt }, 'a command reply waited too long: dropped it');
    return { outcome: 'dropped' };
  }
  const key = ctx.keys.tgPace(chatId);
  if ((await ctx.redis.set(key, '1', 'PX', CHAT_PACE_MS, 'NX')) !== 'OK') {
    const left = Math.max(await ctx.redis.pttl(key), 50);
    await job.moveToDelayed(now + left, token);
    throw new DelayedError();
  }
  const sent = await sender.sendPlain(chatId, text, buttons, signal);
  if (sent.kind === 'sent') return { outcome: 'sent', messageId: sent.messageId };
  if (sent.kind === 'blocked') {
    log.info({ reason: sent.reason }, 'a chat that is gone was not answered');
    return { outcome: 'dropped' };
  }
  if (sent.kind === 'failed' && sent.permanent) {
    log.error({ reason: sent.reason }, 'Telegram refused a command reply: dropped it');
    throw new UnrecoverableError(`Telegram refused the reply: ${sent.reason}`);
  }
  return failed(sent);
}

/** One message per chat per this (the change messages' pace). */
const CHAT_PACE_MS = 1_000;
