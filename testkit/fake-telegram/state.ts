/**
 * What the fake Bot API remembers: its chats, the queue of updates (long polling or webhook), the messages it
 * accepted with their inline keyboards, the button presses (callback queries) and how the bot answered them.
 * Methods answer a {@link MethodResult}: the `result` of `{ok: true}` or a Bot API error.
 */
import { parseHtml } from './html.ts';

/** A message the fake accepted (answered 200). */
export interface FakeMessage {
  chatId: number;
  messageId: number;
  /** The text the user sees (HTML parsed). */
  text: string;
  /** The text as sent (HTML when `parseMode` is HTML). */
  html: string;
  parseMode: string | undefined;
  /** The inline keyboard under the message (`reply_markup.inline_keyboard`), if it had one. */
  inlineKeyboard?: InlineButton[][];
  /** Epoch ms. */
  at: number;
}

/** A button of an inline keyboard, as the Bot API takes it (the kinds a bot of ours may send). */
export interface InlineButton {
  text: string;
  callback_data?: string;
  url?: string;
}

/** How the bot answered a button press (answerCallbackQuery). */
export interface CallbackAnswer {
  queryId: string;
  text: string | undefined;
  showAlert: boolean;
  at: number;
}

interface User {
  id: number;
  is_bot: false;
  first_name: string;
  language_code: string;
}

interface PrivateChat {
  id: number;
  type: 'private';
  first_name: string;
}

/** An update as Telegram sends it: a text message, or a press of an inline keyboard's button. */
export type FakeUpdate =
  | {
      update_id: number;
      message: {
        message_id: number;
        date: number;
        chat: PrivateChat;
        from: User;
        text: string;
        entities?: { type: 'bot_command'; offset: number; length: number }[];
      };
    }
  | {
      update_id: number;
      callback_query: {
        id: string;
        from: User;
        /** The bot's message whose button was pressed, as Telegram gives it back. */
        message: {
          message_id: number;
          date: number;
          chat: PrivateChat;
          from: { id: number; is_bot: true; first_name: string; username: string };
          text: string;
          reply_markup: { inline_keyboard: InlineButton[][] };
        };
        chat_instance: string;
        data: string;
      };
    };

/** The update types a bot receives when it names none in `allowed_updates` (Telegram's default). */
const DEFAULT_UPDATES = ['message', 'edited_message', 'channel_post', 'edited_channel_post', 'callback_query'];
/** Telegram's limit on `callback_data`, in bytes. */
const MAX_CALLBACK_DATA = 64;
/** Telegram's limit on the notification text of answerCallbackQuery. */
const MAX_CALLBACK_TEXT = 200;
const QUERY_INVALID = 'Bad Request: query is too old and response timeout expired or query ID is invalid';

/** A Bot API answer before it is written. */
export type MethodResult = { ok: true; result: unknown } | { ok: false; status: number; description: string };

/** One POST of an update to the webhook. */
export interface WebhookPost {
  updateId: number;
  /** The receiver's HTTP status, or the network error's message. */
  outcome: number | string;
  at: number;
}

interface Chat {
  firstName: string;
  blocked: boolean;
  nextMessageId: number;
}

interface Waiter {
  answer(result: MethodResult): void;
  timer: NodeJS.Timeout;
  limit: number;
}

interface Webhook {
  url: string;
  secretToken: string | undefined;
}

const MAX_TEXT = 4096;
const CONFLICT_POLL =
  'Conflict: terminated by other getUpdates request; make sure that only one bot instance is running';
/**
 * How long a waiting getUpdates that a newer request ended is held before its 409 is written. The fake sees the
 * connections of one client in whatever order its event loop reads them, so an abort sent before the newer
 * request may be read after it; Telegram, across a network, reads the abort first. A client still there after
 * this hears the 409.
 */
const CONFLICT_GRACE_MS = 50;
const CONFLICT_WEBHOOK =
  "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first";

function error(status: number, description: string): MethodResult {
  return { ok: false, status, description };
}

function ok(result: unknown): MethodResult {
  return { ok: true, result };
}

/** An integer parameter (form bodies give strings); undefined when absent, NaN when not a number. */
export function intParam(value: unknown): number | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  return typeof value === 'number' ? value : Number(value);
}

