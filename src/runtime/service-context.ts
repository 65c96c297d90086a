import type { CalDavClientFactory } from '../caldav/caldav-client.ts';
import { createCalDavServices } from '../caldav/caldav-services.ts';
import { calDavClientFactory } from '../caldav/dav-client.ts';
import type { Config } from '../config.ts';
import type { CalendarClientFactory } from '../google/calendar-client.ts';
import { createGoogleServices } from '../google/google-services.ts';
import { createQueues } from '../jobs/queues.ts';
import { closeRedis, connectRedis, describeRedisTarget } from '../lib/redis-connection.ts';
import { DISK_WAIT_MS, DiskWaiter } from '../lib/redis-durability.ts';
import { RedisOutageLog } from '../lib/redis-outage.ts';
import { type RedisTarget, redisTarget } from '../lib/redis-target.ts';
import type { Logger } from '../logger.ts';
import { createNotifyServices } from '../notify/notify-services.ts';
import { FeedStore } from '../store/feed-store.ts';
import { FreshnessStore } from '../store/freshness-store.ts';
import { GroupDirectory } from '../store/group-directory.ts';
import { redisKeys } from '../store/keys.ts';
import { KnownCredentials } from '../store/known-credentials.ts';
import { KnownEmployees } from '../store/known-employees.ts';
import { SourceRegistry } from '../store/registry.ts';
import { SnapshotStore } from '../store/snapshot-store.ts';
import { SourceRelations } from '../store/source-relations.ts';
import { SpreadClaims } from '../store/spread-claims.ts';
import { SubscriptionStore } from '../store/subscription-store.ts';
import { TeacherDirectory } from '../store/teacher-directory.ts';
import { TelegramChats } from '../store/telegram-chats.ts';
import { TermCountStore } from '../store/term-counts.ts';
import { WebhookStore } from '../store/webhook-store.ts';
import { boundedClient, connectionsFor, REQUEST_PATH_LIMITS } from '../upstream/bounded-client.ts';
import { redisUpstreamBudget, type UpstreamBudget } from '../upstream/budget.ts';
import { createUniversityClient, type UniversityClient } from '../upstream/client.ts';
import { channelAdapters } from './channels.ts';
import type { ServiceContext } from './context.ts';
import { createMetrics, type Metrics } from './metrics.ts';
import { pushKinds } from './push-kinds.ts';

/** What {@link openServiceContext} needs besides the configuration. */
export interface ContextOptions {
  config: Config;
  logger: Logger;
  redis: RedisTarget | string;
  /** Name of the process's role, for connection names. */
  role: string;
  /** Default: a client for `config.universityApiUrl` without retries of its own (the queue retries). */
  upstream?: UniversityClient;
  /** Default: the Google adapter (when `GOOGLE_CLIENT_ID`/`SECRET` are set). Tests pass an in-memory calendar. */
  googleFactory?: CalendarClientFactory;
  /** Default: the CalDAV adapter with `CALDAV_REQUEST_TIMEOUT` and `CALDAV_ALLOW_PRIVATE`. Tests pass an in-memory server. */
  caldavFactory?: CalDavClientFactory;
  metrics?: Metrics;
  /** Default: one logging to `logger` with a summary a minute. Tests pass one with a shorter interval. */
  redisOutage?: RedisOutageLog;
  now?: () => number;
  /** Default: `Date.now` (see `ServiceContext.wallClock`). */
  wallClock?: () => number;
}

/** A context and how to close what it opened. */
export interface OpenContext {
  context: ServiceContext;
  close(): Promise<void>;
}

/**
 * Opens the shared pieces of a role: one Redis commands connection, the stores, the queues, the upstream
 * client, the Google and CalDAV services and the metrics. Workers and subscriptions open their own connections on top.
 */
