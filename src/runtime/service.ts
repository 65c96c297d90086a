/** The service's composition root: context, workers and HTTP for the `start`, `api`, `worker` and `demo` roles. */
import Fastify, { type FastifyInstance, LogController } from 'fastify';
import type { Config } from '../config.ts';
import { buildApp } from '../http/app.ts';
import { applyConnectionLimits } from '../http/connection-limits.ts';
import { registerOperationsRoutes } from '../http/operations-routes.ts';
import { addSecurityHeaders } from '../http/security-headers.ts';
import { serverOptions } from '../http/server-options.ts';
import { startWorkers, type WorkerTuning } from '../jobs/workers.ts';
import { probeRedis } from '../lib/redis-connection.ts';
import type { RedisOutageLog } from '../lib/redis-outage.ts';
import type { RedisTarget } from '../lib/redis-target.ts';
import type { Logger } from '../logger.ts';
import { closeProxyAgents } from '../notify/telegram/proxy-fetch.ts';
import type { ServiceContext } from './context.ts';
import { openMax, startMax } from './max.ts';
import { openServiceContext } from './service-context.ts';
import type { Shutdown } from './shutdown.ts';
import { openTelegram, startTelegram } from './telegram.ts';

/** Which halves of the service a process runs. */
export interface ServiceRoles {
  api: boolean;
  worker: boolean;
}

/** What {@link startService} needs. */
export interface ServiceOptions {
  roles: ServiceRoles;
  config: Config;
  logger: Logger;
  redis: RedisTarget;
  shutdown: Shutdown;
  /** Default `HOST` (`0.0.0.0` unless set); the demo listens on loopback only. */
  host?: string;
  tuning?: WorkerTuning;
  /** Default: one summarizing an outage once a minute; tests pass one with a shorter interval. */
  redisOutage?: RedisOutageLog;
}

/** A running service. */
export interface RunningService {
  context: ServiceContext;
  /** Where HTTP listens, e.g. `http://127.0.0.1:8080`. */
  url: string;
}

/**
 * Starts the roles on one Redis. Every piece registers its stop step as it starts, so the shutdown runs in
 * reverse: HTTP stops accepting first, then workers finish their jobs (as long as the step's budget lasts),
 * then queues and Redis close.
 * A worker-only process still listens on `PORT`, for `/healthz`, `/readyz` and `/metrics`. Throws
 * RedisUnreachableError when Redis does not answer at first.
 */
export async function startService(options: ServiceOptions): Promise<RunningService> {
  const { config, logger, shutdown } = options;
  const role = options.roles.api && options.roles.worker ? 'start' : options.roles.api ? 'api' : 'worker';
  // One try that does not retry, before the connections that retry for ever: an unreachable Redis is then one
  // clear line (RedisUnreachableError), not a retry loop ending in ioredis's MaxRetriesPerRequestError.
  await probeRedis(options.redis);
  const opened = openServiceContext({
    config,
    logger,
    redis: options.redis,
    role,
    ...(options.redisOutage ? { redisOutage: options.redisOutage } : {}),
  });
  shutdown.add('queues and Redis', () => opened.close());
  // Run after everything that sends through Telegram's proxy (the bot, the workers) stopped: steps run in reverse.
  shutdown.add('telegram proxy', () => closeProxyAgents());
  const { context } = opened;
  await context.redis.ping();
  if (options.roles.worker) {
    const workers = await startWorkers(context, options.redis, options.tuning);
    shutdown.add('workers', (budgetMs) => workers.close(budgetMs));
  }
  const telegram = openTelegram(context);
  if (telegram !== undefined) startTelegram(context, telegram, options.roles, shutdown);
  const max = openMax(context);
  if (max !== undefined) startMax(context, max, options.roles, shutdown);
  const app = options.roles.api
    ? await buildApp(context, { logger, telegram, max: max?.bot })
    : await operationsApp(context, logger);
  shutdown.add('http', () => app.close());
  const address = await app.listen({ port: config.port, host: options.host ?? config.host });
  const url = address.replace('://0.0.0.0', '://127.0.0.1').replace('://[::]', '://127.0.0.1');
  logger.info({ url, roles: options.roles }, 'listening');
  return { context, url };
}

/** The HTTP server of a worker-only process: health, readiness and metrics. */
async function operationsApp(context: ServiceContext, logger: Logger): Promise<FastifyInstance> {
  // Fastify's instance type is generic in the logger; ours is pino's, which the plain instance type accepts.
  const app = Fastify({
    ...serverOptions(context.config),
    loggerInstance: logger,
    logController: new LogController({ disableRequestLogging: true }),
  }) as unknown as FastifyInstance;
  applyConnectionLimits(app, context.config);
  addSecurityHeaders(app);
  await registerOperationsRoutes(app, context);
  return app;
}
