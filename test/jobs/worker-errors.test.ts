import { describe, expect, it } from 'vitest';
import { lostRedis } from '../../src/jobs/workers.ts';

/** A socket error as Node makes it. */
function socketError(message: string, code: string, syscall: string): Error {
  return Object.assign(new Error(message), { code, syscall });
}

describe('lostRedis', () => {
  it("takes a worker's connection errors for Redis out of reach, a stopped container's name too", () => {
    for (const error of [
      socketError('connect ECONNREFUSED 127.0.0.1:6379', 'ECONNREFUSED', 'connect'),
      socketError('getaddrinfo ENOTFOUND redis', 'ENOTFOUND', 'getaddrinfo'),
      socketError('getaddrinfo EAI_AGAIN redis', 'EAI_AGAIN', 'getaddrinfo'),
      new Error('Connection is closed.'),
    ])
      expect(lostRedis(error), error.message).toBe(true);
  });

  it('leaves other errors (a script failing, a full Redis) to be logged as they are', () => {
    const script = Object.assign(new Error('ERR Error running script'), { name: 'ReplyError' });
    const full = Object.assign(new Error("OOM command not allowed when used memory > 'maxmemory'."), {
      name: 'ReplyError',
    });
    expect(lostRedis(script)).toBe(false);
    expect(lostRedis(full)).toBe(false);
  });
});
