/**
 * Google push for users: `GET /google/connect?source=…` (with the feed options the calendar is to follow,
 * `&subgroup=2&exclude=…&alarm=15&title=…` as in a feed URL) sends the browser to Google's consent page (with
 * options, through a page that shows them and links on to the consent), `GET /google/callback`
 * turns the consent into a push target and hands over its manage token (to an API client in JSON, once; to a
 * browser in a cookie, with a redirect to its manage page), and the shared routes of push-target-routes.ts serve
 * `/google/targets/:id` to the holder of that token (or the admin). The callback's URL carries a one-time code
 * and the answer a secret: neither reaches a log line, and no answer is cached. A personal timetable is connected by the holder of its feed token: `token=` in the
 * URL, or the browser signed in to it (its session cookie).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { GoogleNotConfiguredError } from '../google/errors.ts';
import { createConsent } from '../google/oauth-state.ts';
import { requireFetched } from '../jobs/verify-source.ts';
import { requireGooglePush } from '../subscriptions/google-connect.ts';
import { completeConsent } from '../subscriptions/google-consent.ts';
import { sourceName } from '../subscriptions/push-connect.ts';
import { timetablePagePath } from '../timetable/page-path.ts';
import { parseSource, type SourceKey, sourceKey, sourceOf } from '../timetable/source.ts';
import { googleConnectPage } from '../web/google-connect-page.ts';
import { googleOffPage } from '../web/google-manage-page.ts';
import { pushOptionsRefusedPage } from '../web/push-manage-page.ts';
import { pushOptionsLine } from '../web/push-options-line.ts';
import { ClientLimits, type ClientLimitsDeps } from './client-limits.ts';
import {
  clearConsentCookie,
  consentCookieName,
  isPublicHost,
  publicHostRedirect,
  readCookie,
  setConsentCookie,
} from './consent-cookie.ts';
import { HttpError } from './errors.ts';
import { consentProblem, type GoogleKindDeps, googleRouteKind, sendProblem } from './google-manage-routes.ts';
import { subscriptionNotFound } from './owner-auth.ts';
import { type PageDeps, requestLang, sendPage } from './pages.ts';
import { parseOr400 } from './parse.ts';
import { type PersonalSessionDeps, readPersonalSession } from './personal-session.ts';
import {
  type ChosenPushOptions,
  connectOptions,
  type PushOptionsFormDeps,
  readPushOptions,
  typedQuery,
} from './push-options-form.ts';
import { registerPushTargetRoutes, sendProblemPage, setManageCookie, wantsPage } from './push-target-routes.ts';

const NO_STORE = 'no-store';

/** Query strings arrive as text (an array when repeated: refused as "must be given once"). */
const text = z.string({ error: 'must be given once, as text' });
const connectQuery = z.object({
  source: z.string({
    error: (issue) =>
      issue.input === undefined ? 'is required (e.g. ?source=group:4242)' : 'must be given once, as text',
  }),
  token: text.optional(),
});
const callbackQuery = z.object({
  state: z.string({
    error: (issue) =>
      issue.input === undefined ? 'is required: start at /google/connect' : 'must be given once, as text',
  }),
  code: text.optional(),
  error: text.optional(),
});

/** What the user-facing Google routes read, limit, and connect and disconnect with. */
export type GoogleRouteDeps = ClientLimitsDeps &
  PersonalSessionDeps &
  GoogleKindDeps &
  Parameters<typeof requireGooglePush>[0] &
  Parameters<typeof requireFetched>[0] &
  Parameters<typeof createConsent>[0] &
  Parameters<typeof completeConsent>[0] &
  PushOptionsFormDeps;

