/**
 * The MAX bot: MAX's updates turned into the Telegram bot's own commands (telegram/commands.ts), in Russian, with
 * «Уведомления в MAX» where the words send a person back to a page.
 *
 * - `bot_started` (the person opened `https://max.ru/<bot>?start=<payload>`, or pressed «Начать») is `/start
 *   <payload>`: the payloads are the Telegram bot's, so one page link works in both.
 * - `message_created` in a dialog: `/start`, `/today`, `/tomorrow`, `/week`, `/list`, `/stop`, `/subgroup` and
 *   `/help` as in Telegram (MAX sends commands as plain text); any other text gets the short help.
 * - `bot_stopped` and `dialog_removed` unsubscribe the dialog from everything (nothing can be sent to it now).
 * - `message_callback`: the subgroup question's buttons (payload `sg:<source>:<n|all>`); the press is answered at
 *   once (`POST /answers`: a short notification, and the question without its buttons), then the dialog reads
 *   what changed.
 *
 * A dialog is its `chat_id` (what messages are sent to), never the person's `user_id`. A press in a dialog may
 * come without the dialog's id: the dialog each person last wrote from is remembered for that (`mx:user-chat`,
 * 90 days from their last update), and forgotten when they stop the bot or delete the dialog. A press that can do
 * nothing now (its dialog unknown, its button no longer one of ours) is answered «Эта кнопка больше не работает.»;
 * MAX refusing that answer (a press too old, answered before) is logged, not a failure of the update.
 *
 * Each dialog's updates are answered in order in a lane of its own (telegram/chat-lanes.ts), behind the command
 * gate (telegram/flood-gate.ts, MAX's own keys). Replies go as `reply` jobs of the MAX queue, named after the
 * update, under the dialog's pace and the bot's rate. Updates have no id: each is named by its message's or
 * press's id, or its type, dialog and time (updates.ts), and marked handled once its work is done, so a copy (a
 * poller that took over, a webhook retried) is dropped and one whose work was cut short is done again. A copy
 * that comes while the first is still being answered is dropped too (in another process, the reply's job id
 * keeps it from a second answer). A page of updates (long polling) reports whether any failed, before its lane or
 * in it, so that the poller asks for it again rather than committing it (poller.ts).
 */
import { createHash, createHmac } from 'node:crypto';
import type { RedisClient } from '../../lib/redis-target.ts';
import type { Logger } from '../../logger.ts';
import type { RedisKeys } from '../../store/keys.ts';
import type { SourceKey } from '../../timetable/source.ts';
import { ChatLanes } from '../telegram/chat-lanes.ts';
import {
  type CommandDeps,
  Commands,
  callbacks,
  cut,
  helpText,
  type Reply,
  SHORT_HELP,
  SUBGROUP_DATA,
} from '../telegram/commands.ts';
import { TOO_OFTEN } from '../telegram/flood-gate.ts';
import { MAX_TEXT_LENGTH, type MaxButton, type MaxClient } from './client.ts';
import { MaxPageError } from './errors.ts';
import { MaxSender } from './sender.ts';
import { type MaxBotInfo, type MaxUpdate, parseUpdate, UPDATE_TYPES, updateKey } from './updates.ts';

/** How long a handled update is remembered, and the bot's `GET /me` answer cached. */
const DAY_SECONDS = 24 * 3600;
/** How long the dialog of a person is remembered (renewed by each of their updates but a leaving one). */
const USER_CHAT_SECONDS = 90 * DAY_SECONDS;
/** After a failed `GET /me`, pages show no link and ask again no sooner than this. */
const USERNAME_RETRY_MS = 60_000;
/** Days `/week` lists. */
const WEEK_DAYS = 7;
/** The answer to a press that can do nothing now. */
const STALE_BUTTON = 'Эта кнопка больше не работает.';

/** The settings the bot runs with. */
export interface MaxBotConfig {
  readonly maxBotToken: string;
  readonly maxWebhookUrl?: string | undefined;
  /** The key the webhook's secret is derived from; without one, the bot token is (both are secrets). */
  readonly secretKey?: Buffer | undefined;
}

/** One reply as the bot hands it to be sent: the dialog, the update it answers, its messages. */
export interface MaxReply {
  chatId: string;
  /** The update's key (updates.ts): the reply job's id, so one update is answered once. */
  updateKey: string;
  parts: { text: string; buttons?: { text: string; callback_data: string }[][] }[];
}