export class BotState {
  readonly botId: number;
  readonly username: string;
  readonly firstName: string;
  readonly messages: FakeMessage[] = [];
  readonly webhookPosts: WebhookPost[] = [];
  readonly callbackAnswers: CallbackAnswer[] = [];
  private readonly chats = new Map<number, Chat>();
  /** Button presses not yet answered (Telegram refuses a second answer, and one to an id it never gave). */
  private readonly openQueries = new Set<string>();
  private nextQueryId = 7_000_001;
  /** The update types the bot asked for (getUpdates or setWebhook `allowed_updates`), kept until it names others. */
  private allowed: readonly string[] = DEFAULT_UPDATES;
  private updates: FakeUpdate[] = [];
  private nextUpdateId = 100_001;
  private waiter: Waiter | undefined;
  /** Waiting getUpdates a newer request ended, in their grace before the 409 ({@link CONFLICT_GRACE_MS}). */
  private readonly superseded = new Set<Waiter>();
  private webhook: Webhook | undefined;
  private delivering = false;
  private closed = false;

  constructor(botId: number, username: string, firstName: string) {
    this.botId = botId;
    this.username = username;
    this.firstName = firstName;
  }

  getMe(): MethodResult {
    return ok({
      id: this.botId,
      is_bot: true,
      first_name: this.firstName,
      username: this.username,
      can_join_groups: true,
      can_read_all_group_messages: false,
      supports_inline_queries: false,
    });
  }

  /** Creates a private chat (a user who pressed Start); no update. */
  addChat(chatId: number, firstName = `User ${chatId}`): void {
    if (!this.chats.has(chatId)) this.chats.set(chatId, { firstName, blocked: false, nextMessageId: 1 });
  }

  /** The user writes `text`: an update for polling or the webhook. Writing unblocks a blocked bot. */
  userSays(chatId: number, text: string): number {
    this.addChat(chatId);
    const chat = this.chats.get(chatId) as Chat;
    chat.blocked = false;
    const command = /^\/[A-Za-z0-9_]+(@[A-Za-z0-9_]+)?/.exec(text);
    const update: FakeUpdate = {
      update_id: this.nextUpdateId++,
      message: {
        message_id: chat.nextMessageId++,
        date: Math.floor(Date.now() / 1000),
        chat: { id: chatId, type: 'private', first_name: chat.firstName },
        from: { id: chatId, is_bot: false, first_name: chat.firstName, language_code: 'ru' },
        text,
        ...(command ? { entities: [{ type: 'bot_command' as const, offset: 0, length: command[0].length }] } : {}),
      },
    };
    this.updates.push(update);
    this.wake();
    return update.update_id;
  }

  /**
   * The user presses the button with `data` under the bot's message `messageId`: a callback_query update. Throws
   * when that message has no such button (a user can press only what the bot sent). Answers the update id and
   * the query id the bot must answer with answerCallbackQuery.
   */
  userPresses(chatId: number, messageId: number, data: string): { updateId: number; queryId: string } {
    const message = this.messages.find((each) => each.chatId === chatId && each.messageId === messageId);
    const button = message?.inlineKeyboard?.flat().find((each) => each.callback_data === data);
    if (message === undefined || message.inlineKeyboard === undefined || button === undefined)
      throw new Error(`chat ${chatId} has no message ${messageId} with a button ${JSON.stringify(data)}`);
    const chat = this.chats.get(chatId) as Chat;
    const queryId = String(this.nextQueryId++);
    this.openQueries.add(queryId);
    const update: FakeUpdate = {
      update_id: this.nextUpdateId++,
      callback_query: {
        id: queryId,
        from: { id: chatId, is_bot: false, first_name: chat.firstName, language_code: 'ru' },
        message: {
          message_id: messageId,
          date: Math.floor(message.at / 1000),
          chat: { id: chatId, type: 'private', first_name: chat.firstName },
          from: { id: this.botId, is_bot: true, first_name: this.firstName, username: this.username },
          text: message.text,
          reply_markup: { inline_keyboard: message.inlineKeyboard },
        },
        chat_instance: `ci${chatId}`,
        data,
      },
    };
    this.updates.push(update);
    this.wake();
    return { updateId: update.update_id, queryId };
  }

  /** answerCallbackQuery: once per press, a notification text of at most 200 characters. */
  answerCallbackQuery(params: Record<string, unknown>): MethodResult {
    const id = params.callback_query_id;
    if (typeof id !== 'string' && typeof id !== 'number') return error(400, 'Bad Request: query ID is empty');
    if (!this.openQueries.has(String(id))) return error(400, QUERY_INVALID);
    const text = typeof params.text === 'string' ? params.text : undefined;
    if (text !== undefined && text.length > MAX_CALLBACK_TEXT) return error(400, 'Bad Request: MESSAGE_TOO_LONG');
    this.openQueries.delete(String(id));
    const showAlert = params.show_alert === true || params.show_alert === 'true';
    this.callbackAnswers.push({ queryId: String(id), text, showAlert, at: Date.now() });
    return ok(true);
  }