/** Registers the user-facing Google routes on `app`; errors are thrown for the app's handler. */
export async function registerGoogleRoutes(app: FastifyInstance, ctx: GoogleRouteDeps): Promise<void> {
  const limits = new ClientLimits(ctx);
  const kind = googleRouteKind(ctx);
  let hostRewriteNoted = false;
  app.get('/google/connect', async (request, reply) => {
    try {
      requireGooglePush(ctx);
    } catch (error) {
      // A person who followed a link here gets what to do instead; an API client, the catalog's code.
      if (error instanceof GoogleNotConfiguredError && wantsPage(request)) return sendGoogleOff(ctx, request, reply);
      throw error;
    }
    // The consent cookie must be set on the host Google sends the browser back to.
    if (!isPublicHost(ctx.config.publicUrl, request.host)) {
      const location = publicHostRedirect(ctx.config.publicUrl, request.url);
      if (location !== undefined)
        return reply.code(302).header('location', location).header('cache-control', NO_STORE).send();
      // Most likely a proxy that rewrites Host (nginx's default): the browser is on PUBLIC_URL's host and the
      // cookie is fine. Said once per process, since every connect would say it again.
      if (!hostRewriteNoted) {
        hostRewriteNoted = true;
        request.log.warn(
          { publicUrl: ctx.config.publicUrl, host: request.host },
          "connects arrive with another Host than PUBLIC_URL's even after a redirect to it: probably a proxy rewriting Host; if Google consents fail with 'started in another browser', have the proxy pass Host on (nginx: proxy_set_header Host $host) or correct PUBLIC_URL",
        );
      }
    }
    // Each connect stores a pending consent (and may check a feed token): limited per client and in total.
    await limits.admit('google-connect', request.ip);
    const parsed = parseOr400(connectQuery, request.query ?? {}, 'INVALID_QUERY');
    const source = await authorisedSource(ctx, request, parsed);
    // Before the consent exists: no pending state, and no trip to Google, for an id the university never answered.
    await requireFetched(ctx, source);
    // Options that do not fit the timetable are refused before Google is asked; a browser gets a page naming them.
    const chosen = await readPushOptions(ctx, source, request.query);
    const [refused] = chosen.refused;
    if (refused !== undefined) {
      if (!wantsPage(request)) throw refused;
      return sendOptionsRefused(ctx, request, reply, source, chosen);
    }
    // A new calendar follows the options (`{}` when none was chosen), its reminders ours; one the consent
    // reconnects takes the options given and keeps its own when none is.
    const { url, state, browserNonce } = await createConsent(ctx, source, connectOptions(chosen));
    setConsentCookie(reply, state, browserNonce, ctx.config.publicUrl);
    // Google's consent page does not show the options, and a link may carry any title: a browser sees them first,
    // on a page whose button goes on to this consent (a link, not a form: the pages' CSP keeps forms on the site).
    // Nobody else can skip it: the consent is this browser's, by the cookie just set.
    if (wantsPage(request) && Object.keys(chosen.typed).length > 0)
      return sendConfirmation(ctx, request, reply, source, chosen, url);
    return reply.code(302).header('location', url).header('cache-control', NO_STORE).send();
  });

  app.get('/google/callback', async (request, reply) => {
    const query = parseOr400(callbackQuery, request.query ?? {}, 'INVALID_QUERY');
    // The cookie is spent whatever happens next, like the state it belongs to.
    clearConsentCookie(reply, query.state, ctx.config.publicUrl);
    reply.header('cache-control', NO_STORE).header('referrer-policy', 'no-referrer');
    const browserNonce = readCookie(request.headers.cookie, consentCookieName(query.state));
    const completed = await completeConsent(ctx, { ...query, browserNonce }, request.log).catch((error: unknown) => {
      const problem = wantsPage(request) ? consentProblem(error) : undefined;
      if (problem === undefined) throw error;
      return problem;
    });
    if ('problem' in completed)
      return sendProblem(ctx, request, reply, completed.problem, completed.status, completed.detail);
    const { source, connected } = completed;
    if (prefersJson(request.headers.accept)) {
      const { id, calendarId, calendarName, manageToken, reused } = connected;
      return reply
        .type('application/json; charset=utf-8')
        .send({ id, calendarId, calendarName, source, manageToken, reused });
    }
    // A browser keeps the token in a cookie of the target's pages and goes to its manage page.
    setManageCookie(ctx, kind, reply, connected.id, connected.manageToken);
    return reply.code(303).header('location', `${kind.base}/${connected.id}`).send();
  });

  await registerPushTargetRoutes(app, ctx, kind);
}

