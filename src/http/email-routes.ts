/**
 * E-mail notifications' routes (the use cases are subscriptions/email-sign-up.ts):
 *
 * - `POST /email/subscribe` is the timetable page's form (form-encoded `source`, `email`, `digest`, `subgroup`,
 *   `exclude`, `lang`): «Проверьте почту» (200), or the form again with the error and what was typed;
 *   `POST /api/email-subscriptions` is the same in JSON, answering `202 {"status": "confirmation-sent"}`. Both
 *   answer the same whether the address was new, waiting or subscribed, so that they tell nobody whether an
 *   address is subscribed. A personal timetable needs this browser's personal session, as its Telegram link does.
 * - `GET /email/confirm?token=…` shows what the link subscribes to and one button; only its `POST` confirms, so a
 *   mail scanner that fetches every link confirms nothing.
 * - `GET /email/unsubscribe?token=…` shows one button; a `POST` there unsubscribes and, with the last timetable,
 *   deletes the address. That POST is also RFC 8058's one-click unsubscribe a mail provider sends on the person's
 *   behalf (body `List-Unsubscribe=One-Click`, form-encoded or multipart, no cookies, no Origin): the token in
 *   the URL is all it needs, so any body is taken and none is read.
 *
 * Without `SMTP_URL`, `MAIL_FROM` or `SECRET_KEY` signing up answers 503 `EMAIL_NOT_CONFIGURED` (a page saying so
 * for the form); unsubscribing always works, whatever the settings are now. An address is never logged.
 *
 * A page whose URL carries a token is sent without any referrer (`secret`), and every page that shows a typed
 * address or a timetable's subscription is `noindex`.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Config } from '../config.ts';
import { type EmailConfirmDeps, timetableName } from '../jobs/email-confirm.ts';
import { parseMailAddress } from '../lib/mail-address.ts';
import type { Lang } from '../lib/words.ts';
import { CONFIRM_PATH, emailOn, UNSUBSCRIBE_PATH } from '../notify/email/channel.ts';
import type { FeedStore } from '../store/feed-store.ts';
import { MAX_SOURCES_PER_MAILBOX, type Mailboxes } from '../store/mailboxes.ts';
import type { SourceRegistry } from '../store/registry.ts';
import { notifyOptionsOf } from '../store/telegram-chats.ts';
import {
  askEmailSubscription,
  confirmEmailSubscription,
  type EmailConfirmationDeps,
  type EmailSignUpDeps,
  unsubscribeEmail,
} from '../subscriptions/email-sign-up.ts';
import { InvalidSourceError } from '../timetable/errors.ts';
import type { NotifyOptions } from '../timetable/notify-change.ts';
import { timetablePagePath } from '../timetable/page-path.ts';
import { parseSource, type SourceKey, sourceKey } from '../timetable/source.ts';
import {
  addressProblemWords,
  type EmailProblem,
  emailConfirmedPage,
  emailConfirmPage,
  emailFormPage,
  emailProblemPage,
  emailSentPage,
  emailUnsubscribedPage,
  emailUnsubscribePage,
  signUpDetails,
  sourceProblemWords,
} from '../web/email-pages.ts';
import { isLang } from '../web/i18n.ts';
import { notFoundPage } from '../web/not-found-page.ts';
import { ClientLimits, type ClientLimitsDeps } from './client-limits.ts';
import { HttpError, toHttpError } from './errors.ts';
import { acceptForms, formField } from './form-body.ts';
import { requestLang, requireSameOrigin, sendPage } from './pages.ts';
import { type PersonalSessionDeps, readPersonalSession } from './personal-session.ts';
import { filledOptionFields, readSubscriberOptions } from './subscriber-query.ts';

/** What the e-mail routes read and write. */
export type EmailRouteDeps = PersonalSessionDeps &
  ClientLimitsDeps &
  EmailSignUpDeps &
  EmailConfirmationDeps &
  Pick<EmailConfirmDeps, 'snapshots'> & {
    readonly config: Pick<Config, 'smtpUrl' | 'mailFrom' | 'secretKey' | 'mailDigestTime' | 'publicUrl'>;
    readonly mailboxes: Pick<
      Mailboxes,
      'canStoreAddresses' | 'addressHash' | 'createPending' | 'pendingIdOf' | 'confirm' | 'pending'
    > &
      Pick<Mailboxes, 'resolveUnsubscribe' | 'unsubscribe'>;
    readonly feeds: Pick<FeedStore, 'exists'>;
    readonly registry: Pick<SourceRegistry, 'isActive' | 'activate'>;
  };