  blockChat(chatId: number): void {
    this.addChat(chatId);
    (this.chats.get(chatId) as Chat).blocked = true;
  }

  /** Updates not confirmed yet. */
  pendingUpdates(): number {
    return this.updates.length;
  }

  getUpdates(params: Record<string, unknown>, signal: AbortSignal): Promise<MethodResult> {
    if (this.webhook) return Promise.resolve(error(409, CONFLICT_WEBHOOK));
    const offset = intParam(params.offset);
    const limit = intParam(params.limit) ?? 100;
    const timeout = intParam(params.timeout) ?? 0;
    if ([offset ?? 0, limit, timeout].some((n) => !Number.isInteger(n)))
      return Promise.resolve(error(400, 'Bad Request: wrong parameter value'));
    const allowed = allowedParam(params.allowed_updates);
    if (allowed === 'invalid') return Promise.resolve(error(400, "Bad Request: can't parse allowed updates"));
    if (allowed !== undefined) this.allowed = allowed;
    if (offset !== undefined && offset < 0) this.updates = this.updates.slice(offset);
    else if (offset !== undefined) this.updates = this.updates.filter((update) => update.update_id >= offset);
    this.dropUnwanted();
    // Telegram ends the request already waiting: the newest poller wins and the older one hears 409.
    this.supersede(error(409, CONFLICT_POLL));
    const batch = Math.min(Math.max(limit, 1), 100);
    if (this.updates.length > 0 || timeout <= 0) return Promise.resolve(ok(this.updates.slice(0, batch)));
    return new Promise<MethodResult>((resolve) => {
      const waiter: Waiter = {
        limit: batch,
        timer: setTimeout(() => waiter.answer(ok([])), Math.min(timeout, 50) * 1000),
        answer: (result) => {
          clearTimeout(waiter.timer);
          signal.removeEventListener('abort', onAbort);
          if (this.waiter === waiter) this.waiter = undefined;
          this.superseded.delete(waiter);
          resolve(result);
        },
      };
      const onAbort = (): void => waiter.answer(ok([]));
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiter = waiter;
    });
  }

  setWebhook(params: Record<string, unknown>): MethodResult {
    const url = typeof params.url === 'string' ? params.url : '';
    if (url === '') return this.deleteWebhook(params);
    if (!URL.canParse(url))
      return error(400, 'Bad Request: bad webhook: Failed to resolve host: Name or service not known');
    const secret = params.secret_token;
    if (secret !== undefined && (typeof secret !== 'string' || !/^[A-Za-z0-9_-]{1,256}$/.test(secret)))
      return error(400, 'Bad Request: secret token contains unallowed characters');
    const allowed = allowedParam(params.allowed_updates);
    if (allowed === 'invalid') return error(400, "Bad Request: can't parse allowed updates");
    if (allowed !== undefined) this.allowed = allowed;
    if (params.drop_pending_updates === true || params.drop_pending_updates === 'true') this.updates = [];
    this.supersede(error(409, 'Conflict: terminated by setWebhook request'));
    this.webhook = { url, secretToken: secret };
    void this.deliver();
    return ok(true);
  }

  deleteWebhook(params: Record<string, unknown>): MethodResult {
    if (params.drop_pending_updates === true || params.drop_pending_updates === 'true') this.updates = [];
    this.webhook = undefined;
    return ok(true);
  }

  getWebhookInfo(): MethodResult {
    return ok({
      url: this.webhook?.url ?? '',
      has_custom_certificate: false,
      pending_update_count: this.updates.length,
    });
  }

  webhookUrl(): { url: string; secretToken: string | undefined } | undefined {
    return this.webhook ? { ...this.webhook } : undefined;
  }

