/**
 * A fake Telegram Bot API on loopback, for tests and benchmarks: a bot framework pointed at `apiRoot` (grammY's
 * `client.apiRoot`) talks to it as to api.telegram.org. It keeps the rules a bot depends on: `/bot<token>/<method>`
 * with JSON, form or query parameters (a wrong token answers 401); getUpdates long polling confirmed by `offset`,
 * answered early by a new update, a newer concurrent getUpdates ends the waiting one with 409 (after a short
 * grace in which a client that had aborted it is seen gone and hears nothing), and 409 while a webhook is set; setWebhook POSTs updates to its URL with the secret-token header; sendMessage refuses an
 * unknown chat (400 chat not found), a blocked one (403), HTML it cannot parse (400 can't parse entities) and
 * text longer than 4096 characters (400 message is too long). A message counts only when its 200 was written:
 * a request held by a `stall` fault whose client died meanwhile is not a message. Inline keyboards: sendMessage
 * keeps `reply_markup.inline_keyboard` (a button has exactly one of `callback_data`, at most 64 bytes, and `url`);
 * a user presses one of those buttons (`userPresses`), which is a `callback_query` update, and the bot answers it
 * once with answerCallbackQuery (a second answer, or one to an unknown id, is 400); editMessageReplyMarkup
 * replaces or takes away a message's keyboard (400 message is not modified when nothing changes, 400 message to
 * edit not found). Updates of a type the bot left
 * out of `allowed_updates` (getUpdates or setWebhook; kept until it names others) are never delivered. With
 * `chatPaceMs`, a chat's messages closer together than that answer 429 with `retry_after`, as Telegram's
 * per-chat limit does.
 */
import { type TelegramFault, TelegramFaults } from './faults.ts';
import { type FakeCall, type FakeTelegramContext, listen } from './server.ts';
import { BotState, type CallbackAnswer, type FakeMessage, type WebhookPost } from './state.ts';

export type { TelegramFault, TelegramFaultKind } from './faults.ts';
export { parseHtml } from './html.ts';
export type { FakeCall } from './server.ts';
export type { CallbackAnswer, FakeMessage, FakeUpdate, InlineButton, WebhookPost } from './state.ts';

/** Options of {@link startFakeTelegram}; all optional. */
export interface FakeTelegramOptions {
  /** The bot's token; default `123456789:fake-telegram-token` (the bot id is the part before ':'). */
  token?: string;
  /** The bot's username (getMe); default `timetable_test_bot`. */
  username?: string;
  /** The bot's display name; default `Расписание`. */
  firstName?: string;
  /**
   * Enforce Telegram's per-chat limit: a sendMessage sooner than this after the chat's last accepted message
   * answers 429 with `retry_after`. Default: not enforced.
   */
  chatPaceMs?: number;
}

/** A running fake. Owner actions and inspection go around the API: not recorded as calls, never fault. */
export interface FakeTelegram {
  /** `http://127.0.0.1:PORT` (no trailing slash): grammY's `client.apiRoot`, TELEGRAM_API_ROOT. */
  readonly apiRoot: string;
  readonly token: string;
  readonly username: string;
  readonly botId: number;
  /** Stops the server, ends waiting getUpdates and held requests, drops open connections. */
  close(): Promise<void>;
  /** The user of private chat `chatId` writes `text` (a `/command` gets its bot_command entity); the update id. */
  userSays(chatId: number, text: string): number;
  /**
   * The user of chat `chatId` presses the button with `data` under the bot's message `messageId` (a callback_query
   * update); throws when there is no such button. The update id, and the query id the bot must answer.
   */
  userPresses(chatId: number, messageId: number, data: string): { updateId: number; queryId: string };
  /** The bot's answers to button presses (answerCallbackQuery), oldest first. */
  callbackAnswers(): CallbackAnswer[];
  /** Opens a private chat without an update (a user the bot may write to). */
  addChat(chatId: number, firstName?: string): void;
  /** The user blocks the bot: sendMessage to the chat answers 403 until the user writes again. */
  blockChat(chatId: number): void;
  /** Messages accepted (answered 200), oldest first; of one chat when given. */
  messages(chatId?: number): FakeMessage[];
  /** Adds a fault rule (see {@link TelegramFault}). */
  fault(rule: TelegramFault): void;
  /** Removes every fault rule (held requests stay held until `release()`). */
  clearFaults(): void;
  /** Serves every request held by a `stall` fault whose client is still there. */
  release(): void;
  /** How many requests are held by a `stall` fault right now. */
  stalledCount(): number;
  /** The requests received, oldest first; of one method (case-insensitive) when given. */
  calls(method?: string): FakeCall[];
  /** Updates not yet confirmed by getUpdates' offset (or not yet taken by the webhook). */
  pendingUpdates(): number;
  /** The webhook set, if any. */
  webhook(): { url: string; secretToken: string | undefined } | undefined;
  /** Every POST of an update to the webhook, oldest first. */
  webhookPosts(): WebhookPost[];
  /** How many sendMessage calls the per-chat limit (`chatPaceMs`) answered with 429. */
  paceRefusals(): number;
}

/** Starts a fake Bot API on 127.0.0.1 (a free port). */
export async function startFakeTelegram(options: FakeTelegramOptions = {}): Promise<FakeTelegram> {
  const token = options.token ?? '123456789:fake-telegram-token';
  const botId = Number(token.split(':')[0]);
  if (!Number.isSafeInteger(botId) || botId <= 0) throw new RangeError('token must start with the bot id and ":"');
  const username = options.username ?? 'timetable_test_bot';
  const state = new BotState(botId, username, options.firstName ?? 'Расписание');
  const ctx: FakeTelegramContext = {
    token,
    state,
    faults: new TelegramFaults(),
    calls: [],
    stalled: new Set(),
    lastSent: new Map(),
    paceRefusals: 0,
    ...(options.chatPaceMs === undefined ? {} : { chatPaceMs: options.chatPaceMs }),
  };
  const server = await listen(ctx);
  return {
    apiRoot: server.origin,
    token,
    username,
    botId,
    close: () => server.close(),
    userSays: (chatId, text) => state.userSays(chatId, text),
    userPresses: (chatId, messageId, data) => state.userPresses(chatId, messageId, data),
    callbackAnswers: () => state.callbackAnswers.map((answer) => ({ ...answer })),
    addChat: (chatId, firstName) => state.addChat(chatId, firstName),
    blockChat: (chatId) => state.blockChat(chatId),
    messages: (chatId) =>
      state.messages.filter((message) => chatId === undefined || message.chatId === chatId).map((m) => ({ ...m })),
    fault: (rule) => ctx.faults.add(rule),
    clearFaults: () => ctx.faults.clear(),
    release: () => {
      for (const release of [...ctx.stalled]) release();
    },
    stalledCount: () => ctx.stalled.size,
    calls: (method) =>
      ctx.calls
        .filter((call) => method === undefined || call.method.toLowerCase() === method.toLowerCase())
        .map((call) => ({ ...call })),
    pendingUpdates: () => state.pendingUpdates(),
    webhook: () => state.webhookUrl(),
    webhookPosts: () => state.webhookPosts.map((post) => ({ ...post })),
    paceRefusals: () => ctx.paceRefusals,
  };
}