/** A sign-up as a request sends it, before it is checked. */
interface SignUpInput {
  source: unknown;
  email: string;
  options: NotifyOptions;
  digest: boolean;
}

/** The JSON body of `POST /api/email-subscriptions`. */
const signUpBody = z.strictObject(
  {
    source: z.string({ error: 'must be a string such as group:4242' }),
    email: z.string({ error: 'must be a string' }).max(320, 'must be at most 320 characters'),
    options: z
      .strictObject({
        subgroup: z
          .number({ error: 'must be a number' })
          .int('must be a whole number')
          .min(1, 'must be at least 1')
          .max(99, 'must be at most 99')
          .optional(),
        excludeKinds: z
          .array(z.string({ error: 'must be a string' }).max(64, 'must be at most 64 characters'))
          .max(20, 'must be at most 20')
          .optional(),
      })
      .optional(),
    digest: z.boolean({ error: 'must be true or false' }).optional(),
  },
  { error: (issue) => (issue.code === 'invalid_type' ? 'body must be a JSON object' : undefined) },
);

/** Registers the routes (their own scope reads form bodies, and the one-click POST any body at all). */
export async function registerEmailRoutes(app: FastifyInstance, ctx: EmailRouteDeps): Promise<void> {
  const limits = new ClientLimits(ctx);

  app.post('/api/email-subscriptions', async (request, reply) => {
    if (!emailOn(ctx.config)) throw notConfigured();
    const body = parseOr400Body(request.body);
    const { subgroup, excludeKinds } = body.options ?? {};
    const options = notifyOptionsOf({
      ...(subgroup === undefined ? {} : { subgroup }),
      ...(excludeKinds === undefined ? {} : { excludeKinds }),
    });
    await signUp(
      ctx,
      limits,
      request,
      { source: body.source, email: body.email, options, digest: body.digest ?? false },
      'api',
    );
    return reply.code(202).header('cache-control', 'no-store').send({ status: 'confirmation-sent' });
  });

  await app.register(async (scope) => {
    acceptForms(scope);
    scope.post('/email/subscribe', async (request, reply) => {
      requireSameOrigin(ctx, request);
      const chosen = formField(request.body, 'lang');
      const lang = isLang(chosen) ? chosen : requestLang(ctx, request, reply);
      if (!emailOn(ctx.config)) return problem(reply, request, lang, 'off', 503);
      const source = readSource(formField(request.body, 'source'));
      if (source === undefined) return sendPage(reply, notFoundPage({ lang, url: request.url }), { status: 404 });
      const email = formField(request.body, 'email') ?? '';
      const digest = formField(request.body, 'digest') === '1';
      const fields = { subgroup: formField(request.body, 'subgroup'), exclude: formField(request.body, 'exclude') };
      const again = async (status: number, error: string, headers: Record<string, string> = {}) => {
        const view = {
          lang,
          url: request.url,
          source,
          name: await timetableName(ctx, source),
          pageUrl: timetablePagePath(source),
          subgroup: fields.subgroup ?? '',
          exclude: fields.exclude ?? '',
          digestTime: ctx.config.mailDigestTime,
          values: { email, digest },
          error,
        };
        return sendPage(reply.headers(headers), emailFormPage(view), { status });
      };
      const { options, refused } = readSubscriberOptions(filledOptionFields(fields));
      if (refused[0] !== undefined) return again(400, refused[0].fieldWords[lang]);
      try {
        await signUp(ctx, limits, request, { source, email, options: notifyOptionsOf(options), digest }, 'form');
      } catch (error) {
        const answer = toHttpError(error);
        if (answer === undefined) throw error;
        return again(answer.statusCode, answer.words[lang], { ...answer.headers });
      }
      const typed = parseMailAddress(email);
      const address = 'address' in typed ? typed.address : email;
      return sendPage(reply, emailSentPage({ lang, url: request.url, address, pageUrl: timetablePagePath(source) }));
    });

    scope.get<{ Querystring: Record<string, unknown> }>(CONFIRM_PATH, async (request, reply) => {
      const lang = requestLang(ctx, request, reply);
      const token = tokenOf(request.query);
      if (token === undefined) return problem(reply, request, lang, 'broken', 400);
      const pendingId = ctx.mailboxes.pendingIdOf(token);
      const signUp = pendingId === undefined ? undefined : await ctx.mailboxes.pending(pendingId);
      if (signUp === undefined) return problem(reply, request, lang, 'expired', 410);
      const view = {
        lang,
        url: request.url,
        action: `${CONFIRM_PATH}?token=${encodeURIComponent(token)}`,
        name: await timetableName(ctx, signUp.source),
        details: signUpDetails(signUp.options, signUp.digest, ctx.config.mailDigestTime, lang),
      };
      // Its form posts back to this URL: without a referrer, a browser sends `Origin: null` (taken by the POST).
      return sendPage(reply, emailConfirmPage(view), { secret: true });
    });

    scope.post<{ Querystring: Record<string, unknown> }>(CONFIRM_PATH, async (request, reply) => {
      // The confirmation page is sent without a referrer (its URL holds the token), so a browser posts its button
      // with `Origin: null`. That is taken: the token alone confirms (no cookie counts here), and another site's
      // own origin is still refused.
      if (request.headers.origin !== 'null') requireSameOrigin(ctx, request);
      const lang = requestLang(ctx, request, reply);
      if (!emailOn(ctx.config)) return problem(reply, request, lang, 'off', 503);
      const token = tokenOf(request.query);
      if (token === undefined) return problem(reply, request, lang, 'broken', 400);
      const outcome = await confirmEmailSubscription(ctx, token);
      if (outcome.kind === 'expired') return problem(reply, request, lang, 'expired', 410);
      if (outcome.kind === 'full') return problem(reply, request, lang, 'full', 409);
      request.log.info({ source: outcome.source, outcome: outcome.kind }, 'e-mail subscription confirmed');
      const view = {
        lang,
        url: request.url,
        name: await timetableName(ctx, outcome.source),
        pageUrl: timetablePagePath(outcome.source),
        updated: outcome.kind === 'updated',
      };
      return sendPage(reply, emailConfirmedPage(view), { secret: true });
    });

    scope.get<{ Querystring: Record<string, unknown> }>(UNSUBSCRIBE_PATH, async (request, reply) => {
      const lang = requestLang(ctx, request, reply);
      const token = tokenOf(request.query);
      if (token === undefined) return problem(reply, request, lang, 'broken', 400);
      const found = await ctx.mailboxes.resolveUnsubscribe(token);
      if (found === undefined) return problem(reply, request, lang, 'gone', 200);
      const view = {
        lang,
        url: request.url,
        action: `${UNSUBSCRIBE_PATH}?token=${encodeURIComponent(token)}`,
        name: await timetableName(ctx, found.source),
      };
      return sendPage(reply, emailUnsubscribePage(view), { secret: true });
    });
  });

  // Its own scope: a mail provider's one-click POST may come as a form or as multipart, and its body is not read.
  await app.register(async (scope) => {
    scope.addContentTypeParser('*', { parseAs: 'string', bodyLimit: 4096 }, (_request, _body, done) => done(null));
    scope.post<{ Querystring: Record<string, unknown> }>(UNSUBSCRIBE_PATH, async (request, reply) => {
      const lang = requestLang(ctx, request, reply);
      const token = tokenOf(request.query);
      if (token === undefined) return problem(reply, request, lang, 'broken', 400);
      const source = await unsubscribeEmail(ctx, token);
      // Already done (a second click, a provider repeating its POST): the same outcome, said so.
      if (source === undefined) return problem(reply, request, lang, 'gone', 200);
      request.log.info({ source }, 'e-mail subscription ended by its unsubscribe link');
      const view = {
        lang,
        url: request.url,
        name: await timetableName(ctx, source),
        pageUrl: timetablePagePath(source),
      };
      return sendPage(reply, emailUnsubscribedPage(view), { secret: true });
    });
  });
}