  /** Validates a sendMessage; answers the message to record (the server records it once the 200 is written). */
  sendMessage(params: Record<string, unknown>): { result: MethodResult; message?: FakeMessage } {
    const chatId = intParam(params.chat_id);
    if (chatId === undefined) return { result: error(400, 'Bad Request: chat_id is empty') };
    const chat = Number.isInteger(chatId) ? this.chats.get(chatId) : undefined;
    if (!chat) return { result: error(400, 'Bad Request: chat not found') };
    if (chat.blocked) return { result: error(403, 'Forbidden: bot was blocked by the user') };
    const raw = typeof params.text === 'string' ? params.text : '';
    const parseMode = typeof params.parse_mode === 'string' ? params.parse_mode : undefined;
    let text = raw;
    if (parseMode !== undefined) {
      if (parseMode.toLowerCase() !== 'html')
        return { result: error(400, `Bad Request: unsupported parse_mode (the fake knows HTML only): ${parseMode}`) };
      const parsed = parseHtml(raw);
      if (!parsed.ok) return { result: error(400, parsed.description) };
      text = parsed.text;
    }
    if (text.trim() === '') return { result: error(400, 'Bad Request: message text is empty') };
    if (text.length > MAX_TEXT) return { result: error(400, 'Bad Request: message is too long') };
    const keyboard = inlineKeyboard(params.reply_markup);
    if (typeof keyboard === 'string') return { result: error(400, keyboard) };
    const at = Date.now();
    const messageId = chat.nextMessageId++;
    const message: FakeMessage = {
      chatId,
      messageId,
      text,
      html: raw,
      parseMode,
      ...(keyboard === undefined ? {} : { inlineKeyboard: keyboard }),
      at,
    };
    const result = ok({
      message_id: messageId,
      from: { id: this.botId, is_bot: true, first_name: this.firstName, username: this.username },
      chat: { id: chatId, type: 'private', first_name: chat.firstName },
      date: Math.floor(at / 1000),
      text,
      ...(keyboard === undefined ? {} : { reply_markup: { inline_keyboard: keyboard } }),
    });
    return { result, message };
  }

  /**
   * editMessageReplyMarkup of a message the bot sent: `reply_markup` replaces its inline keyboard (none, or no
   * rows, takes it away). Refused as Telegram refuses it: no such message, the same keyboard again ("message is
   * not modified"), a keyboard sendMessage would refuse, a chat that blocked the bot.
   */
  editMessageReplyMarkup(params: Record<string, unknown>): MethodResult {
    if (params.inline_message_id !== undefined)
      return error(400, 'Bad Request: the fake edits messages of chats only, not inline messages');
    const chatId = intParam(params.chat_id);
    if (chatId === undefined) return error(400, 'Bad Request: chat_id is empty');
    const chat = this.chats.get(chatId);
    if (!chat) return error(400, 'Bad Request: chat not found');
    if (chat.blocked) return error(403, 'Forbidden: bot was blocked by the user');
    const messageId = intParam(params.message_id);
    if (messageId === undefined) return error(400, 'Bad Request: message identifier is not specified');
    const message = this.messages.find((each) => each.chatId === chatId && each.messageId === messageId);
    if (message === undefined) return error(400, 'Bad Request: message to edit not found');
    const parsed = params.reply_markup === undefined ? undefined : inlineKeyboard(params.reply_markup);
    if (typeof parsed === 'string') return error(400, parsed);
    const keyboard = parsed === undefined || parsed.length === 0 ? undefined : parsed;
    if (JSON.stringify(keyboard) === JSON.stringify(message.inlineKeyboard))
      return error(
        400,
        'Bad Request: message is not modified: specified new message content and reply markup are exactly the ' +
          'same as a current content and reply markup of the message',
      );
    if (keyboard === undefined) delete message.inlineKeyboard;
    else message.inlineKeyboard = keyboard;
    return ok({
      message_id: messageId,
      from: { id: this.botId, is_bot: true, first_name: this.firstName, username: this.username },
      chat: { id: chatId, type: 'private', first_name: chat.firstName },
      date: Math.floor(message.at / 1000),
      edit_date: Math.floor(Date.now() / 1000),
      text: message.text,
      ...(keyboard === undefined ? {} : { reply_markup: { inline_keyboard: keyboard } }),
    });
  }

  /** Stops waiting pollers and webhook retries. */
  close(): void {
    this.closed = true;
    this.waiter?.answer(ok([]));
    for (const waiter of [...this.superseded]) waiter.answer(ok([]));
  }

  /**
   * Ends the waiting getUpdates with `conflict`, after {@link CONFLICT_GRACE_MS}: a client that aborted it before
   * it sent the new request (grammY's `stop` aborts its long poll, then confirms the offset with a getUpdates on
   * another pooled connection) is gone by then, and the 409 written to nobody is not an answer it got. The newer
   * request is the waiter at once: updates go to it, never to the one ended.
   */
  private supersede(conflict: MethodResult): void {
    const waiter = this.waiter;
    if (waiter === undefined) return;
    this.waiter = undefined;
    this.superseded.add(waiter);
    clearTimeout(waiter.timer);
    waiter.timer = setTimeout(() => waiter.answer(conflict), CONFLICT_GRACE_MS);
  }

