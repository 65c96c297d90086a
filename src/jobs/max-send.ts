/**
 * The processor of the MAX queue: change messages, which the channel core (channel-send.ts) delivers once through
 * the MAX channel (notify/max/channel.ts), and the bot's replies (max-reply.ts), sent as the Telegram bot's are
 * (telegram-reply.ts) in MAX's lane: each dialog's turn is the one its change messages take (two a second), the
 * text within MAX's 4000 characters. One client serves both, so every request takes from the one shared rate.
 */
import { type Job, type Processor, type Queue, UnrecoverableError } from 'bullmq';
import type { Config } from '../config.ts';
import { DELIVERY_PREFIX } from '../notify/channel.ts';
import { maxButtons } from '../notify/max/bot.ts';
import { MAX_PACE_MS, maxChannel } from '../notify/max/channel.ts';
import { MAX_TEXT_LENGTH, type MaxClient, type MaxClientSettings, maxClientOf } from '../notify/max/client.ts';
import { MaxSender } from '../notify/max/sender.ts';
import type { RedisKeys } from '../store/keys.ts';
import { MaxChats } from '../store/max-chats.ts';
import {
  type ChannelSendDeps,
  type ChannelSendResult,
  type ChannelSendTuning,
  channelGate,
  channelSendProcessor,
} from './channel-send.ts';
import { TELEGRAM_JOB, type TelegramJobData, type TelegramReplyJobData, type TelegramSendJobData } from './contract.ts';
import { type ReplyLane, type ReplyResult, type ReplyTransport, sendReply } from './telegram-reply.ts';

/** What the MAX send processor uses. */
export interface MaxSendDeps extends Omit<ChannelSendDeps, 'keys' | 'queues'> {
  readonly config: MaxClientSettings & Pick<Config, 'maxBotToken'>;
  readonly keys: RedisKeys;
  readonly queues: { readonly max: Pick<Queue, 'rateLimit'> };
}

/** Tuning that tests change. */
export interface MaxSendTuning extends ChannelSendTuning {
  /** The client (default: `MAX_API_ROOT` with `MAX_BOT_TOKEN`, on the deployment's shared rate). */
  client?: Pick<MaxClient, 'send'>;
}

/** MAX's lane of replies: the dialog's turn of change messages (`mx:pace:<chat>`), half a second, 4000 characters. */
export function maxReplyLane(keys: Pick<RedisKeys, 'channelPace'>): ReplyLane {
  return {
    name: 'MAX',
    paceKey: (chatId) => keys.channelPace(DELIVERY_PREFIX.max, chatId),
    paceMs: MAX_PACE_MS,
    messageLimit: MAX_TEXT_LENGTH,
  };
}

/** The MAX send processor. */
export function maxSendProcessor(
  ctx: MaxSendDeps,
  tuning: MaxSendTuning = {},
): Processor<TelegramJobData, ChannelSendResult | ReplyResult> {
  let client = tuning.client;
  const clientOf = (): Pick<MaxClient, 'send'> => {
    if (ctx.config.maxBotToken === undefined) throw new UnrecoverableError('MAX_BOT_TOKEN is not set');
    client ??= maxClientOf(ctx.config, ctx.redis, ctx.keys);
    return client;
  };
  // Its own MAX channel over the same dialogs: the one client serves change messages and replies alike.
  const chats = new MaxChats(ctx.redis, ctx.keys);
  const channel = maxChannel({ config: ctx.config, chats, redis: ctx.redis, keys: ctx.keys, client: clientOf });
  const changes = channelSendProcessor(ctx, channel, tuning);
  const lane = maxReplyLane(ctx.keys);
  const gate = channelGate(ctx, 'max', tuning);
  const replies: ReplyTransport = {
    sendPlain: (chatId, text, buttons, signal) =>
      new MaxSender(clientOf()).sendPlain(chatId, text, buttons && maxButtons(buttons), signal),
  };
  return async (job, token, signal) => {
    if (job.name === TELEGRAM_JOB.reply) {
      const reply = job as Job<TelegramReplyJobData>;
      const log = ctx.logger.child({ channel: 'max', jobId: job.id, attempt: job.attemptsMade + 1 });
      return sendReply(ctx, reply, token, signal, log, replies, gate, lane);
    }
    if (!('set' in job.data)) throw new UnrecoverableError(`not a job of the MAX queue: ${job.name}`);
    return changes(job as Job<TelegramSendJobData, ChannelSendResult>, token, signal);
  };
}