/**
 * The source of a connect request; a personal one only for the holder of its feed token (`token=`, or the
 * session cookie of the browser signed in to it).
 */
async function authorisedSource(
  ctx: PersonalSessionDeps,
  request: FastifyRequest,
  parsed: z.infer<typeof connectQuery>,
): Promise<SourceKey> {
  const source = sourceKey(parseSource(parsed.source));
  if (!source.startsWith('personal:')) return source;
  const id = source.slice('personal:'.length);
  if (parsed.token === undefined) {
    if ((await readPersonalSession(ctx, request))?.subscription.id === id) return source;
    throw new HttpError('OWNER_UNAUTHORIZED', {
      en: 'a personal timetable needs token=<the secret token of its feed URL>',
      ru: 'для личного расписания нужен token=<секретный токен из ссылки на его ленту>',
    });
  }
  const owner = await ctx.subscriptions.verifyToken(id, parsed.token);
  if ((await ctx.subscriptions.get(id)) === undefined) throw subscriptionNotFound(id);
  if (!owner)
    throw new HttpError('OWNER_UNAUTHORIZED', {
      en: 'wrong feed token for this subscription',
      ru: 'неверный токен ленты для этой подписки',
    });
  return source;
}

/**
 * The page for options that do not fit the timetable: each refused field with why, and the way back to the
 * timetable's page with the options as typed, at its options form.
 */
function sendOptionsRefused(
  ctx: PageDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  source: SourceKey,
  chosen: ChosenPushOptions,
): FastifyReply {
  const backUrl = optionsPageUrl(source, chosen);
  return sendProblemPage(
    ctx,
    request,
    reply,
    (view) =>
      pushOptionsRefusedPage({
        ...view,
        refused: chosen.refused.map((error) => ({ field: error.field, why: error.fieldWords[view.lang] })),
        backUrl,
      }),
    400,
  );
}

/**
 * The confirmation before Google's consent: what the calendar will get, the link on to the consent started for
 * it (`consentUrl`), and the way to change the options.
 */
async function sendConfirmation(
  ctx: GoogleRouteDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  source: SourceKey,
  chosen: ChosenPushOptions,
  consentUrl: string,
): Promise<FastifyReply> {
  const lang = requestLang(ctx, request, reply);
  const view = {
    lang,
    url: request.url,
    name: await sourceName(ctx, source),
    optionsLine: pushOptionsLine(chosen.options, sourceOf(source).kind, lang),
    consentUrl,
    changeUrl: optionsPageUrl(source, chosen),
  };
  // No referrer: the page's URL may carry a feed token (`token=`), and its button leaves for Google.
  return sendPage(reply, googleConnectPage(view), { secret: true });
}

/**
 * The page of a server without Google push (503): the way to subscribe by link instead, on the timetable's page
 * the link named (with the options it carried) at its «Добавить в календарь».
 */
async function sendGoogleOff(
  ctx: GoogleRouteDeps,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const query = (request.query ?? {}) as Record<string, unknown>;
  let subscribeUrl: string | undefined;
  try {
    const source = typeof query.source === 'string' ? sourceKey(parseSource(query.source)) : undefined;
    if (source !== undefined) {
      const typed = typedQuery((await readPushOptions(ctx, source, query)).typed);
      subscribeUrl = `${timetablePagePath(source)}${typed === '' ? '' : `?${typed.slice(1)}`}#calendar-action`;
    }
  } catch {
    // A link naming no timetable: the page leads home instead.
  }
  return sendProblemPage(ctx, request, reply, (view) => googleOffPage({ ...view, subscribeUrl }), 503);
}

/** The timetable's page with the options as typed, at its options form. */
function optionsPageUrl(source: SourceKey, chosen: ChosenPushOptions): string {
  const typed = typedQuery(chosen.typed);
  return `${timetablePagePath(source)}${typed === '' ? '' : `?${typed.slice(1)}`}#options`;
}

/** True unless the client is a browser (its Accept names text/html): API clients and curl get JSON. */
function prefersJson(accept: string | undefined): boolean {
  return !/\btext\/html\b/i.test(accept ?? '');
}
