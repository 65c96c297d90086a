/**
 * Classifies what ioredis throws when Redis itself is the problem. ioredis has no error classes for most of
 * these (a closed connection or a command timeout is a plain `Error`), so this is the one place that reads
 * their names, codes and messages; everything else branches on {@link RedisUnavailableError} and
 * {@link RedisFullError}.
 */
import { RedisFullError, RedisUnavailableError } from './errors.ts';

/** Socket errors of a Redis that is down, restarting or unreachable. */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTCONN']);

/**
 * What ioredis' Cluster client throws when it cannot reach the node of a slot. It follows only MOVED, ASK,
 * TRYAGAIN, CLUSTERDOWN and closed connections, so running out of redirections (`Too many Cluster
 * redirections. Last error: Error: Connection is closed.`, about 1.6 s after the command when the slot's
 * primary is dead) always means the cluster cannot serve that slot now, whatever the last error was. The
 * others: no node answered CLUSTER SLOTS, none of the configured nodes is up, or the whole cluster is
 * reconnecting (its offline queue is off once it was ready, see redis-connection.ts).
 */
const CLUSTER_MESSAGES = [
  /^Too many Cluster redirections/,
  /^Failed to refresh slots cache/,
  /^None of startup nodes is available/,
  /^Cluster isn't ready/,
  /^Cluster is disconnected/,
];

/**
 * Messages of ioredis' own plain errors, and reply prefixes of a server that cannot serve yet, or no longer
 * may: a primary demoted by a failover answers writes READONLY, a script past its time limit makes every
 * command answer BUSY, `min-replicas-to-write` refuses writes with NOREPLICAS.
 */
const UNAVAILABLE_MESSAGES = [
  /^Connection is closed/,
  /^Command timed out/,
  /^Stream isn't writeable/,
  /^LOADING /,
  /^MASTERDOWN /,
  /^TRYAGAIN /,
  /^CLUSTERDOWN /,
  /^READONLY /,
  /^BUSY /,
  /^NOREPLICAS /,
  ...CLUSTER_MESSAGES,
];

/**
 * The typed error for a failure of Redis itself, its cause kept: {@link RedisFullError} for a refused write
 * at `maxmemory`, {@link RedisUnavailableError} for a lost connection, a server still loading, or a command
 * timeout (a paused Redis); undefined for anything else (a script's own error, a wrong type). Typed errors
 * pass through as they are.
 */
export function redisFailure(error: unknown): RedisUnavailableError | RedisFullError | undefined {
  if (error instanceof RedisUnavailableError || error instanceof RedisFullError) return error;
  if (!(error instanceof Error)) return undefined;
  // A MULTI whose queued commands were refused (OOM, ...) fails as a whole: the first refusal says why.
  const previous = (error as { previousErrors?: unknown }).previousErrors;
  if (error.message.startsWith('EXECABORT ') && Array.isArray(previous)) return redisFailure(previous[0]);
  if (error.message.startsWith('OOM ')) return new RedisFullError('Redis is out of memory', { cause: error });
  const code = (error as { code?: unknown }).code;
  // A socket code counts only on Node's own socket error, a plain Error as ioredis passes it on: our typed
  // errors of other services carry the same codes (a university that refuses connections is
  // UpstreamNetworkError with code ECONNREFUSED) and are no failure of Redis.
  const socketError = error.name === 'Error' && typeof code === 'string' && SOCKET_CODES.has(code);
  if (
    error.name === 'MaxRetriesPerRequestError' ||
    socketError ||
    UNAVAILABLE_MESSAGES.some((pattern) => pattern.test(error.message))
  )
    return new RedisUnavailableError(`Redis is not available (${firstLine(error.message)})`, { cause: error });
  return undefined;
}

/** Whether `error` is a failure of Redis itself (see {@link redisFailure}). */
export function isRedisFailure(error: unknown): boolean {
  return redisFailure(error) !== undefined;
}

function firstLine(message: string): string {
  return message.split('\n', 1)[0]?.slice(0, 200) ?? '';
}
