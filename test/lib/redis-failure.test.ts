import type { Redis } from 'ioredis';
import { describe, expect, it, vi } from 'vitest';
import { toHttpError } from '../../src/http/errors.ts';
import { RedisFullError, RedisUnavailableError } from '../../src/lib/errors.ts';
import { waitForDisk } from '../../src/lib/redis-durability.ts';
import { redisFailure } from '../../src/lib/redis-failure.ts';
import { silentLogger } from '../../src/logger.ts';

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

  it('calls a refused write at maxmemory full, inside a MULTI too', () => {
    const oom = replyError("OOM command not allowed when used memory > 'maxmemory'.");
    expect(redisFailure(oom)).toBeInstanceOf(RedisFullError);
    const aborted = replyError('EXECABORT Transaction discarded because of previous errors.', {
      previousErrors: [oom],
    });
    expect(redisFailure(aborted)).toBeInstanceOf(RedisFullError);
  });

  it('leaves other errors alone', () => {
    expect(redisFailure(replyError('WRONGTYPE Operation against a key holding the wrong kind of value'))).toBe(
      undefined,
    );
    expect(redisFailure(new TypeError('x is not a function'))).toBeUndefined();
    expect(redisFailure('Connection is closed.')).toBeUndefined();
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

describe('waitForDisk', () => {
  const stub = (call: (...args: string[]) => Promise<unknown>) => ({ call: vi.fn(call) }) as unknown as Redis;

  it('asks for WAITAOF 1 0 and resolves once the local AOF has the writes', async () => {
    const redis = stub(async () => [1, 0]);
    await waitForDisk(redis, silentLogger(), 1_500);
    expect(redis.call).toHaveBeenCalledWith('WAITAOF', '1', '0', '1500');
  });

  it('throws unavailable when the write is not on disk in time (the token must not be handed out)', async () => {
    await expect(
      waitForDisk(
        stub(async () => [0, 0]),
        silentLogger(),
      ),
    ).rejects.toBeInstanceOf(RedisUnavailableError);
  });

  it('falls back once on a server without WAITAOF or without AOF, and does not ask it again', async () => {
    for (const message of [
      "ERR unknown command 'WAITAOF', with args beginning with: '1' '0' '2000' ",
      'ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.',
    ]) {
      const redis = stub(async () => {
        throw replyError(message);
      });
      const logger = silentLogger();
      const warn = vi.spyOn(logger, 'warn');
      await waitForDisk(redis, logger);
      await waitForDisk(redis, logger);
      expect(redis.call).toHaveBeenCalledTimes(1);
      expect(warn).toHaveBeenCalledTimes(1);
    }
  });

  it('passes other failures on', async () => {
    const closed = new Error('Connection is closed.');
    await expect(
      waitForDisk(
        stub(async () => {
          throw closed;
        }),
        silentLogger(),
      ),
    ).rejects.toBe(closed);
  });
});