/** What the bot reads and changes besides the commands' own. */
export interface MaxBotDeps extends Omit<CommandDeps, 'reply' | 'messenger'> {
  readonly client: Pick<MaxClient, 'me' | 'send' | 'answer' | 'subscribe' | 'subscriptions'>;
  readonly redis: RedisClient;
  readonly keys: Pick<RedisKeys, 'mxUpdate' | 'mxBotInfo' | 'mxUserChat'>;
  readonly logger: Pick<Logger, 'warn' | 'info' | 'error' | 'debug'>;
  /** Queues a reply (a `reply` job of the MAX queue); absent, it is sent at once (tests). */
  readonly reply?: ((reply: MaxReply) => Promise<void>) | undefined;
}

/** A configured bot. */
export interface MaxBot {
  /** The bot's username (for `https://max.ru/<username>`), cached; undefined while MAX cannot be asked. */
  username(): Promise<string | undefined>;
  /**
   * Takes one update (as MAX sent it): resolves once it is queued in its dialog's lane, or dropped; throws when it
   * could not be queued (Redis did not answer), so that MAX may send it again.
   */
  handle(update: unknown): Promise<void>;
  /**
   * Takes a page of updates (long polling), each as {@link handle} does, and resolves once all of them were
   * answered. Throws {@link MaxPageError} when any failed, before its lane or in it: the page is to be asked for
   * again (its updates answered already are then dropped as copies).
   */
  handlePage(updates: readonly unknown[]): Promise<void>;
  /** Resolves when every update handed over has been answered (a stopping process, a test waits). */
  idle(): Promise<void>;
  /** Webhook mode: subscribes `MAX_WEBHOOK_URL` for the bot's updates, with the secret header MAX must send. */
  subscribeWebhook(): Promise<void>;
  /** Webhook mode: subscribes again when MAX no longer lists the subscription (it drops one failing 8 hours). */
  checkWebhook(): Promise<void>;
  /** The `X-Max-Bot-Api-Secret` MAX sends in webhook mode. */
  readonly webhookSecret: string;
}

/**
 * The webhook's secret: an HMAC of a fixed purpose under `SECRET_KEY` (or the bot token), base64url, 43
 * characters of `[A-Za-z0-9_-]` as MAX requires: the same in every replica, nothing an outsider can compute.
 */
export function maxWebhookSecret(config: MaxBotConfig): string {
  const key = config.secretKey ?? Buffer.from(config.maxBotToken, 'utf8');
  return createHmac('sha256', key).update('max-webhook', 'utf8').digest('base64url');
}

/** A digest of the bot token naming what is kept per bot (its `GET /me`, its marker): 16 hex characters. */
export function maxTokenDigest(token: string): string {
  return createHash('sha256').update(`max-bot\n${token}`, 'utf8').digest('hex').slice(0, 16);
}