export function openServiceContext(options: ContextOptions): OpenContext {
  const { config, logger } = options;
  // Every connection of the process reports to this one log: an outage is logged once, not per connection.
  const outage =
    options.redisOutage ?? new RedisOutageLog(logger.child({ redis: describeRedisTarget(redisTarget(options.redis)) }));
  // Fails fast during a Redis outage (a request answers 500 instead of hanging; a job fails and is retried);
  // BullMQ workers open their own blocking connections.
  const redis = connectRedis(options.redis, { name: options.role, outage });
  const keys = redisKeys(config.redisPrefix);
  const budget = redisUpstreamBudget(redis, keys.rateLimit('upstream'), config.upstreamRateLimit);
  const upstream = options.upstream ?? createWorkerClient(config, logger, budget);
  const requestUpstream = boundedClient(
    options.upstream ?? createRequestClient(config, logger, budget),
    REQUEST_PATH_LIMITS,
  );
  const disk = new DiskWaiter({
    // Its WAITAOF blocks for up to DISK_WAIT_MS: the reply timeout leaves room for that.
    connect: () =>
      connectRedis(options.redis, {
        name: `${options.role}-durability`,
        outage,
        commandTimeoutMs: DISK_WAIT_MS + 1_000,
      }),
    markerKey: keys.durabilityMarker,
    logger,
  });
  const caldavTransport = options.caldavFactory
    ? undefined
    : calDavClientFactory({
        timeouts: { headersMs: config.caldavRequestTimeoutMs },
        requestTimeoutMs: config.caldavRequestTimeoutMs,
        maxResponseBytes: config.caldavMaxResponseMb * 1024 * 1024,
        allowPrivateHosts: config.caldavAllowPrivate,
      });
  const caldav = createCalDavServices({
    config,
    redis,
    keys,
    factory: options.caldavFactory ?? (caldavTransport as CalDavClientFactory),
    closeFactory: caldavTransport?.close,
  });
  const webhooks = new WebhookStore(redis, keys, config.secretKey);
  const chats = new TelegramChats(redis, keys);
  const google = createGoogleServices({
    config,
    redis,
    keys,
    ...(options.googleFactory ? { factory: options.googleFactory } : {}),
  });
  const snapshots = new SnapshotStore(redis, keys);
  const metrics = options.metrics ?? createMetrics();
  const kinds = pushKinds({ config, google, caldav, snapshots, metrics });
  const queues = createQueues(
    redis,
    keys,
    kinds.map((kind) => kind.kind),
  );
  const context: ServiceContext = {
    config,
    logger,
    redis,
    redisOutage: outage,
    disk,
    keys,
    registry: new SourceRegistry(redis, keys),
    snapshots,
    freshness: new FreshnessStore(redis, keys),
    termCounts: new TermCountStore(redis, keys),
    feeds: new FeedStore(redis, keys),
    subscriptions: new SubscriptionStore(redis, keys, config.secretKey),
    knownCredentials: new KnownCredentials(redis, keys, config.secretKey),
    directory: new GroupDirectory(redis, keys),
    knownEmployees: new KnownEmployees(redis, keys),
    teachers: new TeacherDirectory(redis, keys),
    queues,
    relations: new SourceRelations(redis, keys),
    spreadClaims: new SpreadClaims(redis, keys),
    upstream,
    requestUpstream,
    google,
    caldav,
    pushKinds: kinds,
    webhooks,
    notify: createNotifyServices(config, redis, keys, {
      chats,
      channels: channelAdapters({ config, redis, keys, logger, chats }),
      webhooks,
    }),
    metrics,
    now: options.now ?? Date.now,
    wallClock: options.wallClock ?? Date.now,
  };
  return {
    context,
    // Never waits long for Redis: a connection that does not answer QUIT at once is disconnected (closeRedis).
    close: async () => {
      outage.close();
      await queues.close();
      await Promise.all([
        disk.close(),
        caldav.close(),
        closeRedis(redis),
        ...(options.upstream ? [] : [upstream.close(), requestUpstream.close()]),
      ]);
    },
  };
}

/**
 * The upstream client of the service: one try per call (BullMQ retries failed refreshes with backoff), each
 * taking a token of the shared `UPSTREAM_RATE_LIMIT` budget, request-path calls included; timeouts from
 * `UPSTREAM_TIMEOUT`.
 */
function createWorkerClient(config: Config, logger: Logger, budget: UpstreamBudget): UniversityClient {
  return createUniversityClient({
    baseUrl: config.universityApiUrl ?? 'http://127.0.0.1:1',
    logger: logger.child({ component: 'upstream' }),
    authHeader: config.universityAuthHeader,
    authScheme: config.universityAuthScheme,
    timeouts: { headersMs: config.upstreamTimeoutMs, bodyMs: config.upstreamTimeoutMs },
    retry: { attempts: 1 },
    budget,
  });
}

/**
 * The upstream client of calls made inside requests: its own undici Agent (a slow search never takes a
 * connection a refresh needs) with one connection per call {@link boundedClient} lets run, one try. The
 * deadline of each call bounds it end to end; the Agent's timeouts are only a backstop at the same length.
 */
function createRequestClient(config: Config, logger: Logger, budget: UpstreamBudget): UniversityClient {
  const backstopMs = Math.min(REQUEST_PATH_LIMITS.deadlineMs, config.upstreamTimeoutMs);
  return createUniversityClient({
    baseUrl: config.universityApiUrl ?? 'http://127.0.0.1:1',
    logger: logger.child({ component: 'upstream-requests' }),
    authHeader: config.universityAuthHeader,
    authScheme: config.universityAuthScheme,
    timeouts: { connectMs: 2_000, headersMs: backstopMs, bodyMs: backstopMs },
    maxConnections: connectionsFor(REQUEST_PATH_LIMITS),
    retry: { attempts: 1 },
    budget,
    // A person is waiting: these calls may spend the reserve that refreshes leave in the budget.
    budgetPriority: 'request',
  });
}
