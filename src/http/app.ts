/**
 * The HTTP API (fastify): operations, feeds, teacher lookup, subscriptions and admin, one module per route
 * group. Every error answers JSON `{ "error": "…" }`. Feeds are hot and personal feed URLs hold a secret, so
 * requests are not logged one by one; other requests are logged at debug level by route pattern, never by URL.
 */
import Fastify, {
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  LogController,
} from 'fastify';
import type { Logger } from '../logger.ts';
import type { ServiceContext } from '../runtime/context.ts';
import { answerFirst, FeedFastPath } from '../serving/feed-fast-path.ts';
import { registerAdminRoutes } from './admin-routes.ts';
import { registerAssetRoutes } from './asset-routes.ts';
import { ClientLimits } from './client-limits.ts';
import { applyConnectionLimits } from './connection-limits.ts';
import { registerEmployeeRoutes } from './employee-routes.ts';
import { errorBody, HttpError, toHttpError } from './errors.ts';
import { type FeedRouteOptions, registerFeedRoutes } from './feed-routes.ts';
import { forwardingCheck, warnOnUntrustedForwarding } from './forwarding-warning.ts';
import { registerGoogleRoutes } from './google-routes.ts';
import { registerOperationsRoutes } from './operations-routes.ts';
import { registerPageRoutes } from './page-routes.ts';
import { registerPersonalRoutes } from './personal-routes.ts';
import { addSecurityHeaders, NOSNIFF } from './security-headers.ts';
import { MAX_PARAM_LENGTH, serverOptions } from './server-options.ts';
import { registerSubscriptionRoutes } from './subscription-routes.ts';
import { registerTimetablePageRoutes } from './timetable-page-routes.ts';

/** Options of {@link buildApp}. */
export interface AppOptions {
  logger: Logger;
  /** Tuning of the feed routes (tests shorten the on-demand wait). */
  feeds?: FeedRouteOptions;
  /** Whether cached public feeds are answered in front of fastify (feed-fast-path.ts); default true. */
  feedFastPath?: boolean;
}

/** Request bodies are small JSON documents; anything larger is refused before it is read. */
const BODY_LIMIT_BYTES = 64 * 1024;

/** Builds the app with every route registered; the caller listens, and closes it on shutdown. */
export async function buildApp(ctx: ServiceContext, options: AppOptions): Promise<FastifyInstance> {
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
  app.setNotFoundHandler(async (request) => {
    throw new HttpError(404, `no route ${request.method} ${request.url.split('?', 1)[0]}`);
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
    const path = new FeedFastPath(feeds.provider, feeds.counters, NOSNIFF, checkForwarding ?? (() => undefined));
    app.addHook('preClose', () => path.close());
    fastPath = path;
  }
  await registerEmployeeRoutes(app, ctx, limits);
  await registerSubscriptionRoutes(app, ctx, limits);
  await registerGoogleRoutes(app, ctx);
  await registerAdminRoutes(app, ctx);
  await registerAssetRoutes(app);
  await registerPageRoutes(app, ctx, limits);
  await registerPersonalRoutes(app, ctx);
  await registerTimetablePageRoutes(app, ctx, feeds.provider);
  return app;
}

/**
 * Fastify's own refusals of a URL, worded without echoing the path (a personal feed's path holds its secret).
 */
function frameworkError(error: FastifyError): HttpError | undefined {
  if (error.code === 'FST_ERR_BAD_URL')
    return new HttpError(400, 'malformed URL: every % must start a valid percent-encoded UTF-8 character');
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH')
    return new HttpError(414, `URL too long: an id or token in the path is at most ${MAX_PARAM_LENGTH} characters`);
  return undefined;
}

/**
 * Turns any error into `{ "error": message }`: ours answer as the error catalog says, fastify's client errors
 * (bad JSON, body too large) keep their status and words, and anything else is a 500, logged once, with a
 * generic message.
 */
async function handleError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const known = toHttpError(error) ?? frameworkError(error);
  if (known !== undefined) {
    reply.headers(known.headers);
    return reply.code(known.statusCode).type('application/json; charset=utf-8').send(errorBody(known));
  }
  const status = error.statusCode;
  if (status !== undefined && status >= 400 && status < 500) {
    return reply.code(status).type('application/json; charset=utf-8').send({ error: error.message });
  }
  // The route pattern, never the URL: personal feed URLs and OAuth callbacks carry secrets.
  request.log.error(
    { err: error, method: request.method, route: request.routeOptions.url ?? '(no route)' },
    'request failed',
  );
  return reply
    .code(status !== undefined && status >= 500 ? status : 500)
    .type('application/json; charset=utf-8')
    .send({ error: 'internal error; it has been logged' });
}
