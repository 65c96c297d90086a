/**
 * The bot's answer to one update, sent as a job of the Telegram queue so that it obeys what change messages obey:
 * the queue's limiter (`TELEGRAM_RATE_LIMIT` over all workers, shared: a reply is a prioritised job, and BullMQ
 * takes change messages, which have no priority, first) and one message per chat per second (`tg:pace:<chat>`,
 * the same key). Its messages go in order, one per chat turn; the job's progress counts those sent, so a retry
 * (a worker that died, a network failure) goes on from the next one. A reply passes the channel's gate as a change
 * message does (channel-send.ts): it waits while the channel is disabled, a refused token disables it, 429 pauses
 * the queue for `retry_after` without using an attempt, and a server error or the network is retried with
 * backoff. It is dropped, and logged, when Telegram refuses it for good (400) or the chat is gone (403).
 *
 * The MAX bot's replies are the same jobs of the MAX queue, sent the same way in MAX's {@link ReplyLane} (its
 * dialog's pace, its 4000 characters).
 *
 * A reply is never dropped for waiting: behind a large change fan-out (thousands of chats at the queue's rate)
 * a command may wait minutes, and silence would read as a broken bot. One that waited longer than
 * {@link REPLY_LATE_MS} opens with «Отвечаю с опозданием…»; one that waited longer than {@link REPLY_STALE_MS}
 * (its list of classes may be another day's by now) is only an apology asking to send the command again.
 */
import { type Job, UnrecoverableError } from 'bullmq';
import type { RedisClient } from '../lib/redis-target.ts';
import type { Logger } from '../logger.ts';
import type { ChannelOutcome } from '../notify/channel.ts';
import { TELEGRAM_PACE_MS } from '../notify/telegram/channel.ts';
import type { RedisKeys } from '../store/keys.ts';
import { type ChannelGate, delayBy } from './channel-send.ts';
import type { ReplyPart, TelegramReplyJobData } from './contract.ts';

/** A reply that waited longer than this (from its command) says it is late. */
export const REPLY_LATE_MS = 120_000;
/** A reply that waited longer than this is replaced by {@link STALE_TEXT}. */
export const REPLY_STALE_MS = 30 * 60_000;
/** The first line of a late reply. */
export const LATE_PREFIX = 'Отвечаю с опозданием: бот был перегружен.\n\n';
/** What a very late reply says instead. */
export const STALE_TEXT =
  'Бот был перегружен и не ответил на вашу команду вовремя. Отправьте её ещё раз, если ответ ещё нужен.';

/** What sending a reply reads. */
export interface TelegramReplyDeps {
  readonly redis: RedisClient;
  readonly keys: Pick<RedisKeys, 'tgPace'>;
}

/** Sends one message of a reply: plain text with callback buttons under it; answers as a channel's send does. */
export interface ReplyTransport {
  sendPlain(
    chatId: string,
    text: string,
    buttons?: ReplyPart['buttons'],
    signal?: AbortSignal,
  ): Promise<ChannelOutcome>;
}

/** How one messenger's replies go: the chat's turn (shared with its change messages) and its limit on a text. */
export interface ReplyLane {
  /** The messenger, as log lines and errors name it. */
  readonly name: string;
  /** The key of a chat's turn: the one its change messages take. */
  paceKey(chatId: string): string;
  readonly paceMs: number;
  /** The messenger's limit on a message's text. */
  readonly messageLimit: number;
}

/** Telegram's lane: `tg:pace:<chat>`, a second, 4096 characters. */
export function telegramReplyLane(keys: Pick<RedisKeys, 'tgPace'>): ReplyLane {
  return { name: 'Telegram', paceKey: keys.tgPace, paceMs: TELEGRAM_PACE_MS, messageLimit: MESSAGE_LIMIT };
}

/** What a reply job came to, or `undefined` for a failure the caller handles (rate limit, transient). */
export type ReplyResult = { outcome: 'sent'; messages: number } | { outcome: 'dropped' };

/** The messages of a reply that waited `waitedMs`, as they are sent (within `limit` characters each). */
export function partsToSend(parts: readonly ReplyPart[], waitedMs: number, limit = MESSAGE_LIMIT): ReplyPart[] {
  if (waitedMs > REPLY_STALE_MS) return [{ text: STALE_TEXT }];
  if (waitedMs <= REPLY_LATE_MS || parts.length === 0) return [...parts];
  const [first, ...rest] = parts as [ReplyPart, ...ReplyPart[]];
  return [{ ...first, text: `${LATE_PREFIX}${first.text}`.slice(0, limit) }, ...rest];
}

/**
 * Sends a reply's messages from the first not sent yet, each past `gate` (its channel's) once the chat's turn is
 * taken. Resolves when all were sent or the reply was dropped; rejects with DelayedError (the chat's turn is later,
 * or the channel is disabled), UnrecoverableError (refused for good), or what the gate throws for a rate limit or
 * a transient failure. `lane`: Telegram's unless given.
 */
export async function sendReply(
  ctx: TelegramReplyDeps,
  job: Job<TelegramReplyJobData>,
  token: string | undefined,
  signal: AbortSignal | undefined,
  log: Logger,
  sender: ReplyTransport,
  gate: ChannelGate,
  lane: ReplyLane = telegramReplyLane(ctx.keys),
): Promise<ReplyResult> {
  const { chatId, askedAt } = job.data;
  // BullMQ's delays run on the wall clock, whatever clock the service is given.
  const now = Date.now();
  const parts = partsToSend(job.data.parts, now - askedAt, lane.messageLimit);
  if (now - askedAt > REPLY_LATE_MS) log.warn({ waitedMs: now - askedAt }, 'a command reply waited long');
  let done = typeof job.progress === 'number' ? job.progress : 0;
  while (done < parts.length) {
    const part = parts[done] as ReplyPart;
    const key = lane.paceKey(chatId);
    if ((await ctx.redis.set(key, '1', 'PX', lane.paceMs, 'NX')) !== 'OK') {
      return delayBy(job, token, Math.max(await ctx.redis.pttl(key), 50));
    }
    const disabled = await gate.admit(job, token);
    const sent = await sender.sendPlain(chatId, part.text, part.buttons, signal);
    if (sent.kind === 'gone') {
      log.info({ reason: sent.reason }, 'a chat that is gone was not answered');
      return { outcome: 'dropped' };
    }
    if (sent.kind === 'failed' && sent.permanent) {
      log.error({ reason: sent.reason }, `${lane.name} refused a command reply: dropped it`);
      throw new UnrecoverableError(`${lane.name} refused the reply: ${sent.reason}`);
    }
    if (sent.kind !== 'sent') return gate.failed(job, token, log, sent, 'a command reply');
    await gate.accepted(disabled, log);
    done += 1;
    await job.updateProgress(done);
  }
  return { outcome: 'sent', messages: done };
}

/** Telegram's limit on a message's text. */
const MESSAGE_LIMIT = 4096;
