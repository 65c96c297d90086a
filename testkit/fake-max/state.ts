/**
 * What the fake MAX Bot API remembers: the bot, its dialogs (each a person's, with a `chat_id` of its own that
 * is not the person's `user_id`), the update queue with its markers, the webhook subscriptions, the messages it
 * accepted with their callback buttons, and the bot's answers to button presses. Methods answer a {@link Result}:
 * the JSON of a 200, or MAX's error (`{code, message}`).
 */
import { htmlText } from './html.ts';

/** A message the fake accepted (answered 200). */
export interface FakeMaxMessage {
  /** The dialog's `chat_id`. */
  chatId: string;
  mid: string;
  /** The text a person sees (HTML read when `format` is html). */
  text: string;
  /** The text as sent. */
  raw: string;
  format: string | undefined;
  /** Whether the phone rang (`notify`, default true). */
  notify: boolean;
  /** Rows of callback buttons under it (an `inline_keyboard` attachment). */
  buttons?: FakeMaxButton[][];
  /** Epoch ms. */
  at: number;
}

/** A callback button as MAX takes it. */
export interface FakeMaxButton {
  type: 'callback';
  text: string;
  payload: string;
}

/** How the bot answered a button press (`POST /answers`). */
export interface FakeCallbackAnswer {
  callbackId: string;
  notification: string | undefined;
  /** The pressed message's new text and buttons, when the answer replaced it. */
  message?: { text: string; buttons: FakeMaxButton[][] | undefined };
  at: number;
}

/** An update as MAX sends it (the shapes of dev.max.ru's schema and the Go client's stubs). */
export type FakeMaxUpdate = { update_type: string; timestamp: number } & Record<string, unknown>;

/** One POST of an update to a webhook. */
export interface FakeWebhookPost {
  url: string;
  updateType: string;
  /** The receiver's HTTP status, or the network error's message. */
  outcome: number | string;
  /** Whether `X-Max-Bot-Api-Secret` was sent. */
  secretSent: boolean;
  at: number;
}

/** A webhook subscription. */
export interface FakeSubscription {
  url: string;
  /** The update types asked for; undefined: all. */
  types: string[] | undefined;
  secret: string | undefined;
  time: number;
}

/** A 200's JSON or MAX's error. */
export type Result = { ok: true; body: unknown } | { ok: false; status: number; code: string; message: string };

interface Dialog {
  chatId: string;
  userId: string;
  name: string;
  /** The person stopped the bot: messages answer 403 chat.denied until they start it again. */
  stopped: boolean;
  /** The person deleted the dialog: messages answer 404 chat.not.found until they start the bot again. */
  removed: boolean;
}

interface Waiter {
  wake(): void;
}

/** MAX's limit on a message's text. */
export const MAX_TEXT = 4000;
/** MAX's limits on a callback button (schema `Button`, `CallbackButton`). */
const MAX_BUTTON_TEXT = 128;
const MAX_BUTTON_PAYLOAD = 1024;
/** The fake holds a long poll at most this long whatever `timeout` says (MAX allows 90 s). */
const LONGEST_HOLD_MS = 90_000;

/**
 * The first update's sequence number: beyond 2^53, as MAX's 64-bit markers may be, so that a client reading a
 * marker as a JS number (and losing its last digits) is caught.
 */
const FIRST_SEQ = 2n ** 60n + 1n;

