/**
 * Operator endpoints: liveness (`/healthz`, no I/O), readiness (`/readyz`: Redis answers and a worker is alive)
 * and Prometheus metrics (`/metrics`), whose gauges read queue depths and stale sources at scrape time (an api's
 * feed routes plug in the gauges of its feed caches). Each scrape costs Redis reads and a walk of every metric,
 * so `/metrics` is for a scraper inside the network: the shipped proxy does not pass it, and with
 * `METRICS_TOKEN` set it answers only a request bearing that token.
 *
 * While Redis does not answer, `/readyz` says `degraded` with a 200: every API process is in the same state,
 * and each still serves the feeds it holds in memory, so a load balancer must keep sending them requests
 * (a 503 would take them all out of rotation and turn a partial outage into a whole one).
 */
import type { FastifyInstance, onRequestHookHandler } from 'fastify';
import type { Registry } from 'prom-client';
import type { Config } from '../config.ts';
import { liveWorkers, WORKER_HEARTBEAT_MAX_AGE_MS } from '../jobs/heartbeats.ts';
import type { Queues } from '../jobs/queues.ts';
import { withDeadline } from '../lib/deadline.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import type { Logger } from '../logger.ts';
import type { ChannelName } from '../notify/channel.ts';
import { channelStatuses } from '../notify/channel-state.ts';
import type { NotifyServices } from '../notify/notify-services.ts';
import { constantTimeEqual } from '../security/tokens.ts';
import type { FreshnessStore } from '../store/freshness-store.ts';
import type { SourceRegistry } from '../store/registry.ts';
import { presentedToken } from './admin-auth.ts';
import { sendError } from './error-answer.ts';
import { HttpError, MetricsTokenError, toHttpError } from './errors.ts';

/** How long a readiness check or a gauge waits for Redis. */
const CHECK_TIMEOUT_MS = 1_000;
const JOB_STATES = ['waiting', 'active', 'delayed', 'failed', 'prioritized'] as const;

/** The part of the metrics these routes expose and plug their gauges' readers into. */
export interface OperationsMetrics {
  readonly registry: Pick<Registry, 'metrics' | 'contentType'>;
  setQueueDepths(read: () => Promise<Record<string, Record<string, number>>>): void;
  setStaleSources(read: () => Promise<number>): void;
  setParkedSources(read: () => Promise<number>): void;
  setChannelStates(read: () => Promise<Record<string, 0 | 1>>): void;
}

/** What the operator endpoints check and read. */
export type OperationsRouteDeps = Parameters<typeof liveWorkers>[0] & {
  readonly config: Pick<Config, 'metricsToken'>;
  readonly redis: RedisClient;
  readonly registry: Pick<SourceRegistry, 'staleCount'>;
  readonly freshness: Pick<FreshnessStore, 'parkedCount'>;
  readonly queues: Pick<Queues, 'refresh' | 'pushQueues' | 'schedule' | 'notify' | 'webhook'> &
    Pick<Queues, ChannelName>;
  readonly notify: Pick<NotifyServices, 'channels' | 'states'>;
  readonly metrics: OperationsMetrics;
  readonly logger: Pick<Logger, 'debug'>;
};

/** Registers `/healthz`, `/readyz` and `/metrics`, and plugs the gauges' readers into the metrics. */
export async function registerOperationsRoutes(app: FastifyInstance, ctx: OperationsRouteDeps): Promise<void> {
  plugGauges(ctx);

  app.get('/healthz', async () => ({ status: 'ok' }));

  app.get('/readyz', async (request, reply) => {
    const [redis, workers] = await Promise.all([checkRedis(ctx), checkWorkers(ctx)]);
    const checks = { redis: redis.state, workers: workers.state };
    // Without Redis the workers cannot be counted either: Redis is the one problem to name.
    if (redis.problem !== undefined) return { status: 'degraded', checks, problems: [redis.problem] };
    const problems = [workers.problem].filter((problem) => problem !== undefined);
    if (problems.length === 0) return { status: 'ready', checks };
    // The problems found are named in English in both languages: they are for operators.
    const found = problems.join('; ');
    const words = { en: `not ready: ${found}`, ru: `не готов: ${found}` };
    return sendError(request, reply, new HttpError('NOT_READY', words), { checks });
  });

  const token = ctx.config.metricsToken;
  app.get('/metrics', token === undefined ? {} : { onRequest: metricsTokenCheck(token) }, async (_request, reply) => {
    const text = await ctx.metrics.registry.metrics();
    return reply.type(ctx.metrics.registry.contentType).send(text);
  });
}