/**
 * Checks a sign-up and asks for it: the source, the personal session a personal timetable needs, the address,
 * a timetable fetched before (a made-up id leaves no sign-up), the client's and the address's limits. Throws an
 * HttpError worded for the JSON API (`api`: naming the field) or for the form beside its field (`form`).
 */
async function signUp(
  ctx: EmailRouteDeps,
  limits: ClientLimits,
  request: FastifyRequest,
  input: SignUpInput,
  mode: 'api' | 'form',
): Promise<void> {
  const source = readSource(input.source);
  if (source === undefined) throw new HttpError('INVALID_BODY', sourceProblemWords(mode));
  if (source.startsWith('personal:')) {
    const session = await readPersonalSession(ctx, request);
    if (session === undefined || session.subscription.source !== source)
      throw new HttpError('SIGN_IN_REQUIRED', {
        en: 'sign in first: this browser holds no such personal timetable',
        ru: 'сначала войдите: в этом браузере нет такого личного расписания',
      });
  } else if (!(await ctx.feeds.exists(source)) && !(await ctx.registry.isActive(source)))
    throw new HttpError('TIMETABLE_NOT_LOADED', {
      en: 'this timetable was never fetched: open its page first',
      ru: 'это расписание ещё не загружалось: сначала откройте его страницу',
    });
  const typed = parseMailAddress(input.email);
  if ('problem' in typed) throw new HttpError('INVALID_BODY', addressProblemWords(typed.problem, mode));
  await limits.admit('email-sign-up', request.ip);
  await askEmailSubscription(ctx, { address: typed.address, source, options: input.options, digest: input.digest });
  request.log.info({ source }, 'e-mail sign-up asked for');
}

