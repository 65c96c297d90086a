/**
 * The MAX bot's two routes.
 *
 * `GET /max/start?source=…&subgroup=…&exclude=…` is the pages' «Уведомления в MAX» link: it answers 303 to
 * `https://max.ru/<bot>?start=<payload>`, the payload made as `/telegram/start` makes it (start-payload.ts; one
 * payload works in both messengers). Opening that link in MAX sends the bot `bot_started` with the payload. Each
 * client address may ask `TELEGRAM_LINKS_PER_CLIENT` times (its own count, 429 beyond).
 *
 * `POST /max/webhook` receives updates in webhook mode (`MAX_WEBHOOK_URL`). MAX sends the secret it was given in
 * `X-Max-Bot-Api-Secret`; anything else answers 401 before the body is looked at (compared in constant time).
 * An update is only queued in its dialog's lane before the 200 (MAX wants one within 30 s and retries otherwise);
 * its command is answered after, and one that failed there is logged only (the 200 is gone by then). One that
 * could not even be queued (Redis did not answer) answers `503 MAX_UPDATE_NOT_TAKEN`, so that MAX sends it again:
 * nothing of it was done, and a copy of one that was is dropped.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';
import type { MaxBot } from '../notify/max/bot.ts';
import { readMaxJson } from '../notify/max/updates.ts';
import { constantTimeEqual } from '../security/tokens.ts';
import { ClientLimits, type ClientLimitsDeps } from './client-limits.ts';
import { HttpError } from './errors.ts';
import { type StartPayloadDeps, type StartQuery, startPayload } from './start-payload.ts';

/** The header MAX sends the webhook's secret in. */
const SECRET_HEADER = 'x-max-bot-api-secret';

/** What the MAX routes read. */
export type MaxRouteDeps = StartPayloadDeps &
  ClientLimitsDeps & {
    readonly config: Pick<Config, 'maxWebhookUrl' | 'telegramLinksPerClient'>;
    readonly logger: Pick<Logger, 'error' | 'warn'>;
  };

/** Registers the routes; without a bot (`max` undefined) they answer 503 MAX_NOT_CONFIGURED. */
export async function registerMaxRoutes(
  app: FastifyInstance,
  ctx: MaxRouteDeps,
  max: MaxBot | undefined,
): Promise<void> {
  const limits = new ClientLimits(ctx);
  app.get<{ Querystring: StartQuery }>('/max/start', async (request, reply) => {
    await limits.admit('max-link', request.ip);
    return start(ctx, max, request, reply);
  });
  // MAX's ids are 64-bit: its updates are read with their ids as digits (readMaxJson), in a scope of their own.
  await app.register(async (scope) => {
    scope.removeContentTypeParser('application/json');
    scope.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
      try {
        done(null, readMaxJson(String(body)));
      } catch {
        done(null, undefined);
      }
    });
    registerWebhook(scope, ctx, max);
  });
}

/** `POST /max/webhook`. */
function registerWebhook(app: FastifyInstance, ctx: MaxRouteDeps, max: MaxBot | undefined): void {
  // Before the body is read.
  app.addHook('onRequest', async (request) => {
    if (max === undefined || ctx.config.maxWebhookUrl === undefined) throw notConfigured();
    const given = request.headers[SECRET_HEADER];
    if (typeof given !== 'string' || !constantTimeEqual(given, max.webhookSecret))
      throw new HttpError('MAX_WEBHOOK_UNAUTHORIZED', {
        en: 'this is not MAX: the X-Max-Bot-Api-Secret header is missing or wrong',
        ru: 'это не MAX: заголовка X-Max-Bot-Api-Secret нет или он неверен',
      });
  });
  app.post('/max/webhook', async (request, reply) => {
    if (max === undefined) throw notConfigured();
    const update = request.body as { update_type?: unknown } | undefined;
    if (typeof update !== 'object' || update === null || typeof update.update_type !== 'string')
      throw new HttpError('INVALID_BODY', { en: 'not a MAX update', ru: 'это не обновление MAX' });
    try {
      await max.handle(update);
    } catch (error) {
      ctx.logger.error(
        { err: error, updateType: update.update_type },
        'a MAX update could not be taken: MAX is asked to send it again',
      );
      throw new HttpError('MAX_UPDATE_NOT_TAKEN', {
        en: 'the update could not be taken now; send it again',
        ru: 'обновление сейчас не принято; отправьте его снова',
      });
    }
    return reply.code(200).send({});
  });
}

async function start(
  ctx: MaxRouteDeps,
  max: MaxBot | undefined,
  request: FastifyRequest<{ Querystring: StartQuery }>,
  reply: FastifyReply,
): Promise<FastifyReply> {
  if (max === undefined) throw notConfigured();
  const payload = await startPayload(ctx, request, 'MAX');
  const username = await max.username();
  if (username === undefined) throw notConfigured();
  return reply
    .code(303)
    .header('location', `https://max.ru/${encodeURIComponent(username)}?start=${payload}`)
    .header('cache-control', 'no-store')
    .send();
}

function notConfigured(): HttpError {
  return new HttpError('MAX_NOT_CONFIGURED', {
    en: 'the MAX bot is not configured on this service, or MAX cannot be reached now',
    ru: 'бот MAX на этом сервисе не настроен или MAX сейчас недоступен',
  });
}
