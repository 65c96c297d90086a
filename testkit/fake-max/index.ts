/**
 * A fake MAX Bot API on loopback, for tests and benchmarks: the service's MAX client pointed at `apiRoot`
 * (`MAX_API_ROOT`) talks to it as to platform-api2.max.ru.
 *
 * Written from what MAX publishes and its official clients do: dev.max.ru's OpenAPI schema (v0.0.30–0.0.32: paths,
 * `NewMessageBody`, `UpdateList`, `SubscriptionRequestBody`, `CallbackAnswer`, `Error`), its pages on limits
 * (30 requests a second per bot; two messages a second per dialog; text up to 4000 characters), webhooks (the
 * `X-Max-Bot-Api-Secret` header, `^[a-zA-Z0-9_-]{5,256}$`, long polling off while subscribed) and deep links; the
 * official Go client (`max-bot-api-client-go`: the bare `Authorization` header, `stabs/update.*.json`,
 * `stabs/error.invalid-token.json`) and TypeScript client (`@maxhub/max-bot-api` 0.3.1: 401 as `verify.token`);
 * and the error bodies public test suites stub (`403 chat.denied` «error.dialog.suspended», `404 chat.not.found`).
 * Where none of them says (the 429's body and `Retry-After`, entity decoding in HTML), faults.ts and html.ts say
 * what was assumed.
 *
 * It keeps the rules a bot depends on:
 * - the token in a bare `Authorization` header, else 401 `verify.token`; an unknown path 404, a wrong method 405;
 * - `GET /me`;
 * - `POST /messages?chat_id=` (or `user_id=`, the person's dialog): 400 for text over 4000 characters or a
 *   refused keyboard, 403 `chat.denied` when the person stopped the bot (or the bot is suspended, or chat 0),
 *   404 `chat.not.found` for a dialog that does not exist or was deleted; a message counts only once its 200 was
 *   written (a request held by a `stall` fault whose client died meanwhile is not a message);
 * - `GET /updates` with markers (64-bit, beyond 2^53, written as digits): passing one commits the updates before
 *   it; without one only the latest update is answered; a request with nothing to answer is held up to `timeout`
 *   seconds, answered early by a new update, and an empty answer carries a valid marker too; `types` filters;
 *   while a webhook is subscribed it gets nothing;
 * - `POST/GET/DELETE /subscriptions`, and every update POSTed to the subscribed URL with the secret header,
 *   retried until it answers 200;
 * - `POST /answers?callback_id=` once per button press (`message_callback`), replacing the pressed message when
 *   asked to;
 * - a bucket of 30 requests a second for the bot and one of two messages a second per dialog, both answering 429
 *   `too.many.requests` with `Retry-After: 1`; faults (400, 429, 403, 5xx, a dropped connection, a held request).
 */
import { type MaxFault, MaxFaults } from './faults.ts';
import { Bucket, type FakeMaxCall, type FakeMaxContext, listen } from './server.ts';
import {
  type FakeCallbackAnswer,
  type FakeMaxMessage,
  type FakeSubscription,
  type FakeWebhookPost,
  MaxState,
} from './state.ts';

export type { MaxFault, MaxFaultKind } from './faults.ts';
export { htmlLinks, htmlText } from './html.ts';
export type { FakeMaxCall } from './server.ts';
export type { FakeCallbackAnswer, FakeMaxButton, FakeMaxMessage, FakeSubscription, FakeWebhookPost } from './state.ts';

/** Options of {@link startFakeMax}; all optional. */
export interface FakeMaxOptions {
  /** The bot's token; default `fake-max-token-0123456789`. */
  token?: string;
  /** The bot's username (`GET /me`, the link `https://max.ru/<username>`); default `id7700000001_bot`. */
  username?: string;
  /** Requests a second the bot may make (MAX: 30); 0: not enforced. Default 30. */
  rps?: number;
  /** Messages a second to one dialog (MAX: 2); 0: not enforced. Default 2. */
  chatRate?: number;
}

