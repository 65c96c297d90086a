/**
 * The MAX bot's answer to one update, queued as a `reply` job of the MAX queue, as the Telegram bot's replies are
 * of the Telegram queue (telegram-reply.ts says why): under the queue's limiter and the dialog's pace, after
 * change messages, retried on failure, never dropped for waiting.
 */
import type { MaxReply } from '../notify/max/bot.ts';
import { TELEGRAM_JOB } from './contract.ts';
import { type Queues, telegramJobOptions } from './queues.ts';

/** A reply's priority, as the Telegram queue's: BullMQ takes jobs without one (change messages) first. */
const REPLY_PRIORITY = 10;

/** The id of the reply to one update of one dialog: the same update never queues a second one. */
export function maxReplyJobId(chatId: string, updateKey: string): string {
  return `reply-${chatId}-${updateKey}`;
}

/** Queues the bot's answer to one update; `askedAt` (epoch ms) is when it was handled. */
export async function enqueueMaxReply(queues: Pick<Queues, 'max'>, reply: MaxReply, askedAt: number): Promise<void> {
  const { chatId, updateKey, parts } = reply;
  await queues.max.add(
    TELEGRAM_JOB.reply,
    { chatId, parts, askedAt },
    { ...telegramJobOptions(), jobId: maxReplyJobId(chatId, updateKey), priority: REPLY_PRIORITY },
  );
}
