/**
 * The HTTP API (fastify): operations, feeds, teacher lookup, subscriptions and admin, one module per route
 * group. Every error answers JSON `{ "error": "…", "code": "…" }` (error-codes.ts lists the codes), except an
 * unknown page address under `/timetables/`, which a browser opens: that is the 404 page. Feeds are
 * hot and personal feed URLs hold a secret, so requests are not logged one by one; other requests are logged at
 * debug level by route pattern, never by URL.
 */
import Fastify, {
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  LogController,
} from 'fastify';
import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';
import type { MaxBot } from '../notify/max/bot.ts';
import type { TelegramBot } from '../notify/telegram/bot.ts';
import { answerFirst, FeedFastPath } from '../serving/feed-fast-path.ts';
import { notFoundPage } from '../web/not-found-page.ts';
import { type AdminRouteDeps, registerAdminRoutes } from './admin-routes.ts';
import { registerAssetRoutes } from './asset-routes.ts';
import { type CalDavRouteDeps, registerCaldavRoutes } from './caldav-routes.ts';
import { ClientLimits, type ClientLimitsDeps } from './client-limits.ts';
import { applyConnectionLimits, type ConnectionLimits } from './connection-limits.ts';
import { type EmailRouteDeps, registerEmailRoutes } from './email-routes.ts';
import { registerEmployeeRoutes } from './employee-routes.ts';
import { sendError } from './error-answer.ts';
import type { Words } from './error-codes.ts';
import { HttpError, routeNotFound, toHttpError } from './errors.ts';
import { type FeedRouteDeps, type FeedRouteOptions, registerFeedRoutes } from './feed-routes.ts';
import { forwardingCheck, warnOnUntrustedForwarding } from './forwarding-warning.ts';
import { type GoogleRouteDeps, registerGoogleRoutes } from './google-routes.ts';
import type { HomeRouteDeps } from './home-routes.ts';
import { type MaxRouteDeps, registerMaxRoutes } from './max-routes.ts';
import { type OperationsRouteDeps, registerOperationsRoutes } from './operations-routes.ts';
import { registerPageRoutes } from './page-routes.ts';
import { requestLang, sendPage } from './pages.ts';
import { type PersonalRouteDeps, registerPersonalRoutes } from './personal-routes.ts';
import { addSecurityHeaders, NOSNIFF } from './security-headers.ts';
import { MAX_PARAM_LENGTH, type ServerLimits, serverOptions } from './server-options.ts';
import { registerSubscriptionRoutes, type SubscriptionRouteDeps } from './subscription-routes.ts';
import type { TeacherSearchDeps } from './teacher-search.ts';
import { registerTelegramRoutes, type TelegramRouteDeps } from './telegram-routes.ts';
import { registerTimetablePageRoutes, type TimetablePageDeps } from './timetable-page-routes.ts';

/**
 * What the whole app reads and runs with: what each of its route groups declares, and the server's own
 * settings. The composition root hands over its service context, which has all of it.
 */
export type AppDeps = OperationsRouteDeps &
  FeedRouteDeps &
  ClientLimitsDeps &
  TeacherSearchDeps &
  SubscriptionRouteDeps &
  GoogleRouteDeps &
  CalDavRouteDeps &
  AdminRouteDeps &
  HomeRouteDeps &
  PersonalRouteDeps &
  TimetablePageDeps &
  TelegramRouteDeps &
  EmailRouteDeps &
  MaxRouteDeps & { readonly config: ServerLimits & ConnectionLimits & Pick<Config, 'trustProxy'> };

/** Options of {@link buildApp}. */
export interface AppOptions {
  logger: Logger;
  /** Tuning of the feed routes (tests shorten the on-demand wait). */
  feeds?: FeedRouteOptions;
  /** Whether cached public feeds are answered in front of fastify (feed-fast-path.ts); default true. */
  feedFastPath?: boolean;
  /** The Telegram bot of this process, when it is on: its routes and the pages' links. */
  telegram?: TelegramBot | undefined;
  /** The MAX bot of this process, when it is on: its routes and the pages' links (`username()` known). */
  max?: MaxBot | undefined;
}

/** Request bodies are small JSON documents; anything larger is refused before it is read. */
const BODY_LIMIT_BYTES = 64 * 1024;