  /** Takes out the updates of types the bot did not ask for: Telegram never delivers them. */
  private dropUnwanted(): void {
    this.updates = this.updates.filter((update) => this.allowed.includes(typeOf(update)));
  }

  private wake(): void {
    this.dropUnwanted();
    if (this.webhook) {
      void this.deliver();
      return;
    }
    const waiter = this.waiter;
    if (waiter) waiter.answer(ok(this.updates.slice(0, waiter.limit)));
  }

  /** POSTs pending updates to the webhook in order, retrying one that fails until it is taken or unset. */
  private async deliver(): Promise<void> {
    if (this.delivering) return;
    this.delivering = true;
    try {
      let failures = 0;
      while (!this.closed && this.webhook && this.updates.length > 0) {
        const { url, secretToken } = this.webhook;
        const update = this.updates[0] as FakeUpdate;
        const outcome = await post(url, secretToken, update);
        this.webhookPosts.push({ updateId: update.update_id, outcome, at: Date.now() });
        if (typeof outcome === 'number' && outcome >= 200 && outcome < 300) {
          this.updates = this.updates.filter((pending) => pending !== update);
          failures = 0;
        } else {
          failures += 1;
          await new Promise((resolve) => setTimeout(resolve, Math.min(100 * 2 ** failures, 2000)));
        }
      }
    } finally {
      this.delivering = false;
    }
  }
}

function typeOf(update: FakeUpdate): string {
  return 'message' in update ? 'message' : 'callback_query';
}

/** `allowed_updates`: an array (JSON body) or its JSON text (form or query); an empty list means the default. */
function allowedParam(value: unknown): readonly string[] | undefined | 'invalid' {
  if (value === undefined || value === null || value === '') return undefined;
  let list = value;
  if (typeof value === 'string') {
    try {
      list = JSON.parse(value);
    } catch {
      return 'invalid';
    }
  }
  if (!Array.isArray(list) || !list.every((each) => typeof each === 'string')) return 'invalid';
  return list.length === 0 ? DEFAULT_UPDATES : list;
}

/**
 * The inline keyboard of a `reply_markup` (an object in a JSON body, its JSON text in a form), undefined without
 * one, or the Bot API's error description when Telegram would refuse it.
 */
function inlineKeyboard(value: unknown): InlineButton[][] | undefined | string {
  if (value === undefined || value === null || value === '') return undefined;
  let markup = value;
  if (typeof value === 'string') {
    try {
      markup = JSON.parse(value);
    } catch {
      return "Bad Request: can't parse reply keyboard markup JSON object";
    }
  }
  if (typeof markup !== 'object' || markup === null)
    return "Bad Request: can't parse reply keyboard markup JSON object";
  const rows = (markup as { inline_keyboard?: unknown }).inline_keyboard;
  // Other markups (a reply keyboard, force_reply) are not inline keyboards: the fake keeps none of them.
  if (rows === undefined) return undefined;
  if (!Array.isArray(rows) || !rows.every((row) => Array.isArray(row)))
    return 'Bad Request: field "inline_keyboard" of the InlineKeyboardMarkup should be an Array of Arrays';
  const keyboard: InlineButton[][] = [];
  for (const row of rows as unknown[][]) {
    const buttons: InlineButton[] = [];
    for (const button of row) {
      if (typeof button !== 'object' || button === null) return "Bad Request: can't parse inline keyboard button";
      const { text, callback_data: data, url } = button as Record<string, unknown>;
      if (typeof text !== 'string' || text === '')
        return 'Bad Request: text buttons are unallowed in the inline keyboard';
      if ((data === undefined) === (url === undefined))
        return "Bad Request: can't parse inline keyboard button: InlineKeyboardButton must have exactly one optional field";
      if (data !== undefined) {
        if (typeof data !== 'string' || data === '' || Buffer.byteLength(data) > MAX_CALLBACK_DATA)
          return 'Bad Request: BUTTON_DATA_INVALID';
        buttons.push({ text, callback_data: data });
      } else {
        if (typeof url !== 'string' || !URL.canParse(url)) return 'Bad Request: BUTTON_URL_INVALID';
        buttons.push({ text, url });
      }
    }
    keyboard.push(buttons);
  }
  return keyboard;
}

async function post(url: string, secretToken: string | undefined, update: FakeUpdate): Promise<number | string> {
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(secretToken === undefined ? {} : { 'x-telegram-bot-api-secret-token': secretToken }),
      },
      body: JSON.stringify(update),
      signal: AbortSignal.timeout(10_000),
    });
    await response.arrayBuffer();
    return response.status;
  } catch (cause) {
    return (cause as Error).message;
  }
}
