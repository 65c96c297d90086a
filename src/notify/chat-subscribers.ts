/**
 * The subscriber half of a messenger's channel adapter (Telegram, MAX): its subscribers are the chats of a chat
 * store (store/telegram-chats.ts, MAX's with its own keys), addressed by chat id. One piece for both, so that a
 * messenger's adapter says only how it sends.
 */
import type { TelegramChats } from '../store/telegram-chats.ts';
import type { ChannelAdapter } from './channel.ts';

/** What a messenger's chat store answers. */
export type ChatStore = Pick<TelegramChats, 'ofSource' | 'hasAny' | 'follows' | 'unsubscribe' | 'forgetSource'>;

/** The adapter's subscriber methods over `chats`. */
export function chatSubscribers(
  chats: ChatStore,
): Pick<ChannelAdapter, 'ofSource' | 'hasAny' | 'follows' | 'unsubscribe' | 'forgetSource'> {
  return {
    ofSource: async (source) =>
      (await chats.ofSource(source)).map((chat) => ({ address: chat.chatId, options: chat.options })),
    hasAny: (source) => chats.hasAny(source),
    follows: (address, source) => chats.follows(address, source),
    unsubscribe: (address) => chats.unsubscribe(address),
    forgetSource: (source) => chats.forgetSource(source),
  };
}
