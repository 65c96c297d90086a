/**
 * Telegram as a channel of the channel core (notify/channel.ts): its subscribers are the chats of
 * store/telegram-chats.ts, and a message is one HTML message through the Bot API (sender.ts). What Telegram's
 * answers mean for the core: a chat that blocked the bot or no longer exists is `gone`; 429 is `rate-limited` for
 * its `retry_after`; a refused token (401, or 404: no bot at that path) is `misconfigured`; a refused request (400)
 * fails for good; a server error or the network is retried.
 */
import type { Config } from '../../config.ts';
import type { ChannelAdapter, ChannelOutcome } from '../channel.ts';
import { type ChatStore, chatSubscribers } from '../chat-subscribers.ts';
import { formatChangeMessage } from './message.ts';
import { createTelegramSender, type SendOutcome, type TelegramSender } from './sender.ts';

/** One message to one chat per this (Telegram's advice for a bot writing to one chat). */
export const TELEGRAM_PACE_MS = 1_000;

/** What the Telegram channel is built over. */
export interface TelegramChannelDeps {
  readonly config: TelegramSenderSettings;
  readonly chats: ChatStore;
  /**
   * The sender of change messages, made on the first send (a process that sends nothing makes none); default
   * {@link telegramSenderOf} the settings. One without `probe` (a test's) cannot tell whether Telegram takes the
   * token: only a send then turns a disabled channel on again.
   */
  readonly sender?: () => Pick<TelegramSender, 'send'> & Partial<Pick<TelegramSender, 'probe'>>;
}

/** The settings a Telegram sender is made of. */
export type TelegramSenderSettings = Pick<Config, 'telegramBotToken' | 'telegramApiRoot'> &
  Partial<Pick<Config, 'telegramProxy'>>;

/** The Telegram channel: on when `TELEGRAM_BOT_TOKEN` is set. */
export function telegramChannel(deps: TelegramChannelDeps): ChannelAdapter {
  const { chats, config } = deps;
  let sender: (Pick<TelegramSender, 'send'> & Partial<Pick<TelegramSender, 'probe'>>) | undefined;
  const senderOf = () => {
    sender ??= deps.sender?.() ?? telegramSenderOf(config);
    return sender;
  };
  return {
    name: 'telegram',
    on: config.telegramBotToken !== undefined,
    paceMs: TELEGRAM_PACE_MS,
    ...chatSubscribers(chats),
    send: async (message, signal) => {
      const html = formatChangeMessage(message.told, { pageUrl: message.pageUrl, subgroup: message.subgroup });
      return channelOutcome(await senderOf().send(message.address, html, signal));
    },
    probe: async (signal) => {
      const asked = await senderOf().probe?.(signal);
      if (asked === undefined) return { kind: 'failed', permanent: false, reason: 'this sender cannot ask Telegram' };
      return asked.kind === 'ok' ? { kind: 'sent', messageId: '' } : channelOutcome(asked);
    },
  };
}

/** The sender of the bot the settings name (grammY's Api at `TELEGRAM_API_ROOT`); throws without a token. */
export function telegramSenderOf(config: TelegramSenderSettings): TelegramSender {
  if (config.telegramBotToken === undefined) throw new Error('TELEGRAM_BOT_TOKEN is not set');
  const { telegramBotToken: token, telegramApiRoot: apiRoot, telegramProxy: proxy } = config;
  return createTelegramSender({ token, apiRoot, proxy });
}

/** What a Bot API answer means for the channel core. */
export function channelOutcome(sent: SendOutcome): ChannelOutcome {
  switch (sent.kind) {
    case 'sent':
      return { kind: 'sent', messageId: String(sent.messageId) };
    case 'blocked':
      return { kind: 'gone', reason: sent.reason };
    case 'rate-limited':
      return sent;
    default:
      if (sent.unauthorized) return { kind: 'misconfigured', reason: `Telegram refuses the bot: ${sent.reason}` };
      return { kind: 'failed', permanent: sent.permanent, reason: sent.reason };
  }
}
