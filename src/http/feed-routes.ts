/**
 * The feed routes of docs/design.md: public group and teacher feeds, secret personal feeds. GET and HEAD, with
 * ETag/If-None-Match, Last-Modified/If-Modified-Since, precompressed br and gzip, and the subscriber options
 * as query parameters (a personal feed URL without any serves the options its owner saved). Personal feed URLs carry a secret: they are never logged.
 * While Redis cannot be read or does not answer within a second, a personal feed served before is still found
 * by its token (`personal-tokens.ts`) and answered from memory, marked stale.
 * A public feed held in memory is usually answered before it gets here, alike, by `feed-fast-path.ts`.
 */

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.ts';
import { duplicateRedis } from '../lib/redis-connection.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import { FeedCache, type FeedCacheOptions, feedCacheFillBytes } from '../serving/feed-cache.ts';
import { FeedCounters } from '../serving/feed-counters.ts';
import type { ServedFeed } from '../serving/feed-forms.ts';
import { feedHeaders } from '../serving/feed-headers.ts';
import {
  type FeedFrom,
  FeedProvider,
  type FeedProviderDeps,
  type FeedProviderOptions,
} from '../serving/feed-provider.ts';
import { chooseEncoding, type FeedEncoding, isNotModified } from '../serving/negotiate.ts';
import {
  PersonalFeedOptions,
  type PersonalFeedOptionsDeps,
  type SavedQuery,
} from '../serving/personal-feed-options.ts';
import { PersonalTokens, type PersonalTokensContext, type TokenMatch } from '../serving/personal-tokens.ts';
import { type TokenUseDeps, TokenUseRecorder, type TokenUseSink } from '../serving/token-use.ts';
import type { ParsedSubscriberQuery } from '../serving/variant-query.ts';
import type { RedisKeys } from '../store/keys.ts';
import { InvalidSourceError } from '../timetable/errors.ts';
import { parseSource, type SourceKey, type SourceKind, sourceKey } from '../timetable/source.ts';
import { describeValue, ID_RANGE } from '../upstream/errors.ts';
import { ClientLimits, type ClientLimitsDeps } from './client-limits.ts';
import { HttpError } from './errors.ts';
import { parseSubscriberQuery } from './subscriber-query.ts';

/** Options of the feed routes (tests shorten the waits). */
export interface FeedRouteOptions extends FeedProviderOptions {
  /** How long a cached feed is trusted without an invalidation; default 60 s. */
  cacheTtlMs?: number;
}

/** Personal feed tokens as the subscription store issues them (base64url); anything else cannot be one. */
const TOKEN = /^[A-Za-z0-9_-]{16,128}$/;

type Query = Record<string, string | string[] | undefined>;

/** What the feed routes share with the timetable pages and the fast path in front of them. */
export interface FeedRoutes {
  /** Their feed provider, which the timetable pages share for first fetches. */
  provider: FeedProvider;
  /** Their served-feeds counter. */
  counters: FeedCounters;
}

/** The part of the metrics the feed routes count in and plug their caches' gauges into. */
export interface FeedMetrics {
  readonly feedsServed: ConstructorParameters<typeof FeedCounters>[0];
  setFeedCaches(
    read: () => Record<'feeds' | 'variants', { bytes: number; budgetBytes: number; entries: number }>,
  ): void;
}

/**
 * What the feed routes read, listen to and count with; their provider, limits, saved options, token lookups and
 * token use records get theirs from it too.
 */
export type FeedRouteDeps = FeedProviderDeps &
  ClientLimitsDeps &
  PersonalFeedOptionsDeps &
  PersonalTokensContext &
  TokenUseDeps & {
    readonly config: Pick<Config, 'feedCacheMb' | 'redisTarget'>;
    readonly feeds: FeedCacheOptions['feeds'];
    readonly redis: RedisClient;
    readonly redisOutage: FeedCacheOptions['outage'];
    readonly keys: Pick<RedisKeys, 'feedUpdates'>;
    readonly logger: FeedCacheOptions['logger'];
    readonly subscriptions: TokenUseSink;
    readonly metrics: FeedMetrics;
  };

