/**
 * What change notifications run on: the outbox, the channels (runtime/channels.ts registers them), their
 * disabled-with-reason state, the Telegram chats, and how a source's page is linked. Built once per process; the
 * bots themselves (notify/telegram/, …) are started by the roles that talk to their messengers.
 */
import type { Config } from '../config.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import { ChannelStates } from '../store/channel-states.ts';
import type { RedisKeys } from '../store/keys.ts';
import { NotifyOutbox } from '../store/notify-outbox.ts';
import type { TelegramChats } from '../store/telegram-chats.ts';
import { timetablePagePath } from '../timetable/page-path.ts';
import type { SourceKey } from '../timetable/source.ts';
import type { ChannelAdapter } from './channel.ts';

/** Change notifications' stores and facts. */
export interface NotifyServices {
  readonly outbox: NotifyOutbox;
  /** The Telegram chats (the bot's commands and the subscribe link write them). */
  readonly chats: TelegramChats;
  /**
   * Every registered channel of a person, on or off (`on` says whether this deployment configured it): the
   * fan-out, the workers, the metrics and `GET /admin/channels` go through this list.
   */
  readonly channels: readonly ChannelAdapter[];
  /** Which channels are disabled, and why. */
  readonly states: ChannelStates;
  /** The absolute URL of a source's timetable page (messages and webhook bodies link it). */
  pageUrl(source: SourceKey): string;
  /**
   * Whether anyone is told of the source's changes (a subscriber of a channel that is on, or a webhook): a source
   * nobody listens to writes no change set.
   */
  hasSubscribers(source: SourceKey): Promise<boolean>;
}

/** What the notify services are built over besides Redis. */
export interface NotifyServicesParts {
  readonly chats: TelegramChats;
  readonly channels: readonly ChannelAdapter[];
  /** Answers whether a source has a webhook. */
  readonly webhooks: { hasAny(source: SourceKey): Promise<boolean> };
}

/** Builds the notify services. */
export function createNotifyServices(
  config: Pick<Config, 'publicUrl'>,
  redis: RedisClient,
  keys: RedisKeys,
  parts: NotifyServicesParts,
): NotifyServices {
  const { channels, webhooks } = parts;
  const on = channels.filter((channel) => channel.on);
  return {
    outbox: new NotifyOutbox(redis, keys),
    chats: parts.chats,
    channels,
    states: new ChannelStates(redis, keys),
    pageUrl: (source) => `${config.publicUrl}${timetablePagePath(source)}`,
    hasSubscribers: async (source) => {
      for (const channel of on) if (await channel.hasAny(source)) return true;
      return webhooks.hasAny(source);
    },
  };
}
