/**
 * The Telegram bot's two routes.
 *
 * `GET /telegram/start?source=…&subgroup=…&exclude=…` is the pages' «Уведомления в Telegram» link: it answers 303
 * to `https://t.me/<bot>?start=<payload>` with a payload made now (start-payload.ts says how). Each client address
 * may ask `TELEGRAM_LINKS_PER_CLIENT` times (429 beyond).
 *
 * `POST /telegram/webhook` receives updates in webhook mode (`TELEGRAM_WEBHOOK_URL`). Telegram sends the secret
 * token it was given in `X-Telegram-Bot-Api-Secret-Token`; anything else answers 401 before the body is looked
 * at. A handled update answers 200 even when its command failed (logged): Telegram would otherwise send it again,
 * and the update's id is already claimed, so a retry would be dropped anyway.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import type { Logger } from '../logger.ts';
import type { TelegramBot } from '../notify/telegram/bot.ts';
import { constantTimeEqual } from '../security/tokens.ts';
import type { FeedStore } from '../store/feed-store.ts';
import type { RedisKeys } from '../store/keys.ts';
import type { SourceRegistry } from '../store/registry.ts';
import type { TelegramChats } from '../store/telegram-chats.ts';
import { ClientLimits, type ClientLimitsDeps } from './client-limits.ts';
import { HttpError } from './errors.ts';
import type { PersonalSessionDeps } from './personal-session.ts';
import { startPayload } from './start-payload.ts';

/** The header Telegram sends the webhook's secret token in. */
const SECRET_HEADER = 'x-telegram-bot-api-secret-token';

type Query = Record<string, string | string[] | undefined>;

/** What the Telegram routes read. */
export type TelegramRouteDeps = PersonalSessionDeps &
  ClientLimitsDeps & {
    readonly config: Pick<Config, 'telegramWebhookUrl' | 'telegramLinksPerClient'>;
    readonly notify: { readonly chats: Pick<TelegramChats, 'linkPayload' | 'oncePayload'> };
    readonly feeds: Pick<FeedStore, 'exists'>;
    readonly registry: Pick<SourceRegistry, 'isActive'>;
    readonly keys: Pick<RedisKeys, 'rateLimit'>;
    readonly redis: RedisClient;
    readonly logger: Pick<Logger, 'error' | 'warn'>;
  };

/** Registers the routes; without a bot (`telegram` undefined) they answer 503 TELEGRAM_NOT_CONFIGURED. */
export async function registerTelegramRoutes(
  app: FastifyInstance,
  ctx: TelegramRouteDeps,
  telegram: TelegramBot | undefined,
): Promise<void> {
  const limits = new ClientLimits(ctx);
  app.get<{ Querystring: Query }>('/telegram/start', async (request, reply) => {
    await limits.admit('telegram-link', request.ip);
    return start(ctx, telegram, request, reply);
  });
  app.post('/telegram/webhook', async (request, reply) => {
    if (telegram === undefined || ctx.config.telegramWebhookUrl === undefined) throw notConfigured();
    const given = request.headers[SECRET_HEADER];
    if (typeof given !== 'string' || !constantTimeEqual(given, telegram.webhookSecret))
      throw new HttpError('TELEGRAM_WEBHOOK_UNAUTHORIZED', {
        en: 'this is not Telegram: the secret token header is missing or wrong',
        ru: 'это не Telegram: заголовка с секретом нет или он неверен',
      });
    const update = request.body as { update_id?: unknown } | undefined;
    if (typeof update !== 'object' || update === null || typeof update.update_id !== 'number')
      throw new HttpError('INVALID_BODY', { en: 'not a Telegram update', ru: 'это не обновление Telegram' });
    await telegram.ready();
    try {
      await telegram.bot.handleUpdate(update as Parameters<TelegramBot['bot']['handleUpdate']>[0]);
    } catch (error) {
      ctx.logger.error({ err: error, updateId: update.update_id }, 'a Telegram update failed');
    }
    return reply.code(200).send({});
  });
}

async function start(
  ctx: TelegramRouteDeps,
  telegram: TelegramBot | undefined,
  request: FastifyRequest<{ Querystring: Query }>,
  reply: FastifyReply,
): Promise<FastifyReply> {
  if (telegram === undefined) throw notConfigured();
  const payload = await startPayload(ctx, request, 'Telegram');
  const username = await telegram.username();
  if (username === undefined) throw notConfigured();
  return reply
    .code(303)
    .header('location', `https://t.me/${encodeURIComponent(username)}?start=${payload}`)
    .header('cache-control', 'no-store')
    .send();
}

function notConfigured(): HttpError {
  return new HttpError('TELEGRAM_NOT_CONFIGURED', {
    en: 'the Telegram bot is not configured on this service, or Telegram cannot be reached now',
    ru: 'Telegram-бот на этом сервисе не настроен или Telegram сейчас недоступен',
  });
}