/** Lets a request through only with `Authorization: Bearer <token>` (compared in constant time); else a 401. */
function metricsTokenCheck(token: string): onRequestHookHandler {
  return async function checkMetricsToken(request, reply) {
    const presented = presentedToken(request.headers.authorization, false);
    if (presented !== undefined && constantTimeEqual(presented, token)) return;
    // Answered here, not thrown: a worker's operations app has no error handler of ours (the catalog lists it).
    const refused = new MetricsTokenError(presented !== undefined);
    return sendError(request, reply, toHttpError(refused) as HttpError); // The catalog lists it.
  };
}

interface Check<T> {
  state: T;
  problem?: string;
}

async function checkRedis(ctx: Pick<OperationsRouteDeps, 'redis'>): Promise<Check<string>> {
  try {
    await withDeadline(ctx.redis.ping(), CHECK_TIMEOUT_MS);
    return { state: 'ok' };
  } catch (error) {
    return { state: 'unreachable', problem: `Redis does not answer (${(error as Error).message})` };
  }
}

async function checkWorkers(ctx: OperationsRouteDeps): Promise<Check<number | string>> {
  try {
    const alive = await withDeadline(liveWorkers(ctx), CHECK_TIMEOUT_MS);
    if (alive > 0) return { state: alive };
    return { state: 0, problem: `no worker sent a heartbeat in the last ${WORKER_HEARTBEAT_MAX_AGE_MS / 1000} s` };
  } catch (error) {
    return { state: 'unknown', problem: `worker heartbeats cannot be read (${(error as Error).message})` };
  }
}

/** Gauges read Redis at scrape time, bounded in time so that a Redis outage does not hang `/metrics`. */
function plugGauges(ctx: OperationsRouteDeps): void {
  let lastStale = 0;
  ctx.metrics.setStaleSources(async () => {
    try {
      lastStale = await withDeadline(ctx.registry.staleCount(), CHECK_TIMEOUT_MS);
    } catch (error) {
      ctx.logger.debug({ err: error }, 'stale sources gauge kept its last value');
    }
    return lastStale;
  });
  let lastParked = 0;
  ctx.metrics.setParkedSources(async () => {
    try {
      lastParked = await withDeadline(ctx.freshness.parkedCount(), CHECK_TIMEOUT_MS);
    } catch (error) {
      ctx.logger.debug({ err: error }, 'parked sources gauge kept its last value');
    }
    return lastParked;
  });
  let lastChannels: Record<string, 0 | 1> = {};
  ctx.metrics.setChannelStates(async () => {
    try {
      const on = ctx.notify.channels.filter((channel) => channel.on);
      const statuses = await withDeadline(channelStatuses(on, ctx.notify.states), CHECK_TIMEOUT_MS);
      lastChannels = Object.fromEntries(statuses.map((status) => [status.name, status.state === 'on' ? 1 : 0]));
    } catch (error) {
      ctx.logger.debug({ err: error }, 'channel state gauge kept its last values');
    }
    return lastChannels;
  });
  ctx.metrics.setQueueDepths(async () => {
    const queues: Record<string, Pick<Queues['refresh'], 'getJobCounts'>> = {
      refresh: ctx.queues.refresh,
      // One per calendar kind, by queue name (`push`, `caldav-push`).
      ...Object.fromEntries([...ctx.queues.pushQueues.values()].map((queue) => [queue.name, queue])),
      schedule: ctx.queues.schedule,
      notify: ctx.queues.notify,
      telegram: ctx.queues.telegram,
      // The other channels' queues when they are on (Telegram's always: its series predate them).
      ...Object.fromEntries(
        ctx.notify.channels
          .filter((channel) => channel.on && channel.name !== 'telegram')
          .map((channel) => [channel.name, ctx.queues[channel.name]]),
      ),
      webhook: ctx.queues.webhook,
    };
    const depths: Record<string, Record<string, number>> = {};
    try {
      await withDeadline(
        Promise.all(
          Object.entries(queues).map(async ([name, queue]) => {
            depths[name] = await queue.getJobCounts(...JOB_STATES);
          }),
        ),
        CHECK_TIMEOUT_MS,
      );
    } catch (error) {
      ctx.logger.debug({ err: error }, 'queue depth gauge skipped');
      return {};
    }
    return depths;
  });
}