/** The JSON body, or a 400 naming each bad field. */
function parseOr400Body(body: unknown): z.output<typeof signUpBody> {
  const parsed = signUpBody.safeParse(body);
  if (parsed.success) return parsed.data;
  const line = parsed.error.issues
    .map((issue) => (issue.path.length === 0 ? issue.message : `${issue.path.join('.')}: ${issue.message}`))
    .join('; ');
  throw new HttpError('INVALID_BODY', { en: line, ru: `неверное тело запроса: ${line}` });
}

/** A source key from a field or body, or undefined when it is none. */
function readSource(value: unknown): SourceKey | undefined {
  try {
    return sourceKey(parseSource(value));
  } catch (error) {
    if (error instanceof InvalidSourceError) return undefined;
    throw error;
  }
}

/** `?token=` given once, of the shape of our tokens' (a MAC after an id); undefined otherwise. */
function tokenOf(query: Record<string, unknown>): string | undefined {
  const token = query.token;
  return typeof token === 'string' && /^[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}$/.test(token) ? token : undefined;
}

function problem(
  reply: FastifyReply,
  request: FastifyRequest,
  lang: Lang,
  kind: EmailProblem,
  status: number,
): FastifyReply {
  const document = emailProblemPage({ lang, url: request.url, problem: kind, maxSources: MAX_SOURCES_PER_MAILBOX });
  // Most come from a link with a token: none of them sends a referrer.
  return sendPage(reply, document, { status, secret: true });
}

function notConfigured(): HttpError {
  return new HttpError('EMAIL_NOT_CONFIGURED', {
    en: 'e-mail notifications are not configured on this service (SMTP_URL, MAIL_FROM and SECRET_KEY)',
    ru: 'уведомления на почту на этом сервисе не настроены (SMTP_URL, MAIL_FROM и SECRET_KEY)',
  });
}