/** A running fake. A person's actions and inspection go around the API: not recorded as calls, never fault. */
export interface FakeMax {
  /** `http://127.0.0.1:PORT` (no trailing slash): `MAX_API_ROOT`. */
  readonly apiRoot: string;
  readonly token: string;
  readonly username: string;
  readonly botId: string;
  /** Stops the server, ends waiting polls and held requests, drops open connections. */
  close(): Promise<void>;
  /** The person opens the bot, by a `?start=<payload>` link or its «Начать»: `bot_started`; their dialog's `chat_id`. */
  userStarts(userId: string, payload?: string): string;
  /** A person whose dialog exists from long ago (no update now); their dialog's `chat_id`. */
  addDialog(userId: string): string;
  /** The person writes `text` in their dialog: `message_created`; its `mid`. */
  userSays(userId: string, text: string): string;
  /** The person stops the bot: `bot_stopped`; messages to them answer 403 `chat.denied` until they start it. */
  userStops(userId: string): void;
  /** The person deletes the dialog: `dialog_removed`; messages answer 404 `chat.not.found` until they start it. */
  userRemovesDialog(userId: string): void;
  /** The person presses a button of the bot's message `mid`: `message_callback`; the callback id to answer. */
  userPresses(userId: string, mid: string, payload: string, options?: { withoutChatId?: boolean }): string;
  /** The dialog `chat_id` of a person (it is not their `user_id`). */
  chatIdOf(userId: string): string | undefined;
  /** The bot is not let through moderation: every message answers 403 `chat.denied`; false lets it through. */
  suspend(suspended: boolean): void;
  /** Messages accepted (answered 200), oldest first; of one dialog when given. */
  messages(chatId?: string): FakeMaxMessage[];
  /** The bot's answers to button presses, oldest first. */
  answers(): FakeCallbackAnswer[];
  /** Adds a fault rule. */
  fault(rule: MaxFault): void;
  /** Removes every fault rule (held requests stay held until `release()`). */
  clearFaults(): void;
  /** Serves every request held by a `stall` fault whose client is still there. */
  release(): void;
  /** How many requests are held by a `stall` fault right now. */
  stalledCount(): number;
  /** The requests received, oldest first; of one path (`messages`, `updates`, …) when given. */
  calls(path?: string): FakeMaxCall[];
  /** Updates not committed yet. */
  pendingUpdates(): number;
  /** The webhook subscriptions. */
  subscriptions(): FakeSubscription[];
  /** Every POST of an update to a webhook, oldest first. */
  webhookPosts(): FakeWebhookPost[];
  /** 429 answers of the bot's bucket (`global`) and of the dialogs' (`chat`). */
  refusals(): { global: number; chat: number };
}

/** Starts a fake MAX Bot API on 127.0.0.1 (a free port). */
export async function startFakeMax(options: FakeMaxOptions = {}): Promise<FakeMax> {
  const token = options.token ?? 'fake-max-token-0123456789';
  const username = options.username ?? 'id7700000001_bot';
  const state = new MaxState('7700000001', username, 'Расписание');
  const rps = options.rps ?? 30;
  const chatRate = options.chatRate ?? 2;
  const ctx: FakeMaxContext = {
    token,
    state,
    faults: new MaxFaults(),
    calls: [],
    stalled: new Set(),
    global: rps > 0 ? new Bucket(rps, rps) : undefined,
    chats: new Map(),
    chatRate: chatRate > 0 ? chatRate : undefined,
    refusals: { global: 0, chat: 0 },
  };
  const server = await listen(ctx);
  return {
    apiRoot: server.origin,
    token,
    username,
    botId: state.botId,
    close: () => server.close(),
    userStarts: (userId, payload) => state.userStarts(userId, payload),
    addDialog: (userId) => state.addDialog(userId),
    userSays: (userId, text) => state.userSays(userId, text),
    userStops: (userId) => state.userStops(userId),
    userRemovesDialog: (userId) => state.userRemovesDialog(userId),
    userPresses: (userId, mid, payload, pressOptions) =>
      state.userPresses(userId, mid, payload, pressOptions?.withoutChatId ?? false),
    chatIdOf: (userId) => state.chatIdOf(userId),
    suspend: (suspended) => {
      state.suspended = suspended;
    },
    messages: (chatId) =>
      state.messages
        .filter((message) => chatId === undefined || message.chatId === chatId)
        .map((message) => ({ ...message })),
    answers: () => state.answers.map((answer) => ({ ...answer })),
    fault: (rule) => ctx.faults.add(rule),
    clearFaults: () => ctx.faults.clear(),
    release: () => {
      for (const release of [...ctx.stalled]) release();
    },
    stalledCount: () => ctx.stalled.size,
    calls: (path) => ctx.calls.filter((call) => path === undefined || call.path === path).map((call) => ({ ...call })),
    pendingUpdates: () => state.pendingUpdates(),
    subscriptions: () => state.currentSubscriptions(),
    webhookPosts: () => state.webhookPosts.map((post) => ({ ...post })),
    refusals: () => ({ ...ctx.refusals }),
  };
}