/** A 64-bit integer written into JSON as its digits (`JSON.rawJSON`, which TypeScript's es2024 lib lacks). */
function int64(value: bigint): unknown {
  return (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON(value.toString());
}

function ok(body: unknown): Result {
  return { ok: true, body };
}

function error(status: number, code: string, message: string): Result {
  return { ok: false, status, code, message };
}

/** A 64-bit id in a query (`chat_id`, `marker`): its digits, or undefined when absent, NaN-like when not one. */
export function idParam(value: string | null): string | undefined | 'invalid' {
  if (value === null || value === '' || value === 'null') return undefined;
  return /^-?\d{1,19}$/.test(value) ? value : 'invalid';
}

export class MaxState {
  readonly botId: string;
  readonly username: string;
  readonly name: string;
  readonly messages: FakeMaxMessage[] = [];
  readonly answers: FakeCallbackAnswer[] = [];
  readonly webhookPosts: FakeWebhookPost[] = [];
  /** The bot was not let through moderation (or was suspended): every message answers 403 chat.denied. */
  suspended = false;
  private readonly dialogs = new Map<string, Dialog>();
  private readonly dialogOfUser = new Map<string, string>();
  private nextChatId = 182_000_001;
  private nextMid = 1;
  /** Presses not answered yet, by callback id: the message pressed. */
  private readonly openCallbacks = new Map<string, string>();
  private nextCallback = 1;
  /** Updates not committed yet, each with its sequence number (the marker of the update after it is seq + 1). */
  private queue: { seq: bigint; update: FakeMaxUpdate }[] = [];
  private nextSeq = FIRST_SEQ;
  private readonly waiters = new Set<Waiter>();
  private subscriptions: FakeSubscription[] = [];
  private delivering = false;
  private closed = false;

  constructor(botId: string, username: string, name: string) {
    this.botId = botId;
    this.username = username;
    this.name = name;
  }

  me(): Result {
    return ok({
      user_id: Number(this.botId),
      first_name: this.name,
      name: this.name,
      username: this.username,
      is_bot: true,
      last_activity_time: Date.now(),
    });
  }

  /** The dialog of a person, made when they first open the bot. */
  private dialogOf(userId: string, name?: string): Dialog {
    const known = this.dialogOfUser.get(userId);
    if (known !== undefined) return this.dialogs.get(known) as Dialog;
    const dialog: Dialog = {
      chatId: String(this.nextChatId++),
      userId,
      name: name ?? `Пользователь ${userId}`,
      stopped: false,
      removed: false,
    };
    this.dialogs.set(dialog.chatId, dialog);
    this.dialogOfUser.set(userId, dialog.chatId);
    return dialog;
  }

  /**
   * A person who opened the bot long ago (their `bot_started` handled then): their dialog, with no update now.
   * Benchmarks make their subscribers so, as the Telegram fake's `addChat` does.
   */
  addDialog(userId: string): string {
    return this.dialogOf(userId).chatId;
  }

  /** The dialog `chat_id` of a person, if they have one. */
  chatIdOf(userId: string): string | undefined {
    return this.dialogOfUser.get(userId);
  }

  private user(dialog: Dialog): Record<string, unknown> {
    return {
      user_id: Number(dialog.userId),
      first_name: dialog.name,
      last_name: '',
      is_bot: false,
      last_activity_time: Date.now(),
      name: dialog.name,
    };
  }

  /** The person opens the bot (its «Начать», or a `?start=<payload>` link): `bot_started`. */
  userStarts(userId: string, payload?: string): string {
    const dialog = this.dialogOf(userId);
    dialog.stopped = false;
    dialog.removed = false;
    this.push({
      update_type: 'bot_started',
      timestamp: Date.now(),
      chat_id: Number(dialog.chatId),
      user: this.user(dialog),
      user_id: Number(dialog.userId),
      ...(payload === undefined ? {} : { payload }),
      user_locale: 'ru',
    });
    return dialog.chatId;
  }

  /** The person writes `text` in their dialog: `message_created`; the message's `mid`. */
  userSays(userId: string, text: string): string {
    const dialog = this.dialogOf(userId);
    const mid = this.mid();
    this.push({
      update_type: 'message_created',
      timestamp: Date.now(),
      message: {
        recipient: { chat_id: Number(dialog.chatId), chat_type: 'dialog', user_id: Number(this.botId) },
        timestamp: Date.now(),
        body: { mid, seq: this.nextMid, text },
        sender: this.user(dialog),
      },
      user_locale: 'ru',
    });
    return mid;
  }

  /** The person stops the bot: `bot_stopped`, and messages to them answer 403 chat.denied. */
  userStops(userId: string): void {
    const dialog = this.dialogOf(userId);
    dialog.stopped = true;
    this.push({
      update_type: 'bot_stopped',
      timestamp: Date.now(),
      chat_id: Number(dialog.chatId),
      user: this.user(dialog),
      user_locale: 'ru',
    });
  }

  /** The person deletes the dialog: `dialog_removed`, and messages to it answer 404 chat.not.found. */
  userRemovesDialog(userId: string): void {
    const dialog = this.dialogOf(userId);
    dialog.removed = true;
    this.push({
      update_type: 'dialog_removed',
      timestamp: Date.now(),
      chat_id: Number(dialog.chatId),
      user: this.user(dialog),
      user_locale: 'ru',
    });
  }

  /**
   * The person presses the button with `payload` under the bot's message `mid`: `message_callback`. Throws when
   * that message has no such button. `withoutChatId`: the pressed message's recipient lacks `chat_id`, as MAX
   * sends some presses in dialogs. The callback id the bot must answer.
   */
  userPresses(userId: string, mid: string, payload: string, withoutChatId = false): string {
    const dialog = this.dialogOf(userId);
    const message = this.messages.find((each) => each.mid === mid && each.chatId === dialog.chatId);
    const button = message?.buttons?.flat().find((each) => each.payload === payload);
    if (message === undefined || button === undefined)
      throw new Error(`dialog ${dialog.chatId} has no message ${mid} with a button ${JSON.stringify(payload)}`);
    const callbackId = `cb${String(this.nextCallback++).padStart(6, '0')}_${mid.slice(-6)}`;
    this.openCallbacks.set(callbackId, mid);
    this.push({
      update_type: 'message_callback',
      timestamp: Date.now(),
      callback: { timestamp: Date.now(), callback_id: callbackId, user: this.user(dialog), payload },
      message: {
        recipient: {
          ...(withoutChatId ? {} : { chat_id: Number(dialog.chatId) }),
          chat_type: 'dialog',
          user_id: Number(dialog.userId),
        },
        timestamp: message.at,
        body: { mid: message.mid, seq: 1, text: message.text },
        sender: { user_id: Number(this.botId), first_name: this.name, username: this.username, is_bot: true },
      },
      user_locale: 'ru',
    });
    return callbackId;
  }

  /** Validates and accepts `POST /messages`; the message is recorded by the server once its 200 is written. */
  sendMessage(
    query: URLSearchParams,
    body: Record<string, unknown>,
  ): { result: Result; message?: FakeMaxMessage; chatId?: string } {
    const chatParam = idParam(query.get('chat_id'));
    const userParam = idParam(query.get('user_id'));
    if (chatParam === 'invalid' || userParam === 'invalid')
      return { result: error(400, 'proto.payload', 'chat_id and user_id must be integers') };
    if (chatParam === undefined && userParam === undefined)
      return { result: error(400, 'proto.payload', 'chat_id or user_id is required') };
    const chatId = chatParam ?? this.dialogOfUser.get(userParam as string);
    if (chatId === '0') return { result: error(403, 'chat.denied', 'Invalid chatId: 0') };
    const dialog = chatId === undefined ? undefined : this.dialogs.get(chatId);
    if (dialog === undefined || dialog.removed)
      return { result: error(404, 'chat.not.found', `Chat ${chatId ?? userParam} not found`) };
    if (this.suspended || dialog.stopped)
      return {
        result: error(403, 'chat.denied', `Key: error.dialog.suspended, args: [${dialog.chatId},].`),
        chatId: dialog.chatId,
      };
    const message = this.readMessage(dialog.chatId, body);
    if ('ok' in message) return { result: message, chatId: dialog.chatId };
    return {
      result: ok({
        message: {
          recipient: { chat_id: Number(dialog.chatId), chat_type: 'dialog', user_id: Number(dialog.userId) },
          timestamp: message.at,
          body: { mid: message.mid, seq: this.nextMid, text: message.raw },
          sender: { user_id: Number(this.botId), first_name: this.name, username: this.username, is_bot: true },
        },
      }),
      message,
      chatId: dialog.chatId,
    };
  }

  /** A `NewMessageBody`, or MAX's 400 for what it would refuse. */
  private readMessage(chatId: string, body: Record<string, unknown>): FakeMaxMessage | Result {
    const raw = body.text;
    if (typeof raw !== 'string' || raw.trim() === '') return error(400, 'proto.payload', 'text: must not be empty');
    if (raw.length > MAX_TEXT) return error(400, 'proto.payload', `text: size must be between 0 and ${MAX_TEXT}`);
    const format = body.format;
    if (format !== undefined && format !== null && format !== 'html' && format !== 'markdown')
      return error(400, 'proto.payload', `format: unknown value ${String(format)}`);
    const buttons = readButtons(body.attachments);
    if (typeof buttons === 'string') return error(400, 'proto.payload', buttons);
    return {
      chatId,
      mid: this.mid(),
      text: format === 'html' ? htmlText(raw) : raw,
      raw,
      format: typeof format === 'string' ? format : undefined,
      notify: body.notify !== false,
      ...(buttons === undefined ? {} : { buttons }),
      at: Date.now(),
    };
  }

  /** `POST /answers?callback_id=`: once per press; `message` replaces the pressed one's text and buttons. */
  answer(query: URLSearchParams, body: Record<string, unknown>): Result {
    const callbackId = query.get('callback_id') ?? '';
    if (callbackId.trim() === '') return error(400, 'proto.payload', 'callback_id is required');
    const mid = this.openCallbacks.get(callbackId);
    if (mid === undefined) return error(404, 'not.found', `Callback ${callbackId} not found`);
    const notification = typeof body.notification === 'string' ? body.notification : undefined;
    let replaced: FakeCallbackAnswer['message'];
    if (body.message !== undefined && body.message !== null) {
      const pressed = this.messages.find((each) => each.mid === mid);
      if (typeof body.message !== 'object' || pressed === undefined)
        return error(400, 'proto.payload', 'message: not a message');
      const read = this.readMessage(pressed.chatId, body.message as Record<string, unknown>);
      if ('ok' in read) return read;
      pressed.text = read.text;
      pressed.raw = read.raw;
      pressed.format = read.format;
      if (read.buttons === undefined) delete pressed.buttons;
      else pressed.buttons = read.buttons;
      replaced = { text: read.text, buttons: read.buttons };
    }
    if (notification === undefined && replaced === undefined)
      return error(400, 'proto.payload', 'either message or notification is required');
    this.openCallbacks.delete(callbackId);
    this.answers.push({ callbackId, notification, ...(replaced ? { message: replaced } : {}), at: Date.now() });
    return ok({ success: true });
  }

  /**
   * `GET /updates`: commits what came before `marker`, then answers the updates from it (of `types`), holding the
   * request up to `timeout` seconds while there are none. Without a marker only the latest update is answered.
   * While a webhook is subscribed long polling gets nothing.
   */
  async updates(query: URLSearchParams, signal: AbortSignal): Promise<Result> {
    const marker = idParam(query.get('marker'));
    const limit = Number(query.get('limit') ?? '100');
    const timeout = Number(query.get('timeout') ?? '30');
    if (marker === 'invalid' || !Number.isInteger(limit) || limit < 1 || limit > 1000)
      return error(400, 'proto.payload', 'marker and limit must be integers, limit 1 to 1000');
    if (!Number.isInteger(timeout) || timeout < 0 || timeout > 90)
      return error(400, 'proto.payload', 'timeout must be 0 to 90');
    const types = query
      .get('types')
      ?.split(',')
      .filter((each) => each !== '');
    if (marker !== undefined) this.queue = this.queue.filter((each) => each.seq >= BigInt(marker));
    // An empty page carries a valid marker too (MAX's does): the one passed, or where the queue goes on.
    const next = marker !== undefined ? BigInt(marker) : this.nextSeq;
    const deadline = Date.now() + Math.min(timeout * 1000, LONGEST_HOLD_MS);
    for (;;) {
      if (this.subscriptions.length === 0) {
        const wanted = this.queue.filter((each) => types === undefined || types.includes(each.update.update_type));
        const page = (marker === undefined ? wanted.slice(-1) : wanted).slice(0, limit);
        const last = page.at(-1);
        if (last !== undefined || this.closed || signal.aborted || Date.now() >= deadline)
          return ok({
            updates: page.map((each) => each.update),
            marker: int64(last !== undefined ? last.seq + 1n : next),
          });
      } else if (this.closed || signal.aborted || Date.now() >= deadline)
        return ok({ updates: [], marker: int64(next) });
      await this.wait(deadline - Date.now(), signal);
    }
  }

  /** Updates not committed yet (not passed by a marker, not taken by a webhook). */
  pendingUpdates(): number {
    return this.queue.length;
  }

  /** `POST /subscriptions`. */
  subscribe(body: Record<string, unknown>): Result {
    const url = body.url;
    if (typeof url !== 'string' || !URL.canParse(url)) return error(400, 'proto.payload', 'url: not a URL');
    const secret = body.secret;
    if (secret !== undefined && (typeof secret !== 'string' || !/^[A-Za-z0-9_-]{5,256}$/.test(secret)))
      return error(400, 'proto.payload', 'secret: must match ^[a-zA-Z0-9_-]{5,256}$');
    const types = body.update_types;
    if (types !== undefined && (!Array.isArray(types) || !types.every((each) => typeof each === 'string')))
      return error(400, 'proto.payload', 'update_types: must be a list of strings');
    this.subscriptions = this.subscriptions.filter((each) => each.url !== url);
    this.subscriptions.push({
      url,
      types: types === undefined || types.length === 0 ? undefined : [...(types as string[])],
      secret: secret as string | undefined,
      time: Date.now(),
    });
    this.wakeAll();
    void this.deliver();
    return ok({ success: true });
  }

  /** `GET /subscriptions`. */
  listSubscriptions(): Result {
    return ok({
      subscriptions: this.subscriptions.map((each) => ({
        url: each.url,
        time: each.time,
        update_types: each.types ?? [],
        version: '0.0.1',
      })),
    });
  }

  /** `DELETE /subscriptions?url=`. */
  unsubscribe(query: URLSearchParams): Result {
    const url = query.get('url');
    if (url === null || url === '') return error(400, 'proto.payload', 'url is required');
    this.subscriptions = this.subscriptions.filter((each) => each.url !== url);
    this.wakeAll();
    return ok({ success: true });
  }

  /** The webhook subscriptions. */
  currentSubscriptions(): FakeSubscription[] {
    return this.subscriptions.map((each) => ({ ...each }));
  }

  /** Ends waiting polls and webhook retries. */
  close(): void {
    this.closed = true;
    this.wakeAll();
  }

  private mid(): string {
    return `mid.${(this.nextMid++).toString(16).padStart(32, '0')}`;
  }

  private push(update: FakeMaxUpdate): void {
    this.queue.push({ seq: this.nextSeq++, update });
    this.wakeAll();
    if (this.subscriptions.length > 0) void this.deliver();
  }

  private wakeAll(): void {
    for (const waiter of [...this.waiters]) waiter.wake();
  }

  private wait(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const waiter: Waiter = {
        wake: () => {
          clearTimeout(timer);
          signal.removeEventListener('abort', waiter.wake);
          this.waiters.delete(waiter);
          resolve();
        },
      };
      const timer = setTimeout(waiter.wake, Math.max(0, ms));
      signal.addEventListener('abort', waiter.wake, { once: true });
      this.waiters.add(waiter);
    });
  }

  /**
   * POSTs the queue's updates to every subscription that asked for their type, in order, with the secret header;
   * an update goes once every one of them answered 200 (retried meanwhile, as MAX retries for hours).
   */
  private async deliver(): Promise<void> {
    if (this.delivering) return;
    this.delivering = true;
    try {
      let failures = 0;
      while (!this.closed && this.subscriptions.length > 0 && this.queue.length > 0) {
        const head = this.queue[0] as { seq: bigint; update: FakeMaxUpdate };
        let taken = true;
        for (const subscription of [...this.subscriptions]) {
          if (subscription.types !== undefined && !subscription.types.includes(head.update.update_type)) continue;
          const outcome = await post(subscription, head.update);
          this.webhookPosts.push({
            url: subscription.url,
            updateType: head.update.update_type,
            outcome,
            secretSent: subscription.secret !== undefined,
            at: Date.now(),
          });
          if (outcome !== 200) taken = false;
        }
        if (taken) {
          this.queue = this.queue.filter((each) => each !== head);
          failures = 0;
        } else {
          failures += 1;
          await new Promise((resolve) => setTimeout(resolve, Math.min(100 * 2 ** failures, 2_000)));
        }
      }
    } finally {
      this.delivering = false;
    }
  }
}