/** Builds the bot. */
export function createMaxBot(config: MaxBotConfig, deps: MaxBotDeps): MaxBot {
  const commands = new Commands({ ...deps, reply: undefined, messenger: 'MAX' });
  const lanes = new ChatLanes((error) => {
    // Never the message text: it may hold what a person typed.
    deps.logger.error({ err: error }, 'a MAX command failed');
  });
  const sender = new MaxSender(deps.client);
  /** Updates being answered by this process, by key. */
  const inFlight = new Set<string>();
  const admit = async (chatId: string) => (deps.gate === undefined ? 'answer' : await deps.gate.admit(chatId));

  /** Sends every message answering one update, in order (one job: a retry goes on where it stopped). */
  const send = async (chatId: string, key: string, replies: string | Reply | Reply[]) => {
    const parts = (Array.isArray(replies) ? replies : [replies]).map((reply) => {
      const { text, buttons } = typeof reply === 'string' ? { text: reply, buttons: undefined } : reply;
      return { text: cut(text, MAX_TEXT_LENGTH), ...(buttons ? { buttons: callbacks(buttons) } : {}) };
    });
    if (deps.reply !== undefined) return deps.reply({ chatId, updateKey: key, parts });
    for (const part of parts) {
      const sent = await sender.sendPlain(chatId, part.text, part.buttons && maxButtons(part.buttons));
      if (sent.kind !== 'sent') deps.logger.warn({ outcome: sent.kind }, 'a MAX reply was not sent');
    }
  };

  /** The text command of a message: `/today` → today, with what follows it. */
  const command = async (chatId: string, text: string): Promise<string | Reply | Reply[]> => {
    const match = /^\/([A-Za-z]+)(?:@\S+)?(?:\s+([\s\S]*))?$/.exec(text.trim());
    const argument = (match?.[2] ?? '').trim();
    switch (match?.[1]?.toLowerCase()) {
      case 'start':
        return commands.start(chatId, argument);
      case 'help':
        return helpText(deps.config.publicUrl, 'MAX');
      case 'today':
        return commands.classes(chatId, 0, 1);
      case 'tomorrow':
        return commands.classes(chatId, 1, 1);
      case 'week':
        return commands.classes(chatId, 0, WEEK_DAYS);
      case 'list':
        return commands.list(chatId);
      case 'stop':
        return commands.stop(chatId, argument);
      case 'subgroup':
        return commands.subgroup(chatId, argument);
      default:
        return `Не понимаю. ${SHORT_HELP}`;
    }
  };

  /** A subgroup button pressed: the press answered, the choice made, the dialog told. */
  const press = async (
    chatId: string,
    key: string,
    update: Extract<MaxUpdate, { update_type: 'message_callback' }>,
  ) => {
    const { callback, message } = update;
    const match = SUBGROUP_DATA.exec(callback.payload ?? '');
    if (match === null) return answerStale(callback.callback_id);
    const [, source, choice] = match as unknown as [string, SourceKey, string];
    const confirmed = await commands.chooseSubgroup(chatId, source, choice === 'all' ? undefined : Number(choice));
    // The press is answered first, and the question loses its buttons: the choice is made (/subgroup asks again).
    const question = message?.body.text;
    await deps.client.answer(callback.callback_id, {
      notification: confirmed.short,
      ...(question ? { message: { text: question } } : {}),
    });
    await send(chatId, key, confirmed.text);
  };

  /** The dialog an update is of: its own `chat_id`, or the one its person last wrote from. */
  const dialogOf = async (update: MaxUpdate): Promise<{ chatId: string; userId?: string } | undefined> => {
    switch (update.update_type) {
      case 'message_created': {
        const { recipient, sender: from } = update.message;
        // The bot answers people in their dialogs with it; its own messages, and group chats, are not commands.
        if (recipient.chat_type !== 'dialog' || from?.is_bot === true) return undefined;
        const chatId = recipient.chat_id ?? (from ? await rememberedChat(from.user_id) : undefined);
        return chatId === undefined ? undefined : { chatId, ...(from ? { userId: from.user_id } : {}) };
      }
      case 'message_callback': {
        const userId = update.callback.user.user_id;
        const chatId = update.message?.recipient.chat_id ?? (await rememberedChat(userId));
        return chatId === undefined ? undefined : { chatId, userId };
      }
      default:
        return { chatId: update.chat_id, userId: update.user.user_id };
    }
  };

  /** Answers a press that can do nothing now; MAX refusing the answer is logged only (nothing to do again). */
  const answerStale = async (callbackId: string) => {
    try {
      await deps.client.answer(callbackId, { notification: STALE_BUTTON });
    } catch (error) {
      deps.logger.warn({ err: error }, 'could not answer the press of a MAX button that no longer works');
    }
  };

  const rememberedChat = async (userId: string) => (await deps.redis.get(deps.keys.mxUserChat(userId))) ?? undefined;

  /** The work of one update in its dialog's lane. */
  const work = async (update: MaxUpdate, chatId: string, key: string, verdict: 'answer' | 'warn') => {
    if (update.update_type === 'bot_stopped' || update.update_type === 'dialog_removed') {
      const left = await deps.chats.unsubscribe(chatId);
      deps.logger.info({ sources: left.length, why: update.update_type }, 'a MAX dialog left the bot: unsubscribed');
      return;
    }
    if (update.update_type === 'message_callback') {
      if (verdict === 'warn') await deps.client.answer(update.callback.callback_id, { notification: TOO_OFTEN });
      else await press(chatId, key, update);
      return;
    }
    if (verdict === 'warn') return send(chatId, key, TOO_OFTEN);
    if (update.update_type === 'bot_started')
      return send(chatId, key, await commands.start(chatId, (update.payload ?? '').trim()));
    return send(chatId, key, await command(chatId, update.message.body.text ?? ''));
  };

  /**
   * Takes one update: dropped when it is a copy, else queued in its dialog's lane. `failures` hears what failed
   * in the lane (a page's updates); what fails before it throws.
   */
  const take = async (raw: unknown, failures?: unknown[]) => {
    const update = parseUpdate(raw);
    if (update === undefined) {
      const type = (raw as { update_type?: unknown } | null)?.update_type;
      deps.logger.debug({ updateType: typeof type === 'string' ? type : undefined }, 'a MAX update not handled');
      return;
    }
    const key = updateKey(update);
    const done = deps.keys.mxUpdate(key);
    // A copy while the first is still being answered here, or one answered before (here or anywhere).
    if (inFlight.has(key) || (await deps.redis.exists(done)) === 1) return;
    const dialog = await dialogOf(update);
    if (dialog === undefined) {
      if (update.update_type === 'message_callback') await answerStale(update.callback.callback_id);
      return;
    }
    const { chatId, userId } = dialog;
    const leaving = update.update_type === 'bot_stopped' || update.update_type === 'dialog_removed';
    // The person's dialog is kept only while they are in it: a leaving update forgets it rather than renewing it.
    if (userId !== undefined && leaving) await deps.redis.del(deps.keys.mxUserChat(userId));
    else if (userId !== undefined) await deps.redis.set(deps.keys.mxUserChat(userId), chatId, 'EX', USER_CHAT_SECONDS);
    // The gate is asked before the dialog's lane: a flood is cut before it queues anything. Leaving is no command.
    const verdict = leaving ? 'answer' : await admit(chatId);
    if (verdict === 'ignore' || inFlight.has(key)) return;
    inFlight.add(key);
    await lanes.run(chatId, async () => {
      try {
        await work(update, chatId, key, verdict);
        await deps.redis.set(done, '1', 'EX', DAY_SECONDS);
      } catch (error) {
        failures?.push(error);
        throw error;
      } finally {
        inFlight.delete(key);
      }
    });
  };

  let failedAt = -Number.POSITIVE_INFINITY;
  let known: MaxBotInfo | undefined;
  const infoKey = deps.keys.mxBotInfo(maxTokenDigest(config.maxBotToken));
  const me = async (): Promise<MaxBotInfo | undefined> => {
    if (known !== undefined) return known;
    const cached = await deps.redis.get(infoKey);
    if (cached !== null) {
      try {
        known = JSON.parse(cached) as MaxBotInfo;
        return known;
      } catch {
        // Unreadable: ask MAX again.
      }
    }
    if (Date.now() - failedAt < USERNAME_RETRY_MS) return undefined;
    try {
      known = await deps.client.me();
      await deps.redis.set(infoKey, JSON.stringify(known), 'EX', DAY_SECONDS);
      return known;
    } catch (error) {
      failedAt = Date.now();
      deps.logger.warn({ err: error }, 'MAX did not say who the bot is (GET /me); pages show no MAX link');
      return undefined;
    }
  };

  const secret = maxWebhookSecret(config);
  const subscribe = async () => {
    if (config.maxWebhookUrl === undefined) return;
    await deps.client.subscribe(config.maxWebhookUrl, UPDATE_TYPES, secret);
  };

  return {
    username: async () => (await me())?.username ?? undefined,
    handle: (raw) => take(raw),
    handlePage: async (updates) => {
      const failures: unknown[] = [];
      for (const raw of updates) await take(raw, failures).catch((error: unknown) => failures.push(error));
      await lanes.idle();
      if (failures.length > 0) throw new MaxPageError(failures.length, updates.length, failures[0]);
    },
    idle: () => lanes.idle(),
    subscribeWebhook: subscribe,
    checkWebhook: async () => {
      if (config.maxWebhookUrl === undefined) return;
      const listed = await deps.client.subscriptions();
      if (listed.some((each) => each.url === config.maxWebhookUrl)) return;
      deps.logger.warn({}, 'MAX no longer calls the webhook (it drops one that failed for hours): subscribing again');
      await subscribe();
    },
    webhookSecret: secret,
  };
}

/** A reply's buttons as MAX takes them: `callback_data` is the button's payload. */
export function maxButtons(rows: readonly { text: string; callback_data: string }[][]): MaxButton[][] {
  return rows.map((row) => row.map((button) => ({ text: button.text, payload: button.callback_data })));
}
