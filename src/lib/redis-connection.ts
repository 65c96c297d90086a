import { Cluster, type ClusterOptions, Redis, type RedisOptions } from 'ioredis';
import { clusterNodeSubscriber } from './cluster-subscriber.ts';
import { RedisUnreachableError } from './errors.ts';
import type { RedisOutageLog } from './redis-outage.ts';
import { type RedisClient, type RedisNode, type RedisTarget, redisTarget } from './redis-target.ts';

/** Options of {@link connectRedis}. */
export interface RedisConnectionOptions {
  /** Shown in `CLIENT LIST` and in logs, e.g. `api`, `worker`, `feed-updates`. */
  name: string;
  /** The process's outage log, told of every failed connection attempt and every reconnection. */
  outage: RedisOutageLog;
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
 * Opens a connection to `target` with ioredis' own client for its kind: `Redis` on a URL, `Redis` asking the
 * sentinels for the current primary (and asking again after every disconnect, so a failover is followed), or
 * `Cluster`. It has an error listener (an unhandled `error` event would kill the process) that reports to the
 * process's {@link RedisOutageLog}, which logs an outage once, not once per reconnect attempt.
 */
export function connectRedis(to: RedisTarget | string, options: RedisConnectionOptions): RedisClient {
  const target = redisTarget(to);
  const common: ServerOptions = {
    connectionName: `timetable-sync:${options.name}`,
    maxRetriesPerRequest: options.blocking ? null : 3,
    ...(options.blocking ? {} : { commandTimeout: options.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS }),
    enableReadyCheck: true,
    retryStrategy: (times) => Math.min(times * 200, 5_000),
  };
  const redis = openClient(target, common, {});
  if (redis instanceof Cluster && !options.blocking) failFastOnceReady(redis);
  redis.on('error', (error: Error) => options.outage.failed(options.name, error));
  redis.on('ready', () => options.outage.restored(options.name));
  return redis;
}

/** How long {@link closeRedis} waits for QUIT's answer by default. */
export const QUIT_TIMEOUT_MS = 500;

/**
 * Closes a connection, never waiting longer than `timeoutMs`: QUIT when it is connected (commands sent before
 * it are answered first), and a disconnect when it is not, or when QUIT is not answered in time (a paused
 * Redis). A disconnect also stops its reconnecting: a client left reconnecting would keep the process alive.
 * Commands still waiting fail, or never settle; either way nothing holds the process any more.
 */
export async function closeRedis(client: RedisClient, timeoutMs = QUIT_TIMEOUT_MS): Promise<void> {
  if (client.status === 'end') return;
  if (client.status !== 'ready') {
    client.disconnect();
    return;
  }
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((done) => {
    timer = setTimeout(() => done('late'), timeoutMs);
  });
  try {
    const outcome = await Promise.race([client.quit().then(() => 'quit' as const), late]);
    if (outcome === 'late') client.disconnect();
  } catch {
    client.disconnect();
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A Cluster queues the commands it cannot route while it reconnects (every node lost) in an offline queue
 * of its own, without any timeout: `commandTimeout` starts only once a command is sent to a node. With every
 * node down, a request waited for ever, and its write ran whenever the cluster came back. Once the cluster
 * has been ready, the queue is turned off: a command then fails at once ("Cluster isn't ready ..."), and one
 * for a node that is gone fails after ioredis' failover retries (16 x 100 ms). Until the first `ready` it
 * stays on, so that a role's first commands (sent right after connecting, to a cluster `startService`
 * probed just before) wait for the slots; ioredis reads the option at each command.
 */
function failFastOnceReady(cluster: Cluster): void {
  cluster.once('ready', () => {
    cluster.options.enableOfflineQueue = false;
  });
}

/**
 * A second connection to the same target as `client`, with its own name, for a subscriber (which cannot send
 * other commands). On a Cluster it is a plain connection to one node that moves to another node when it is
 * lost (cluster-subscriber.ts): it emits `close` and `ready` when its node fails, which ioredis' own cluster
 * subscriber does not; `configured` is the cluster's REDIS_CLUSTER_NODES, tried besides the nodes the cluster
 * knows. Unlike `connectRedis` it has no error listener: the caller adds its own.
 */
export function duplicateRedis(client: RedisClient, name: string, configured?: RedisTarget): RedisClient {
  const connectionName = `timetable-sync:${name}`;
  if (client instanceof Cluster)
    return clusterNodeSubscriber(client, connectionName, configured?.kind === 'cluster' ? configured.nodes : []);
  return client.duplicate({ connectionName });
}

/** The options of ours that every server connection takes. */
type ServerOptions = Pick<
  RedisOptions,
  | 'connectionName'
  | 'maxRetriesPerRequest'
  | 'enableReadyCheck'
  | 'retryStrategy'
  | 'lazyConnect'
  | 'connectTimeout'
  | 'commandTimeout'
  | 'enableOfflineQueue'
>;

/**
 * The ioredis client for `target`. `redisOptions` apply to every server connection (a cluster's nodes too);
 * `clusterOptions` only to a cluster. A sentinel target retries the sentinels as it retries the primary.
 */
function openClient(target: RedisTarget, redisOptions: ServerOptions, clusterOptions: ClusterOptions): RedisClient {
  switch (target.kind) {
    case 'standalone':
      return new Redis(target.url, redisOptions);
    case 'sentinel':
      return new Redis({
        ...redisOptions,
        sentinels: target.sentinels.map(node),
        name: target.master,
        role: 'master',
        ...(target.password === undefined ? {} : { password: target.password }),
        ...(target.sentinelPassword === undefined ? {} : { sentinelPassword: target.sentinelPassword }),
        // Also hears a switch of primary from the sentinels, e.g. one ordered while the old primary still runs.
        failoverDetector: true,
        // A primary demoted while we were connected answers writes READONLY: reconnect (asking the sentinels
        // for the new primary) instead of failing every write until a disconnect. The failed command is
        // rejected (READONLY counts as an outage), not resent: see reconnectOnReadonly.
        reconnectOnError: reconnectOnReadonly,
        ...(redisOptions.retryStrategy ? { sentinelRetryStrategy: redisOptions.retryStrategy } : {}),
      });
    case 'cluster':
      return new Cluster(target.nodes.map(node), {
        // Every key of ours and BullMQ's shares one hash tag (config.ts), so no command ever needs two slots.
        enableReadyCheck: true,
        clusterRetryStrategy: redisOptions.retryStrategy ?? (() => null),
        ...clusterOptions,
        redisOptions: {
          ...redisOptions,
          ...(target.password === undefined ? {} : { password: target.password }),
        },
      });
  }
}

/**
 * ioredis' `reconnectOnError` for a Sentinel target: 1 = reconnect and reject the failed command. Not 2
 * (reconnect and resend): ioredis resends a command of a MULTI alone, outside its transaction, so half a
 * transaction would be applied on the new primary. The caller sees READONLY, which counts as an outage.
 */
export function reconnectOnReadonly(error: Error): 1 | false {
  return /^READONLY/.test(error.message) ? 1 : false;
}

function node(entry: RedisNode): { host: string; port: number } {
  return { host: entry.host, port: entry.port };
}

/** The target for a log line or a message: addresses only, never a password. */
export function describeRedisTarget(target: RedisTarget): string {
  const list = (nodes: readonly RedisNode[]) =>
    nodes
      .map((entry) => (entry.host.includes(':') ? `[${entry.host}]:${entry.port}` : `${entry.host}:${entry.port}`))
      .join(',');
  switch (target.kind) {
    case 'standalone':
      return redactRedisUrl(target.url);
    case 'sentinel':
      return `primary "${target.master}" via sentinels ${list(target.sentinels)}`;
    case 'cluster':
      return `cluster ${list(target.nodes)}`;
  }
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
export async function withRedisProbe<T>(
  to: RedisTarget | string,
  timeoutMs: number,
  use: (redis: RedisClient) => Promise<T>,
): Promise<T> {
  const target = redisTarget(to);
  const probe = openClient(
    target,
    {
      lazyConnect: true,
      connectTimeout: timeoutMs,
      commandTimeout: timeoutMs,
      retryStrategy: () => null,
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
    },
    { lazyConnect: true, enableOfflineQueue: false, clusterRetryStrategy: () => null },
  );
  // The socket's own error (ECONNREFUSED, NOAUTH, ...) says more than connect()'s "Connection is closed".
  let socketError: Error | undefined;
  probe.on('error', (error: Error) => (socketError ??= error));
  try {
    try {
      await withTimeout(probe.connect(), timeoutMs);
      await probe.ping();
    } catch (error) {
      const reason = socketError ?? (error as Error);
      throw new RedisUnreachableError(unreachableMessage(target, reason.message), { cause: reason });
    }
    return await use(probe);
  } finally {
    probe.disconnect();
  }
}

/**
 * A cluster's `connect()` waits for the slots of a node that answers, however many nodes it tries: bounded
 * here so that a probe never takes longer than it may.
 */
async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Checks that Redis at `target` answers PING; throws {@link RedisUnreachableError} saying what to check. */
export async function probeRedis(target: RedisTarget | string, timeoutMs = 5_000): Promise<void> {
  await withRedisProbe(target, timeoutMs, async () => undefined);
}

function unreachableMessage(target: RedisTarget, reason: string): string {
  // A reason should never carry a password, but it is the one place an outside text reaches the message.
  let safeReason = reason;
  for (const password of passwords(target)) safeReason = safeReason.replaceAll(password, '***');
  return (
    `cannot reach Redis at ${describeRedisTarget(target)}: ${safeReason.replace(/\.$/, '')}; ` +
    `check ${targetVariables(target)}`
  );
}

/** The variables an operator checks when the target does not answer. */
function targetVariables(target: RedisTarget): string {
  switch (target.kind) {
    case 'standalone':
      return 'REDIS_URL and that redis-server runs';
    case 'sentinel':
      return 'REDIS_SENTINELS, REDIS_SENTINEL_MASTER, the passwords and that the sentinels and the primary run';
    case 'cluster':
      return 'REDIS_CLUSTER_NODES, REDIS_PASSWORD and that the cluster nodes run';
  }
}

function passwords(target: RedisTarget): string[] {
  switch (target.kind) {
    case 'standalone': {
      const password = safePassword(target.url);
      return password === undefined ? [] : [password];
    }
    case 'sentinel':
      return [target.password, target.sentinelPassword].filter((value): value is string => !!value);
    case 'cluster':
      return target.password ? [target.password] : [];
  }
}

function safePassword(url: string): string | undefined {
  try {
    const { password } = new URL(url);
    return password === '' ? undefined : decodeURIComponent(password);
  } catch {
    return undefined;
  }
}
