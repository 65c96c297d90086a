import { describe, expect, it } from 'vitest';
import { parseRetryAfter } from '../../src/lib/retry-after.ts';
import {
  InvalidIdError,
  UpstreamAuthError,
  UpstreamError,
  UpstreamHttpError,
  UpstreamNetworkError,
  UpstreamNotFoundError,
  UpstreamProtocolError,
  UpstreamRateLimitError,
  UpstreamTimeoutError,
} from '../../src/upstream/errors.ts';
import { abortableSleep, backoffDelay, DEFAULT_RETRY_POLICY } from '../../src/upstream/retry.ts';
import { validateId } from '../../src/upstream/values.ts';

describe('validateId', () => {
  it.each([
    [42, 42],
    ['42', 42],
    [Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
  ])('accepts %j', (input, expected) => {
    expect(validateId('groupId', input)).toBe(expected);
  });

  it.each([0, -1, 1.5, '4a', '../x', '', ' 4', '-3', '1e3', NaN, Infinity, 2 ** 53, null, undefined])(
    'rejects %j',
    (input) => {
      expect(() => validateId('groupId', input)).toThrow(InvalidIdError);
      try {
        validateId('groupId', input);
      } catch (err) {
        expect(err).toMatchObject({ name: 'InvalidIdError', field: 'groupId', value: input });
      }
    },
  );
});

describe('error classes', () => {
  it('set name, retryable, attempts and keep cause', () => {
    const cause = new Error('socket hang up');
    const cases: [UpstreamError, string, boolean][] = [
      [
        new UpstreamHttpError('groupSchedule', 503, { upstreamMessage: 'Сервис недоступен' }),
        'UpstreamHttpError',
        true,
      ],
      [new UpstreamHttpError('groupSchedule', 400), 'UpstreamHttpError', false],
      [new UpstreamNotFoundError('groupSchedule'), 'UpstreamNotFoundError', false],
      [new UpstreamRateLimitError('groupSchedule', { retryAfterMs: 1000 }), 'UpstreamRateLimitError', true],
      [new UpstreamAuthError('me', 401), 'UpstreamAuthError', false],
      [new UpstreamTimeoutError('myPlan', 'headers', { cause }), 'UpstreamTimeoutError', true],
      [new UpstreamNetworkError('myPlan', 'ECONNRESET', { cause, attempts: 4 }), 'UpstreamNetworkError', true],
      [new UpstreamProtocolError('me', 'bad-json'), 'UpstreamProtocolError', false],
    ];
    for (const [err, name, retryable] of cases) {
      expect(err).toBeInstanceOf(UpstreamError);
      expect(err.name).toBe(name);
      expect(err.retryable).toBe(retryable);
      expect(err.message).toContain(err.endpoint);
    }
    expect(cases[5]?.[0].cause).toBe(cause);
    expect(cases[6]?.[0].attempts).toBe(4);
    expect(cases[6]?.[0].message).toContain('after 4 attempts');
    expect(cases[0]?.[0].message).toContain('HTTP 503: Сервис недоступен');
  });

  it('subclass the HTTP error for 404 and 429', () => {
    expect(new UpstreamNotFoundError('groupSchedule')).toBeInstanceOf(UpstreamHttpError);
    expect(new UpstreamRateLimitError('groupSchedule')).toMatchObject({ status: 429, retryAfterMs: undefined });
    expect(new InvalidIdError('groupId', 'x')).not.toBeInstanceOf(UpstreamError);
  });
});

describe('retry arithmetic', () => {
  it('uses full jitter under an exponential, capped ceiling', () => {
    const policy = { ...DEFAULT_RETRY_POLICY, baseDelayMs: 100, maxDelayMs: 1000 };
    expect([0, 1, 2, 3, 4].map((i) => backoffDelay(policy, i, () => 1))).toEqual([100, 200, 400, 800, 1000]);
    expect(backoffDelay(policy, 2, () => 0.5)).toBe(200);
    expect(backoffDelay(policy, 3, () => 0)).toBe(0);
  });

  it('parses Retry-After seconds and HTTP-dates', () => {
    const now = Date.parse('2025-10-01T12:00:00Z');
    expect(parseRetryAfter('3', now)).toBe(3000);
    expect(parseRetryAfter(['0'], now)).toBe(0);
    expect(parseRetryAfter('Wed, 01 Oct 2025 12:00:05 GMT', now)).toBe(5000);
    expect(parseRetryAfter('Wed, 01 Oct 2025 11:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
    expect(parseRetryAfter('1.5', now)).toBe(1500);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter('-1', now)).toBeUndefined();
  });

  it('sleeps abortably, rejecting with the caller’s reason', async () => {
    const controller = new AbortController();
    const reason = new Error('shutting down');
    const sleeping = abortableSleep(10_000, controller.signal);
    controller.abort(reason);
    await expect(sleeping).rejects.toBe(reason);
    await expect(abortableSleep(1)).resolves.toBeUndefined();
  });
});
