/**
 * The `/start` payload a page's link to a bot leads to (`GET /telegram/start`, `GET /max/start`, with the same
 * query: `source`, `subgroup`, `exclude`), made now (store/telegram-chats.ts), so that the page need not know it
 * and the page's script can rewrite the link's options like the feed's. A personal timetable's link needs the
 * signed-in browser (its cookie) and gives a one-time payload bound to the subscription, never its feed token;
 * its options are the subscription's own.
 *
 * Anyone may ask for it, so it costs nothing that lasts: a public timetable's payload says everything itself
 * (nothing stored), and only a kind the readable form cannot name gets a stored payload, for an hour. A stored
 * payload is made only for a timetable fetched before (its page shows one; a made-up id answers 404 without
 * asking the university); a readable one for any id, since the bot's `/start` of it is a first request under the
 * first-request limits. The payloads are the same for both messengers: MAX takes up to 128 characters, and
 * Telegram's 64 of `A-Za-z0-9_-` fit.
 */
import type { FastifyRequest } from 'fastify';
import type { FeedStore } from '../store/feed-store.ts';
import type { SourceRegistry } from '../store/registry.ts';
import { notifyOptionsOf, publicPayload, type TelegramChats } from '../store/telegram-chats.ts';
import { InvalidSourceError } from '../timetable/errors.ts';
import { parseSource, sourceKey } from '../timetable/source.ts';
import { HttpError } from './errors.ts';
import { type PersonalSessionDeps, readPersonalSession } from './personal-session.ts';
import { readSubscriberOptions } from './subscriber-query.ts';

/** A link's query. */
export type StartQuery = Record<string, string | string[] | undefined>;

/** What making a payload reads. */
export type StartPayloadDeps = PersonalSessionDeps & {
  readonly notify: { readonly chats: Pick<TelegramChats, 'linkPayload' | 'oncePayload'> };
  readonly feeds: Pick<FeedStore, 'exists'>;
  readonly registry: Pick<SourceRegistry, 'isActive'>;
};

/** The payload of the link the request asks for; `messenger` names the bot in a refusal. */
export async function startPayload(
  ctx: StartPayloadDeps,
  request: FastifyRequest<{ Querystring: StartQuery }>,
  messenger: 'Telegram' | 'MAX',
): Promise<string> {
  const text = request.query.source;
  let source: string;
  try {
    source = sourceKey(parseSource(text));
  } catch (error) {
    if (!(error instanceof InvalidSourceError)) throw error;
    throw new HttpError('INVALID_SOURCE', {
      en: error.message,
      ru: 'источник должен быть вида group:<номер>, employee:<номер> или personal:<номер подписки>',
    });
  }
  if (source.startsWith('personal:')) {
    const session = await readPersonalSession(ctx, request);
    if (session === undefined || session.subscription.source !== source)
      throw new HttpError('SIGN_IN_REQUIRED', {
        en: 'sign in first: this browser holds no such personal timetable',
        ru: 'сначала войдите: в этом браузере нет такого личного расписания',
      });
    return ctx.notify.chats.oncePayload(session.subscription.id);
  }
  const { options, refused } = readSubscriberOptions(request.query);
  if (refused[0] !== undefined) throw refused[0];
  // A readable payload stores nothing and asks nobody (the bot's /start of it goes through the first-request
  // limits), so any group's link works, one nobody opened yet too. Only a stored one needs a timetable fetched
  // before, so that made-up ids leave no keys.
  const readable = publicPayload(source, notifyOptionsOf(options));
  if (readable === undefined && !(await ctx.feeds.exists(source)) && !(await ctx.registry.isActive(source)))
    throw new HttpError('TIMETABLE_NOT_LOADED', {
      en: `this timetable was never fetched: open its page first, then its ${messenger} link`,
      ru: `это расписание ещё не загружалось: сначала откройте его страницу, потом ссылку на ${messenger}`,
    });
  return readable ?? (await ctx.notify.chats.linkPayload(source, options));
}