/** Builds the app with every route registered; the caller listens, and closes it on shutdown. */
export async function buildApp(ctx: AppDeps, options: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    ...serverOptions(ctx.config),
    // Malformed percent-escapes and over-long ids, which fastify would answer in its own JSON shape.
    frameworkErrors: (error, request, reply) => void handleError(error, request, reply),
    loggerInstance: options.logger,
    // Fastify's own per-request lines are off (they would carry URLs); the onResponse hook below logs instead.
    logController: new LogController({ disableRequestLogging: true }),
    // Client addresses key the rate limits: X-Forwarded-For counts only from the proxies TRUST_PROXY names.
    trustProxy: ctx.config.trustProxy,
    bodyLimit: BODY_LIMIT_BYTES,
    // Feed requests log nothing per request, and a pino child with our redaction paths costs about a third of
    // the JavaScript time of serving a cached feed: they get the parent logger (their errors lose the reqId).
    childLoggerFactory: (logger, bindings, childOptions, rawRequest) =>
      rawRequest.url?.startsWith('/feeds/') ? logger : logger.child(bindings, childOptions),
  }) as unknown as FastifyInstance;
  // Set once the feed routes are registered; until then (and with it off) every request goes to fastify.
  let fastPath: FeedFastPath | undefined;
  answerFirst(
    app.server,
    (request, response) => fastPath?.handle(request, response) === true,
    (error) => options.logger.error({ err: error }, 'feed fast path failed; the feed route answers instead'),
  );
  applyConnectionLimits(app, ctx.config);
  addSecurityHeaders(app);
  const checkForwarding = forwardingCheck(ctx.config.trustProxy, options.logger);
  warnOnUntrustedForwarding(app, checkForwarding);
  app.setErrorHandler(handleError);
  app.setNotFoundHandler(async (request, reply) => {
    if (isPageAddress(request))
      return sendPage(reply, notFoundPage({ lang: requestLang(ctx, request, reply), url: request.url }), {
        status: 404,
      });
    throw routeNotFound(request);
  });
  // Without debug logging the hook is not installed at all: every hook costs on the hot feed path.
  if (options.logger.isLevelEnabled('debug')) {
    app.addHook('onResponse', async (request, reply) => {
      const route = request.routeOptions.url;
      if (route?.startsWith('/feeds/')) return;
      request.log.debug(
        {
          method: request.method,
          route: route ?? '(no route)',
          statusCode: reply.statusCode,
          ms: Math.round(reply.elapsedTime),
        },
        'request',
      );
    });
  }

  // One set for the JSON API and the pages: a sign-up on the page counts as one through the API does.
  const limits = new ClientLimits(ctx);
  await registerOperationsRoutes(app, ctx);
  const feeds = await registerFeedRoutes(app, ctx, options.feeds);
  if (options.feedFastPath !== false) {
    const forwarding = checkForwarding ?? (() => undefined);
    const path = new FeedFastPath(feeds.provider, feeds.counters, NOSNIFF, forwarding, feeds.provider.publicMaxAge);
    app.addHook('preClose', () => path.close());
    fastPath = path;
  }
  await registerEmployeeRoutes(app, ctx, limits);
  await registerSubscriptionRoutes(app, ctx, limits);
  await registerGoogleRoutes(app, ctx);
  await registerCaldavRoutes(app, ctx);
  await registerAdminRoutes(app, ctx);
  await registerAssetRoutes(app);
  await registerPageRoutes(app, ctx, limits);
  await registerPersonalRoutes(app, ctx);
  await registerTimetablePageRoutes(app, ctx, feeds.provider, { telegram: options.telegram, max: options.max });
  await registerTelegramRoutes(app, ctx, options.telegram);
  await registerEmailRoutes(app, ctx);
  await registerMaxRoutes(app, ctx, options.max);
  return app;
}

/**
 * Whether an unknown address is one of a page a browser opens (`GET /timetables/…`): it answers the 404 page in
 * the reader's language. The API's, the admin's and the feeds' addresses keep their JSON 404.
 */
function isPageAddress(request: FastifyRequest): boolean {
  if (request.method !== 'GET' && request.method !== 'HEAD') return false;
  const path = request.url.split('?', 1)[0] as string;
  return path === '/timetables' || path.startsWith('/timetables/');
}

/**
 * Fastify's own refusals (of a URL, a body, a Content-Type), as our errors. A URL is worded without echoing the
 * path (a personal feed's path holds its secret); the others keep fastify's English words, and any 4xx not
 * named here keeps its status under BAD_REQUEST.
 */
function frameworkError(error: FastifyError): HttpError | undefined {
  switch (error.code) {
    case 'FST_ERR_BAD_URL':
      return new HttpError('MALFORMED_URL', {
        en: 'malformed URL: every % must start a valid percent-encoded UTF-8 character',
        ru: 'неверный URL: каждый знак % должен начинать верную percent-кодировку символа UTF-8',
      });
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return new HttpError('URL_TOO_LONG', {
        en: `URL too long: an id or token in the path is at most ${MAX_PARAM_LENGTH} characters`,
        ru: `слишком длинный URL: id или токен в пути не длиннее ${MAX_PARAM_LENGTH} символов`,
      });
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new HttpError('BODY_TOO_LARGE', {
        en: error.message,
        ru: 'тело запроса больше, чем принимает этот адрес',
      });
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new HttpError('UNSUPPORTED_MEDIA_TYPE', {
        en: error.message,
        ru: 'этот адрес не принимает тело запроса с таким Content-Type',
      });
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new HttpError('INVALID_BODY', { en: error.message, ru: 'тело запроса — неверный или пустой JSON' });
  }
  const status = error.statusCode;
  if (status === undefined || status < 400 || status >= 500) return undefined;
  return new HttpError('BAD_REQUEST', { en: error.message, ru: `запрос отклонён: ${error.message}` }, {}, status);
}

/** The answer to an error nothing else names: a 500 (or fastify's own 5xx), worded without its detail. */
const INTERNAL: Words = { en: 'internal error; it has been logged', ru: 'внутренняя ошибка; она записана в журнал' };

/**
 * Turns any error into `{ "error", "code" }`: ours answer as the error catalog says, fastify's refusals of a
 * request as {@link frameworkError} says, and anything else is a 500, logged once, with a generic message.
 */
async function handleError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const known = toHttpError(error) ?? frameworkError(error);
  if (known !== undefined) return sendError(request, reply, known);
  // The route pattern, never the URL: personal feed URLs and OAuth callbacks carry secrets.
  request.log.error(
    { err: error, method: request.method, route: request.routeOptions.url ?? '(no route)' },
    'request failed',
  );
  const status = error.statusCode !== undefined && error.statusCode >= 500 ? error.statusCode : 500;
  return sendError(request, reply, new HttpError('INTERNAL_ERROR', INTERNAL, {}, status));
}
