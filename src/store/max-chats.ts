/**
 * MAX dialogs and what each is subscribed to: the Telegram chats' store (telegram-chats.ts) under keys of MAX's
 * own (`mx:chat:<chat_id>`, `mx:source-chats:<source>`), so that a Telegram chat and a MAX dialog of the same
 * number never meet. The `/start` payloads are the same store's (`tg:link:…`, `tg:once:…`): one page link's
 * payload subscribes a chat in either messenger, and a personal page's one-time code once in either.
 *
 * A dialog is named by its `chat_id` (what `POST /messages?chat_id=` takes), never by the person's `user_id`.
 */
import type { RedisClient } from '../lib/redis-target.ts';
import type { RedisKeys } from './keys.ts';
import { TelegramChats } from './telegram-chats.ts';

/** The MAX dialogs' subscriptions and the shared payloads. */
export class MaxChats extends TelegramChats {
  constructor(redis: RedisClient, keys: RedisKeys) {
    super(redis, keys, { chat: keys.mxChat, sourceChats: keys.mxSourceChats });
  }
}
