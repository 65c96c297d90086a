/**
 * The registry of the channels that tell people of changes. A channel is a folder of its own under notify/ (its
 * client, its credential, how to read the other side's answers) with an adapter (notify/channel.ts); registering
 * it is one line here. The fan-out, the send workers, `hasSubscribers`, the metrics and `GET /admin/channels` all
 * go through this list, so none of them names a channel.
 */
import type { Config } from '../config.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import type { Logger } from '../logger.ts';
import type { ChannelAdapter } from '../notify/channel.ts';
import { emailChannel } from '../notify/email/channel.ts';
import { maxChannel } from '../notify/max/channel.ts';
import { telegramChannel } from '../notify/telegram/channel.ts';
import type { RedisKeys } from '../store/keys.ts';
import { Mailboxes } from '../store/mailboxes.ts';
import { MaxChats } from '../store/max-chats.ts';
import type { TelegramChats } from '../store/telegram-chats.ts';

/** What the adapters are built over: the settings, Redis (their stores), the logger, the Telegram chats. */
export interface ChannelsDeps {
  readonly config: Config;
  readonly redis: RedisClient;
  readonly keys: RedisKeys;
  readonly logger: Logger;
  readonly chats: TelegramChats;
}

/** Every registered channel's adapter, on or off (each says whether this deployment configured it). */
export function channelAdapters(ctx: ChannelsDeps): readonly ChannelAdapter[] {
  return [
    telegramChannel({ config: ctx.config, chats: ctx.chats }),
    maxChannel({ config: ctx.config, chats: new MaxChats(ctx.redis, ctx.keys), redis: ctx.redis, keys: ctx.keys }),
    emailChannel({
      config: ctx.config,
      mailboxes: new Mailboxes(ctx.redis, ctx.keys, ctx.config.secretKey),
      redis: ctx.redis,
      keys: ctx.keys,
      wallClock: Date.now,
      logger: ctx.logger.child({ channel: 'email' }),
    }),
  ];
}
