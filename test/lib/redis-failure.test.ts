import { describe, expect, it } from 'vitest';
import { toHttpError } from '../../src/http/errors.ts';
import { RedisFullError, RedisUnavailableError } from '../../src/lib/errors.ts';
import { reconnectOnReadonly } from '../../src/lib/redis-connection.ts';
import { redisFailure } from '../../src/lib/redis-failure.ts';
import { UpstreamNetworkError } from '../../src/upstream/errors.ts';

/** Errors as ioredis throws them (it has no classes for most). */
function replyError(message: string, extra: Record<string, unknown> = {}): Error {
  return Object.assign(new Error(message), { name: 'ReplyError' }, extra);
}

describe('redisFailure', () => {
  it('calls a lost connection, a server loading or a timeout unavailable, keeping the cause', () => {
    const maxRetries = Object.assign(new Error('Reached the max retries per request limit (which is 3).'), {
      name: 'MaxRetriesPerRequestError',
    });
    for (const error of [
      maxRetries,
      new Error('Connection is closed.'),
      new Error('Command timed out'),
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6379'), { code: 'ECONNREFUSED' }),
      replyError('LOADING Redis is loading the dataset in memory'),
    ]) {
      const typed = redisFailure(error);
      expect(typed, error.message).toBeInstanceOf(RedisUnavailableError);
      expect(typed?.cause).toBe(error);
    }
  });

  it.each([
    // ioredis' Cluster client: a slot whose primary is dead, no node answering, the cluster reconnecting.
    'Too many Cluster redirections. Last error: Error: Connection is closed.',
    'Too many Cluster redirections. Last error: ReplyError: CLUSTERDOWN The cluster is down',
    'Failed to refresh slots cache.',
    'None of startup nodes is available',
    "Cluster isn't ready and enableOfflineQueue options is false",
    'Cluster is disconnected.',
    // Servers: a demoted primary, a script past its time limit, too few replicas for a write.
    "READONLY You can't write against a read only replica.",
    'BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSCRIPT.',
    'NOREPLICAS Not enough good replicas to write.',
  ])('calls "%s" unavailable', (message) => {
    const error = replyError(message);
    const typed = redisFailure(error);
    expect(typed).toBeInstanceOf(RedisUnavailableError);
    expect(typed?.cause).toBe(error);
    expect(toHttpError(error)?.statusCode).toBe(503);
  });

  it('calls a refused write at maxmemory full, inside a MULTI too', () => {
    const oom = replyError("OOM command not allowed when used memory > 'maxmemory'.");
    expect(redisFailure(oom)).toBeInstanceOf(RedisFullError);
    const aborted = replyError('EXECABORT Transaction discarded because of previous errors.', {
      previousErrors: [oom],
    });
    expect(redisFailure(aborted)).toBeInstanceOf(RedisFullError);
  });

  it('leaves socket errors of other services alone: a university refusing connections is not Redis down', () => {
    const upstream = new UpstreamNetworkError('groupSchedule', 'ECONNREFUSED');
    expect(redisFailure(upstream)).toBeUndefined();
    expect(redisFailure(Object.assign(new Error('socket hang up'), { name: 'GaxiosError', code: 'ECONNRESET' }))).toBe(
      undefined,
    );
  });

  it('leaves other errors alone', () => {
    expect(redisFailure(replyError('WRONGTYPE Operation against a key holding the wrong kind of value'))).toBe(
      undefined,
    );
    expect(redisFailure(new TypeError('x is not a function'))).toBeUndefined();
    expect(redisFailure('Connection is closed.')).toBeUndefined();
  });

  it('has a Sentinel connection reconnect, without resending the command, on READONLY only', () => {
    // 2 (resend) would replay a command of a MULTI alone, outside its transaction.
    expect(reconnectOnReadonly(replyError("READONLY You can't write against a read only replica."))).toBe(1);
    expect(reconnectOnReadonly(replyError('WRONGTYPE Operation against a key'))).toBe(false);
    expect(reconnectOnReadonly(new Error('Connection is closed.'))).toBe(false);
  });

  it('answers 503 with Retry-After over HTTP', () => {
    const down = toHttpError(new Error('Connection is closed.'));
    expect(down?.statusCode).toBe(503);
    expect(down?.headers).toEqual({ 'retry-after': '5' });
    const full = toHttpError(replyError("OOM command not allowed when used memory > 'maxmemory'."));
    expect(full?.statusCode).toBe(503);
    expect(full?.message).toMatch(/full/);
    expect(full?.headers).toEqual({ 'retry-after': '60' });
    expect(toHttpError(new TypeError('boom'))).toBeUndefined();
  });
});
