/**
 * The Telegram bot (grammY): its commands, the dedupe of updates, its username for the pages' links, and webhook
 * mode's registration and secret.
 *
 * An update can arrive twice: a poller that took over asks again from the last offset Telegram was told, and
 * Telegram retries a webhook call that failed. Each update id is therefore claimed in Redis (`SET NX`, a day)
 * before it is handled; a second copy is dropped.
 */
import { createHash, createHmac } from 'node:crypto';
import { Bot, type Context, type NextFunction } from 'grammy';
import type { UserFromGetMe } from 'grammy/types';
import type { RedisClient } from '../../lib/redis-target.ts';
import type { Logger } from '../../logger.ts';
import type { RedisKeys } from '../../store/keys.ts';
import { type CommandDeps, registerCommands } from './commands.ts';
import { proxyClientOptions } from './proxy-fetch.ts';

/** How long a handled update id is remembered, and how long the bot's getMe answer is cached. */
const DAY_SECONDS = 24 * 3600;
/** After a failed getMe, pages show no link and ask again no sooner than this. */
const USERNAME_RETRY_MS = 60_000;
/** A long poll waits this long on Telegram's side; the client's own timeout is longer. */
export const POLL_TIMEOUT_SECONDS = 30;
/** The updates the bot asks for: messages (commands) and button presses (the subgroup question). */
export const ALLOWED_UPDATES = ['message', 'callback_query'] as const;
/** The HTTP timeout of every Bot API call: longer than a long poll. */
const CLIENT_TIMEOUT_SECONDS = 40;

/** The settings the bot runs with. */
export interface TelegramBotConfig {
  readonly telegramBotToken: string;
  readonly telegramApiRoot: string;
  readonly telegramWebhookUrl?: string | undefined;
  /** The key the webhook's secret is derived from; without one, the bot token is (both are secrets). */
  readonly secretKey?: Buffer | undefined;
  /** A proxy every Bot API request goes through (proxy-fetch.ts); without one, Telegram directly. */
  readonly telegramProxy?: string | undefined;
}

/** What the bot reads and changes besides the commands' own. */
export interface TelegramBotDeps extends CommandDeps {
  readonly redis: RedisClient;
  readonly keys: Pick<RedisKeys, 'tgUpdate' | 'tgBotInfo'>;
  readonly logger: Pick<Logger, 'warn' | 'info' | 'error'>;
}

/** A configured bot. */
export interface TelegramBot {
  readonly bot: Bot;
  /** The bot's username (for `https://t.me/<username>`), cached; undefined while Telegram cannot be asked. */
  username(): Promise<string | undefined>;
  /** Makes sure the bot knows itself (getMe, or the cached answer) before it handles an update. */
  ready(): Promise<void>;
  /** Webhook mode: tells Telegram where to send updates, with the secret header it must send. */
  setWebhook(): Promise<void>;
  /** The `X-Telegram-Bot-Api-Secret-Token` Telegram sends in webhook mode. */
  readonly webhookSecret: string;
  /**
   * Resolves when every update handed to the bot has been answered: a handler only queues its chat's work
   * (chat-lanes.ts), so a stopping process, and a test, waits here.
   */
  idle(): Promise<void>;
}

/**
 * The webhook's secret token: an HMAC of a fixed purpose under `SECRET_KEY` (or the bot token), base64url, 43
 * characters: the same in every replica, and nothing an outsider can compute.
 */
export function webhookSecret(config: TelegramBotConfig): string {
  const key = config.secretKey ?? Buffer.from(config.telegramBotToken, 'utf8');
  return createHmac('sha256', key).update('telegram-webhook', 'utf8').digest('base64url');
}

/** A digest of the bot token that names its cached getMe answer: 16 hex characters, not the token. */
export function tokenDigest(token: string): string {
  return createHash('sha256').update(`telegram-bot-info\n${token}`, 'utf8').digest('hex').slice(0, 16);
}

/** Builds the bot with its middleware; `botInfo` skips getMe (tests). */
export function createTelegramBot(
  config: TelegramBotConfig,
  deps: TelegramBotDeps,
  options: { botInfo?: UserFromGetMe } = {},
): TelegramBot {
  const bot = new Bot(config.telegramBotToken, {
    client: {
      apiRoot: config.telegramApiRoot,
      timeoutSeconds: CLIENT_TIMEOUT_SECONDS,
      ...proxyClientOptions(config.telegramProxy),
    },
    ...(options.botInfo ? { botInfo: options.botInfo } : {}),
  });
  bot.use(async (ctx: Context, next: NextFunction) => {
    const fresh = await deps.redis.set(deps.keys.tgUpdate(ctx.update.update_id), '1', 'EX', DAY_SECONDS, 'NX');
    if (fresh !== null) await next();
  });
  const lanes = registerCommands(bot, deps);
  bot.catch((error) => {
    // Never the message text: it may hold what a person typed.
    deps.logger.error({ err: error.error, updateId: error.ctx.update.update_id }, 'a Telegram update failed');
  });

  let failedAt = -Infinity;
  // Keyed by the token's digest: after the token changes, the pages link to the bot that serves it now.
  const infoKey = deps.keys.tgBotInfo(tokenDigest(config.telegramBotToken));
  const me = async (): Promise<UserFromGetMe | undefined> => {
    if (bot.isInited()) return bot.botInfo;
    const cached = await deps.redis.get(infoKey);
    if (cached !== null) {
      try {
        bot.botInfo = JSON.parse(cached) as UserFromGetMe;
        return bot.botInfo;
      } catch {
        // Unreadable: ask Telegram again.
      }
    }
    if (Date.now() - failedAt < USERNAME_RETRY_MS) return undefined;
    try {
      const info = await bot.api.getMe();
      if (!bot.isInited()) bot.botInfo = info;
      await deps.redis.set(infoKey, JSON.stringify(info), 'EX', DAY_SECONDS);
      return info;
    } catch (error) {
      failedAt = Date.now();
      deps.logger.warn({ err: error }, 'Telegram did not say who the bot is (getMe); pages show no bot link');
      return undefined;
    }
  };

  const secret = webhookSecret(config);
  return {
    bot,
    username: async () => (await me())?.username,
    ready: async () => {
      if ((await me()) === undefined) await bot.init();
    },
    setWebhook: async () => {
      if (config.telegramWebhookUrl === undefined) return;
      await bot.api.setWebhook(config.telegramWebhookUrl, { secret_token: secret, allowed_updates: ALLOWED_UPDATES });
    },
    webhookSecret: secret,
    idle: () => lanes.idle(),
  };
}
