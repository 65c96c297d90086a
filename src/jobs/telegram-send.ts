/**
 * The processor of the Telegram queue: change messages, which the channel core (channel-send.ts) delivers once
 * through the Telegram channel (notify/telegram/channel.ts), and the bot's replies (telegram-reply.ts), which share
 * the queue's limiter, each chat's pace and the sender with them.
 */
import { type Job, type Processor, type Queue, UnrecoverableError } from 'bullmq';
import type { Config } from '../config.ts';
import type { ChatStore } from '../notify/chat-subscribers.ts';
import { channelOutcome, telegramChannel, telegramSenderOf } from '../notify/telegram/channel.ts';
import type { TelegramSender } from '../notify/telegram/sender.ts';
import type { RedisKeys } from '../store/keys.ts';
import {
  type ChannelSendDeps,
  type ChannelSendResult,
  type ChannelSendTuning,
  channelGate,
  channelSendProcessor,
} from './channel-send.ts';
import { TELEGRAM_JOB, type TelegramJobData, type TelegramReplyJobData, type TelegramSendJobData } from './contract.ts';
import { type ReplyResult, type ReplyTransport, sendReply } from './telegram-reply.ts';

/** What the Telegram send processor uses. */
export interface TelegramSendDeps extends Omit<ChannelSendDeps, 'keys' | 'queues' | 'notify'> {
  readonly config: Pick<Config, 'telegramBotToken' | 'telegramApiRoot'> & Partial<Pick<Config, 'telegramProxy'>>;
  readonly keys: Pick<RedisKeys, 'tgPace' | 'channelPace'>;
  readonly queues: { readonly telegram: Pick<Queue, 'rateLimit'> };
  readonly notify: ChannelSendDeps['notify'] & {
    readonly chats: ChatStore;
  };
}

/** Tuning that tests change. */
export interface TelegramSendTuning extends ChannelSendTuning {
  /** The sender (default: grammY's Api at `TELEGRAM_API_ROOT` with `TELEGRAM_BOT_TOKEN`). */
  sender?: Pick<TelegramSender, 'send'> & Partial<Pick<TelegramSender, 'sendPlain'>>;
}

/**
 * What a send job came to: the core's result, with Telegram's message id a number as the jobs of earlier releases
 * kept it (`GET /admin/jobs/:id` shows either alike).
 */
export type TelegramSendResult =
  | { outcome: 'sent'; messageId: number }
  | Exclude<ChannelSendResult, { outcome: 'sent' }>;

/** The sender of change messages and replies. */
type Sender = Pick<TelegramSender, 'send' | 'sendPlain'>;

/** The Telegram send processor. */
export function telegramSendProcessor(
  ctx: TelegramSendDeps,
  tuning: TelegramSendTuning = {},
): Processor<TelegramJobData, TelegramSendResult | ReplyResult> {
  let sender = tuning.sender as Sender | undefined;
  const senderOf = (): Sender => {
    if (ctx.config.telegramBotToken === undefined) throw new UnrecoverableError('TELEGRAM_BOT_TOKEN is not set');
    sender ??= telegramSenderOf(ctx.config);
    return sender;
  };
  // Its own Telegram channel over the same chats: the one sender serves change messages and replies alike.
  const channel = telegramChannel({ config: ctx.config, chats: ctx.notify.chats, sender: senderOf });
  const changes = channelSendProcessor(ctx, channel, tuning);
  const gate = channelGate(ctx, 'telegram', tuning);
  // A reply's answers mean what a change message's do: a refused token disables the channel.
  const replies: ReplyTransport = {
    sendPlain: async (chatId, text, buttons, signal) =>
      channelOutcome(await senderOf().sendPlain(chatId, text, buttons, signal)),
  };
  return async (job, token, signal) => {
    if (isReply(job)) {
      const log = ctx.logger.child({ channel: 'telegram', jobId: job.id, attempt: job.attemptsMade + 1 });
      return sendReply(ctx, job, token, signal, log, replies, gate);
    }
    if (!isSend(job)) throw new UnrecoverableError(`not a job of the Telegram queue: ${job.name}`);
    const result = await changes(job as Job<TelegramSendJobData, ChannelSendResult>, token, signal);
    return 'messageId' in result ? { outcome: 'sent', messageId: Number(result.messageId) } : result;
  };
}

/** Whether a job of the Telegram queue is the bot's reply (told apart by its name). */
function isReply(job: Job<TelegramJobData>): job is Job<TelegramReplyJobData> {
  return job.name === TELEGRAM_JOB.reply;
}

/** Whether a job of the Telegram queue is a change message. */
function isSend(job: Job<TelegramJobData>): job is Job<TelegramSendJobData> {
  return job.name !== TELEGRAM_JOB.reply && 'set' in job.data;
}
