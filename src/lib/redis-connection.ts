import { Redis } from 'ioredis';
import type { Logger } from '../logger.ts';
import { RedisUnreachableError } from './errors.ts';

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
  /**
   * How long a command of a non-blocking connection may wait for its reply before it fails (a paused or
   * overloaded Redis); default {@link DEFAULT_COMMAND_TIMEOUT_MS}. Blocking connections never time out.
   */
  commandTimeoutMs?: number;
}

/**
 * Default reply timeout of request-path connections: far above a healthy command (well under a millisecond)
 * and a busy Lua script, short enough that a request on a paused Redis answers 503 instead of hanging.
 */
export const DEFAULT_COMMAND_TIMEOUT_MS = 3_000;

/**
 * Opens an ioredis connection with an error listener (an unhandled `error` event would kill the process).
 * Connection errors are logged once per outage, not once per reconnect attempt. Only standalone Redis URLs
 * are supported (no Sentinel or Cluster), so the URL is the whole of what a connection needs.
 */
export function connectRedis(url: string, options: RedisConnectionOptions): Redis {
  const redis = new Redis(url, {
    connectionName: `timetable-sync:${options.name}`,
    maxRetriesPerRequest: options.blocking ? null : 3,
    ...(options.blocking ? {} : { commandTimeout: options.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS }),
    enableReadyCheck: true,
    retryStrategy: (times) => Math.min(times * 200, 5_000),
  });
  let down = false;
  redis.on('error', (error: Error) => {
    if (down) return;
    down = true;
    options.logger.error(
      { err: error, connection: options.name, redis: redactRedisUrl(url) },
      'Redis connection failed; reconnecting',
    );
  });
  redis.on('ready', () => {
    if (!down) return;
    down = false;
    options.logger.info({ connection: options.name }, 'Redis connection restored');
  });
  return redis;
}

/**
 * A Redis URL fit for a message or a log line: scheme, host, port and database only; user name, password
 * and query (ioredis reads options, a password among them, from it) are dropped, and said to be hidden.
 */
export function redactRedisUrl(url: string): string {
  try {
    const parsed = new URL(url);
    const hidden = parsed.username !== '' || parsed.password !== '' || parsed.search !== '';
    const database = parsed.pathname === '/' ? '' : parsed.pathname;
    return `${parsed.protocol}//${parsed.host}${database}${hidden ? ' (credentials hidden)' : ''}`;
  } catch {
    return 'REDIS_URL (not a valid URL)';
  }
}

/**
 * Opens one connection that never retries, checks it with PING, runs `use` on it and closes it. A refused
 * connection, a timeout or a rejected password becomes {@link RedisUnreachableError} naming the address
 * without credentials (errors of `use` itself pass unchanged): the service's own connections retry for
 * ever, right for a service but wrong for a command someone waits on.
 */
export async function withRedisProbe<T>(url: string, timeoutMs: number, use: (redis: Redis) => Promise<T>): Promise<T> {
  const probe = new Redis(url, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
  });
  // The socket's own error (ECONNREFUSED, NOAUTH, ...) says more than connect()'s "Connection is closed".
  let socketError: Error | undefined;
  probe.on('error', (error: Error) => (socketError ??= error));
  try {
    try {
      await probe.connect();
      await probe.ping();
    } catch (error) {
      const reason = socketError ?? (error as Error);
      throw new RedisUnreachableError(unreachableMessage(url, reason.message), { cause: reason });
    }
    return await use(probe);
  } finally {
    probe.disconnect();
  }
}

/** Checks that Redis at `url` answers PING; throws {@link RedisUnreachableError} saying what to check. */
export async function probeRedis(url: string, timeoutMs = 5_000): Promise<void> {
  await withRedisProbe(url, timeoutMs, async () => undefined);
}

function unreachableMessage(url: string, reason: string): string {
  // A reason should never carry the password, but it is the one place an outside text reaches the message.
  const password = safePassword(url);
  const safeReason = password ? reason.replaceAll(password, '***') : reason;
  return (
    `cannot reach Redis at ${redactRedisUrl(url)}: ${safeReason.replace(/\.$/, '')}; ` +
    'check REDIS_URL and that redis-server runs'
  );
}

function safePassword(url: string): string | undefined {
  try {
    const { password } = new URL(url);
    return password === '' ? undefined : decodeURIComponent(password);
  } catch {
    return undefined;
  }
}
