import type { Config } from '../config.ts';
import { FeedStore } from '../feeds/feed-store.ts';
import type { CalendarClientFactory } from '../google/calendar-client.ts';
import { createGoogleServices } from '../google/google-services.ts';
import { createQueues } from '../jobs/queues.ts';
import { connectRedis } from '../lib/redis-connection.ts';
import type { Logger } from '../logger.ts';
import { redisKeys } from '../sources/keys.ts';
import { SourceRegistry } from '../sources/registry.ts';
import { SnapshotStore } from '../sources/snapshot-store.ts';
import { TermCountStore } from '../sources/term-counts.ts';
import { SubscriptionStore } from '../subscriptions/subscription-store.ts';
import { redisUpstreamBudget, type UpstreamBudget } from '../upstream/budget.ts';
import { createUniversityClient, type UniversityClient } from '../upstream/client.ts';
import type { ServiceContext } from './context.ts';
import { createMetrics, type Metrics } from './metrics.ts';

/** What {@link openServiceContext} needs besides the configuration. */
export interface ContextOptions {
  config: Config;
  logger: Logger;
  redisUrl: string;
  /** Name of the process's role, for connection names. */
  role: string;
  /** Default: a client for `config.universityApiUrl` without retries of its own (the queue retries). */
  upstream?: UniversityClient;
  /** Default: the Google adapter (when `GOOGLE_CLIENT_ID`/`SECRET` are set). Tests pass an in-memory calendar. */
  googleFactory?: CalendarClientFactory;
  metrics?: Metrics;
  now?: () => number;
}

/** A context and how to close what it opened. */
export interface OpenContext {
  context: ServiceContext;
  close(): Promise<void>;
}

/**
 * Opens the shared pieces of a role: one Redis commands connection, the stores, the queues, the upstream
 * client, the Google services and the metrics. Workers and subscriptions open their own connections on top.
 */
export function openServiceContext(options: ContextOptions): OpenContext {
  const { config, logger } = options;
  // Fails fast during a Redis outage (a request answers 500 instead of hanging; a job fails and is retried);
  // BullMQ workers open their own blocking connections.
  const redis = connectRedis(options.redisUrl, { name: options.role, logger });
  const keys = redisKeys(config.redisPrefix);
  const budget = redisUpstreamBudget(redis, keys.rateLimit('upstream'), config.upstreamRateLimit);
  const upstream = options.upstream ?? createWorkerClient(config, logger, budget);
  const queues = createQueues(redis, keys);
  const context: ServiceContext = {
    config,
    logger,
    redis,
    keys,
    registry: new SourceRegistry(redis, keys),
    snapshots: new SnapshotStore(redis, keys),
    termCounts: new TermCountStore(redis, keys),
    feeds: new FeedStore(redis, keys),
    subscriptions: new SubscriptionStore(redis, keys, config.secretKey),
    queues,
    upstream,
    google: createGoogleServices({
      config,
      redis,
      keys,
      ...(options.googleFactory ? { factory: options.googleFactory } : {}),
    }),
    metrics: options.metrics ?? createMetrics(),
    now: options.now ?? Date.now,
  };
  return {
    context,
    close: async () => {
      await queues.close();
      if (!options.upstream) await upstream.close();
      await redis.quit().catch(() => redis.disconnect());
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
