/**
 * What change notifications run on: the outbox, the Telegram chats, and how a source's page is linked. Built
 * once per process; the Telegram bot itself (notify/telegram/) is started by the roles that talk to Telegram.
 */
import type { Config } from '../config.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import type { RedisKeys } from '../store/keys.ts';
import { NotifyOutbox } from '../store/notify-outbox.ts';
import { TelegramChats } from '../store/telegram-chats.ts';
import { timetablePagePath } from '../timetable/page-path.ts';
import type { SourceKey } from '../timetable/source.ts';

/** Change notifications' stores and facts. */
export interface NotifyServices {
  readonly outbox: NotifyOutbox;
  readonly chats: TelegramChats;
  /** Whether the Telegram bot is on (`TELEGRAM_BOT_TOKEN`): without it no chat is told anything. */
  readonly telegramOn: boolean;
  /** The absolute URL of a source's timetable page (messages and webhook bodies link it). */
  pageUrl(source: SourceKey): string;
  /**
   * Whether anyone is told of the source's changes (a chat, with the bot on, or a webhook): a source nobody
   * listens to writes no change set.
   */
  hasSubscribers(source: SourceKey): Promise<boolean>;
}

/** Builds the notify services; `webhooks` answers whether a source has a webhook. */
export function createNotifyServices(
  config: Pick<Config, 'telegramBotToken' | 'publicUrl'>,
  redis: RedisClient,
  keys: RedisKeys,
  webhooks: { hasAny(source: SourceKey): Promise<boolean> },
): NotifyServices {
  const chats = new TelegramChats(redis, keys);
  const telegramOn = config.telegramBotToken !== undefined;
  return {
    outbox: new NotifyOutbox(redis, keys),
    chats,
    telegramOn,
    pageUrl: (source) => `${config.publicUrl}${timetablePagePath(source)}`,
    hasSubscribers: async (source) => (telegramOn && (await chats.hasAny(source))) || (await webhooks.hasAny(source)),
  };
}
