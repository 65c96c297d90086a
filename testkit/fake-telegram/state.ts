/**
 * What the fake Bot API remembers: its chats, the queue of updates (long polling or webhook), the messages it
 * accepted. Methods answer a {@link MethodResult}: the `result` of `{ok: true}` or a Bot API error.
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
  /** Epoch ms. */
  at: number;
}

/** An update as Telegram sends it (only text messages here). */
export interface FakeUpdate {
  update_id: number;
  message: {
    message_id: number;
    date: number;
    chat: { id: number; type: 'private'; first_name: string };
    from: { id: number; is_bot: false; first_name: string; language_code: string };
    text: string;
    entities?: { type: 'bot_command'; offset: number; length: number }[];
  };
}

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
  private readonly chats = new Map<number, Chat>();
  private updates: FakeUpdate[] = [];
  private nextUpdateId = 100_001;
  private waiter: Waiter | undefined;
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
    if (offset !== undefined && offset < 0) this.updates = this.updates.slice(offset);
    else if (offset !== undefined) this.updates = this.updates.filter((update) => update.update_id >= offset);
    // Telegram ends the request already waiting: the newest poller wins and the older one hears 409.
    this.waiter?.answer(error(409, CONFLICT_POLL));
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
    if (params.drop_pending_updates === true || params.drop_pending_updates === 'true') this.updates = [];
    this.waiter?.answer(error(409, 'Conflict: terminated by setWebhook request'));
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
    const at = Date.now();
    const messageId = chat.nextMessageId++;
    const message: FakeMessage = { chatId, messageId, text, html: raw, parseMode, at };
    const result = ok({
      message_id: messageId,
      from: { id: this.botId, is_bot: true, first_name: this.firstName, username: this.username },
      chat: { id: chatId, type: 'private', first_name: chat.firstName },
      date: Math.floor(at / 1000),
      text,
    });
    return { result, message };
  }

  /** Stops waiting pollers and webhook retries. */
  close(): void {
    this.closed = true;
    this.waiter?.answer(ok([]));
  }

  private wake(): void {
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
