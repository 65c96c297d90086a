/**
 * Webhooks of integrators in the admin API (registered inside the admin scope, behind the admin token):
 * `POST /admin/webhooks` registers a URL for a source and answers its signing secret, the only time it is shown;
 * `GET /admin/webhooks/:id` shows its state and last delivery attempts; `DELETE` removes it.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Config } from '../config.ts';
import { isInternalHost } from '../lib/internal-address.ts';
import { newWebhookSecret } from '../notify/webhooks/sign.ts';
import { WEBHOOK_ID, type WebhookStore } from '../store/webhook-store.ts';
import { parseSource, sourceKey } from '../timetable/source.ts';
import { HttpError } from './errors.ts';
import type { IdParams } from './owner-auth.ts';
import { parseOr400 } from './parse.ts';
import { iso } from './views.ts';

const BODY_HINT = 'body must be JSON {"source": "group:4242", "url": "https://receiver.example/hook"}';

const required = (what: string) =>
  z
    .string({ error: (issue) => (issue.input === undefined ? `is required (${what})` : 'must be a string') })
    .min(1, { error: 'must not be empty', abort: true });

const webhookBody = z.strictObject(
  {
    source: required('e.g. "group:4242"'),
    url: required('e.g. "https://receiver.example/hook"').max(2048, 'must be at most 2048 characters'),
  },
  { error: (issue) => (issue.code === 'invalid_type' ? BODY_HINT : undefined) },
);

/** What the webhook routes read and write. */
export interface WebhookRouteDeps {
  readonly config: Pick<Config, 'webhookAllowPrivate'>;
  readonly webhooks: Pick<WebhookStore, 'create' | 'get' | 'log' | 'delete'>;
  readonly now: () => number;
}

/** Registers the admin routes of webhooks on the admin scope (prefix `/admin`, admin token checked). */
export function registerWebhookRoutes(admin: FastifyInstance, ctx: WebhookRouteDeps): void {
  admin.post('/webhooks', async (request, reply) => {
    const body = parseOr400(webhookBody, request.body, 'INVALID_BODY');
    const source = sourceKey(parseSource(body.source));
    const url = receiverUrl(body.url, ctx.config.webhookAllowPrivate);
    const secret = newWebhookSecret();
    const hook = await ctx.webhooks.create({ source, url, secret, now: ctx.now() });
    request.log.info({ webhook: hook.id, source }, 'webhook registered');
    reply.code(201).header('location', `/admin/webhooks/${hook.id}`).header('cache-control', 'no-store');
    return { id: hook.id, source, url, secret };
  });

  admin.get<IdParams>('/webhooks/:id', async (request, reply) => {
    const id = checkWebhookId(request.params.id);
    const [hook, deliveries] = await Promise.all([ctx.webhooks.get(id), ctx.webhooks.log(id)]);
    if (hook === undefined) throw webhookNotFound(id);
    reply.header('cache-control', 'no-store');
    return {
      id: hook.id,
      source: hook.source,
      url: hook.url,
      state: hook.state,
      ...(hook.reason === undefined ? {} : { reason: hook.reason }),
      createdAt: iso(hook.createdAt),
      ...(hook.disabledAt === undefined ? {} : { disabledAt: iso(hook.disabledAt) }),
      deliveries: deliveries.map((attempt) => ({ ...attempt, at: iso(attempt.at) })),
    };
  });

  admin.delete<IdParams>('/webhooks/:id', async (request, reply) => {
    const id = checkWebhookId(request.params.id);
    if (!(await ctx.webhooks.delete(id))) throw webhookNotFound(id);
    request.log.info({ webhook: id }, 'webhook deleted');
    return reply.code(204).send();
  });
}

/** The receiver's URL, normalised; a 400 unless it is http(s), carries no login and (unless allowed) is public. */
function receiverUrl(text: string, allowPrivate: boolean): string {
  const refuse = (en: string, ru: string) => new HttpError('WEBHOOK_URL_REFUSED', { en, ru });
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw refuse('url: not a URL', 'url: это не адрес');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw refuse('url: must be an http:// or https:// URL', 'url: нужен адрес http:// или https://');
  if (url.username !== '' || url.password !== '')
    throw refuse('url: must not carry a login', 'url: адрес не должен содержать логин');
  if (!allowPrivate && isInternalHost(url))
    throw refuse(
      'url: a private or loopback address (set WEBHOOK_ALLOW_PRIVATE=true to allow one)',
      'url: частный или локальный адрес (разрешается с WEBHOOK_ALLOW_PRIVATE=true)',
    );
  return url.href;
}

/** `id` if it looks like a webhook id, else a 400. */
function checkWebhookId(id: string): string {
  if (!WEBHOOK_ID.test(id))
    throw new HttpError('INVALID_ID', {
      en: 'malformed webhook id (22 characters: letters, digits, _ and -)',
      ru: 'неверный id вебхука (22 символа: латинские буквы, цифры, _ и -)',
    });
  return id;
}

function webhookNotFound(id: string): HttpError {
  return new HttpError('WEBHOOK_NOT_FOUND', { en: `no webhook ${id}`, ru: `нет вебхука ${id}` });
}