/** The `inline_keyboard` attachment's callback buttons; undefined without one; MAX's reason when it would refuse. */
function readButtons(attachments: unknown): FakeMaxButton[][] | undefined | string {
  if (attachments === undefined || attachments === null) return undefined;
  if (!Array.isArray(attachments)) return 'attachments: must be a list';
  let rows: FakeMaxButton[][] | undefined;
  for (const attachment of attachments as unknown[]) {
    const { type, payload } = (attachment ?? {}) as { type?: unknown; payload?: { buttons?: unknown } };
    if (type !== 'inline_keyboard') return `attachments: the fake takes inline_keyboard only, not ${String(type)}`;
    const buttons = payload?.buttons;
    if (!Array.isArray(buttons) || buttons.length === 0 || !buttons.every(Array.isArray))
      return 'attachments.payload.buttons: must be a list of rows';
    rows = [];
    for (const row of buttons as unknown[][]) {
      const read: FakeMaxButton[] = [];
      for (const button of row) {
        const { type: kind, text, payload: data } = (button ?? {}) as Record<string, unknown>;
        if (kind !== 'callback') return `button: the fake takes callback buttons only, not ${String(kind)}`;
        if (typeof text !== 'string' || text.length < 1 || text.length > MAX_BUTTON_TEXT)
          return `button.text: size must be between 1 and ${MAX_BUTTON_TEXT}`;
        if (typeof data !== 'string' || data.length > MAX_BUTTON_PAYLOAD)
          return `button.payload: size must be at most ${MAX_BUTTON_PAYLOAD}`;
        read.push({ type: 'callback', text, payload: data });
      }
      rows.push(read);
    }
  }
  return rows;
}

async function post(subscription: FakeSubscription, update: FakeMaxUpdate): Promise<number | string> {
  try {
    const response = await fetch(subscription.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(subscription.secret === undefined ? {} : { 'x-max-bot-api-secret': subscription.secret }),
      },
      body: JSON.stringify(update),
      signal: AbortSignal.timeout(30_000),
    });
    await response.arrayBuffer();
    return response.status;
  } catch (cause) {
    return (cause as Error).message;
  }
}