/** Registers the feed routes; the feed cache's subscription is closed with the app. */
export async function registerFeedRoutes(
  app: FastifyInstance,
  ctx: FeedRouteDeps,
  options: FeedRouteOptions = {},
): Promise<FeedRoutes> {
  const budgetBytes = ctx.config.feedCacheMb * 1024 * 1024;
  const cache = new FeedCache({
    feeds: ctx.feeds,
    subscriber: duplicateRedis(ctx.redis, 'feed-updates', ctx.config.redisTarget),
    channel: ctx.keys.feedUpdates,
    logger: ctx.logger,
    outage: ctx.redisOutage,
    ttlMs: options.cacheTtlMs,
    maxBytes: feedCacheFillBytes(budgetBytes),
    now: ctx.now,
  });
  await cache.start();
  app.addHook('onClose', async () => cache.stop());
  const provider = new FeedProvider(ctx, cache, new ClientLimits(ctx), options);
  const saved = new PersonalFeedOptions(ctx, cache, options.cacheTtlMs);
  const tokenUse = new TokenUseRecorder(ctx, ctx.subscriptions);
  const tokens = new PersonalTokens(ctx, cache);
  const counters = new FeedCounters(ctx.metrics.feedsServed);
  plugCacheGauges(ctx, { cache, budgetBytes }, provider);

  await app.register(async (scope) => {
    scope.addHook('onResponse', async (request, reply) => {
      const kind = kindOf(request.routeOptions.url);
      if (kind !== undefined) counters.served(kind, reply.statusCode);
    });
    scope.get<{ Params: { groupId: string }; Querystring: Query }>(
      '/feeds/groups/:groupId.ics',
      async (request, reply) => {
        return serveFeed(provider, request, reply, publicSource('group', request.params.groupId));
      },
    );
    scope.get<{ Params: { employeeId: string }; Querystring: Query }>(
      '/feeds/employees/:employeeId.ics',
      async (request, reply) => {
        return serveFeed(provider, request, reply, publicSource('employee', request.params.employeeId));
      },
    );
    scope.get<{ Params: { token: string }; Querystring: Query }>(
      '/feeds/personal/:token.ics',
      async (request, reply) => {
        const { id, fromMemory } = await personalMatch(tokens, request.params.token);
        const source = sourceKey({ kind: 'personal', id });
        // Kept from revocation by sign-ups on other devices while a calendar polls it.
        tokenUse.record(id, request.params.token, request.headers['user-agent']);
        // The URL's own options win; without any, the ones its owner saved.
        const query = parseSubscriberQuery(request.query);
        const own = query.canonical === '' ? await saved.get(id) : undefined;
        // Redis did not answer the token: the feed comes from memory too, marked stale, without asking again.
        const from = fromMemory ? 'memory' : 'redis';
        return serveFeed(provider, request, reply, source, own?.query ?? query, own, from);
      },
    );
  });
  return { provider, counters };
}

/** Has the metrics read how full this app's feed and variant caches are at each scrape. */
function plugCacheGauges(
  ctx: { readonly metrics: FeedMetrics },
  feeds: { cache: FeedCache; budgetBytes: number },
  provider: FeedProvider,
): void {
  const { cache, budgetBytes } = feeds;
  const variants = provider.variantCache;
  ctx.metrics.setFeedCaches(() => ({
    feeds: { bytes: cache.cachedBytes, budgetBytes, entries: cache.keptCount },
    variants: { bytes: variants.cachedBytes, budgetBytes: variants.budgetBytes, entries: variants.size },
  }));
}

function kindOf(route: string | undefined): SourceKind | undefined {
  if (route?.startsWith('/feeds/groups/')) return 'group';
  if (route?.startsWith('/feeds/employees/')) return 'employee';
  if (route?.startsWith('/feeds/personal/')) return 'personal';
  return undefined;
}

/** `group:<id>` from a URL id, or a 400 naming the bad value (before anything reaches Redis or the upstream). */
function publicSource(kind: 'group' | 'employee', id: string): SourceKey {
  try {
    return sourceKey(parseSource(`${kind}:${id}`));
  } catch (error) {
    if (error instanceof InvalidSourceError)
      throw new HttpError('INVALID_ID', {
        en: `${kind} id must be ${ID_RANGE}, got ${describeValue(id)}`,
        ru: `id ${kind === 'group' ? 'группы' : 'преподавателя'} должен быть целым числом от 1 до ${Number.MAX_SAFE_INTEGER}, получено ${describeValue(id)}`,
      });
    throw error;
  }
}

/** The subscription of a personal feed token; unknown and malformed tokens alike are a 404 (a secret is not echoed). */
async function personalMatch(tokens: PersonalTokens, token: string): Promise<TokenMatch> {
  const match = TOKEN.test(token) ? await tokens.find(token) : undefined;
  if (match === undefined)
    throw new HttpError('FEED_NOT_FOUND', {
      en: 'no such personal feed: the link is wrong, or its subscription was deleted',
      ru: 'такой личной ленты нет: ссылка неверна, или её подписка удалена',
    });
  return match;
}

async function serveFeed(
  provider: FeedProvider,
  request: FastifyRequest<{ Querystring: Query }>,
  reply: FastifyReply,
  source: SourceKey,
  query: ParsedSubscriberQuery = parseSubscriberQuery(request.query),
  saved?: SavedQuery,
  from: FeedFrom = 'redis',
): Promise<FastifyReply> {
  const feed = await (saved === undefined
    ? provider.feedFor(source, query, request.ip, from)
    : provider.savedFeedFor(source, saved, request.ip, from));
  // Chosen before the headers: each coding has its own ETag, and a 304 carries the one a 200 would have.
  const encoding = chooseEncoding(request.headers['accept-encoding']);
  const conditions = {
    ifNoneMatch: request.headers['if-none-match'],
    ifModifiedSince: request.headers['if-modified-since'],
  };
  const notModified = isNotModified(conditions, feed.etag, feed.lastModified);
  // Identity and br are made from the stored gzip form the first time they are asked for (feed-forms.ts); made
  // before the headers are set, so that an error answered instead carries none of the feed's caching headers.
  const body = notModified ? undefined : await feed.forms.get(encoding);
  setFeedHeaders(reply, feed, encoding, source.startsWith('personal:'), provider.publicMaxAge);
  if (body === undefined) return reply.code(304).send();
  if (encoding !== 'identity') reply.header('Content-Encoding', encoding);
  return reply.send(body);
}

function setFeedHeaders(
  reply: FastifyReply,
  feed: ServedFeed,
  encoding: FeedEncoding,
  personal: boolean,
  publicMaxAge: number,
): void {
  const headers = feedHeaders(feed, encoding, personal, publicMaxAge);
  for (let index = 0; index < headers.length; index += 2) reply.header(headers[index] as string, headers[index + 1]);
}
