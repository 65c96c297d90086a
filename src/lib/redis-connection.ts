import { Redis } from 'ioredis';
import type { Logger } from '../logger.ts';

/** Options of {@link connectRedis}. */
export interface RedisConnectionOptions {
  /** Shown in `CLIENT LIST` and in logs, e.g. `api`, `worker`, `feed-updates`. */
  name: string;
  logger: Logger;
  /**
   * BullMQ workers and blocking connections need `maxRetriesPerRequest: null` (commands wait for a
   * reconnect instead of failing); a request handler would rather fail fast.
   */
  blocking?: boolean;
}

/**
 * Opens an ioredis connection with an error listener (an unhandled `error` event would kill the process).
 * Connection errors are logged once per outage, not once per reconnect attempt.
 */
export function connectRedis(url: string, options: RedisConnectionOptions): Redis {
  const redis = new Redis(url, {
    connectionName: `timetable-sync:${options.name}`,
    maxRetriesPerRequest: options.blocking ? null : 3,
    enableReadyCheck: true,
    retryStrategy: (times) => Math.min(times * 200, 5_000),
  });
  let down = false;
  redis.on('error', (error: Error) => {
    if (down) return;
    down = true;
    options.logger.error({ err: error, connection: options.name }, 'Redis connection failed; reconnecting');
  });
  redis.on('ready', () => {
    if (!down) return;
    down = false;
    options.logger.info({ connection: options.name }, 'Redis connection restored');
  });
  return redis;
}
