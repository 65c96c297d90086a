import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.ts';

function problemsOf(env: Record<string, string>): readonly string[] {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
}

describe('abuse limits in the configuration', () => {
  it('defaults to limits that suit a university, and trusts no proxy', () => {
    const config = loadConfig({});
    expect(config.trustProxy).toBe(false);
    expect(config.upstreamRequestWaitMs).toBe(2_000);
    expect(config.firstRequestsPerClient).toEqual({ count: 30, periodMs: 60_000 });
    expect(config.failedSignUpsPerClient).toEqual({ count: 5, periodMs: 15 * 60_000 });
  });

  it('reads <count>/<duration> rates', () => {
    const config = loadConfig({ SEARCHES_PER_CLIENT: '100 / 1h', SIGN_UPS_TOTAL: '3/90s' });
    expect(config.searchesPerClient).toEqual({ count: 100, periodMs: 3_600_000 });
    expect(config.signUpsTotal).toEqual({ count: 3, periodMs: 90_000 });
  });

  it.each(['30', '0/1m', 'x/1m', '30/fortnight', '5/500ms'])('names a bad rate %j', (value) => {
    const [problem] = problemsOf({ SEARCHES_TOTAL: value });
    expect(problem).toMatch(/^SEARCHES_TOTAL: must be <count>\/<duration> such as 30\/1m/);
  });

  it.each([
    ['true', true],
    ['FALSE', false],
    ['127.0.0.1, 10.0.0.0/8,fd00::/8', ['127.0.0.1', '10.0.0.0/8', 'fd00::/8']],
  ])('reads TRUST_PROXY=%j as fastify takes it', (value, expected) => {
    expect(loadConfig({ TRUST_PROXY: value }).trustProxy).toEqual(expected);
  });

  it('refuses a hop count, which fastify would trust for nothing', () => {
    expect(problemsOf({ TRUST_PROXY: '1' })[0]).toMatch(
      /^TRUST_PROXY: a hop count \(1\) cannot tell a proxy from a client/,
    );
  });

  it('names the TRUST_PROXY entries that are neither addresses nor ranges', () => {
    expect(problemsOf({ TRUST_PROXY: '10.0.0.1,proxy.local,10.0.0.0/33' })).toEqual([
      'TRUST_PROXY: must be true, false or a comma list of proxy addresses/CIDR ranges (not: proxy.local, 10.0.0.0/33)',
    ]);
  });
});

describe('CalDAV push in the configuration', () => {
  it('defaults to 5 requests per second per host and refuses private hosts', () => {
    const config = loadConfig({});
    expect(config.caldavRateLimit).toBe(5);
    expect(config.caldavAllowPrivate).toBe(false);
    expect(config.caldavReconcileIntervalMs).toBe(6 * 3_600_000);
    expect(config.caldavPauseMs).toBe(6 * 3_600_000);
    expect(config.caldavRequestTimeoutMs).toBe(30_000);
  });

  it.each([
    ['true', true],
    ['FALSE', false],
  ])('reads CALDAV_ALLOW_PRIVATE=%j', (value, expected) => {
    expect(loadConfig({ CALDAV_ALLOW_PRIVATE: value }).caldavAllowPrivate).toBe(expected);
  });

  it('names a CALDAV_ALLOW_PRIVATE that is neither true nor false', () => {
    expect(problemsOf({ CALDAV_ALLOW_PRIVATE: 'yes' })).toEqual([
      'CALDAV_ALLOW_PRIVATE: must be true or false (got "yes")',
    ]);
  });
});

describe('the freshness settings', () => {
  it('plan adaptively by default, parked sources waiting 4 h or the refresh interval when longer', () => {
    expect(loadConfig({})).toMatchObject({ refreshPolicy: 'adaptive', refreshMaxWaitMs: 4 * 3_600_000 });
    expect(loadConfig({ REFRESH_INTERVAL: '12h' }).refreshMaxWaitMs).toBe(12 * 3_600_000);
    expect(loadConfig({ REFRESH_POLICY: 'fixed', REFRESH_MAX_WAIT: '90m' })).toMatchObject({
      refreshPolicy: 'fixed',
      refreshMaxWaitMs: 90 * 60_000,
    });
  });

  it('refuses a longest wait shorter than the interval, and an unknown policy', () => {
    expect(() => loadConfig({ REFRESH_INTERVAL: '2h', REFRESH_MAX_WAIT: '1h' })).toThrow(
      /REFRESH_MAX_WAIT: must not be shorter than REFRESH_INTERVAL/,
    );
    expect(problemsOf({ REFRESH_POLICY: 'eager' })).toEqual(['REFRESH_POLICY: must be adaptive or fixed']);
  });
});

describe("the public feeds' max-age in the configuration", () => {
  it('defaults to 30 s and reads whole seconds up to 30 s', () => {
    expect(loadConfig({}).feedPublicMaxAgeSeconds).toBe(30);
    expect(loadConfig({ FEED_PUBLIC_MAX_AGE: '2s' }).feedPublicMaxAgeSeconds).toBe(2);
    expect(loadConfig({ FEED_PUBLIC_MAX_AGE: '30s' }).feedPublicMaxAgeSeconds).toBe(30);
  });

  it.each(['31s', '1m', '1500ms', '500ms', '0s', 'soon'])('refuses FEED_PUBLIC_MAX_AGE=%j', (value) => {
    const [problem] = problemsOf({ FEED_PUBLIC_MAX_AGE: value });
    expect(problem).toMatch(/^FEED_PUBLIC_MAX_AGE: must be /);
  });
});

describe("the worker's CPU priority in the configuration", () => {
  it('defaults to niceness 5 and reads whole numbers from 0 to 19', () => {
    expect(loadConfig({}).workerNice).toBe(5);
    expect(loadConfig({ WORKER_NICE: '0' }).workerNice).toBe(0);
    expect(loadConfig({ WORKER_NICE: '19' }).workerNice).toBe(19);
  });

  it.each(['20', '-1', '2.5', 'low'])('refuses WORKER_NICE=%j', (value) => {
    const [problem] = problemsOf({ WORKER_NICE: value });
    expect(problem).toBe(`WORKER_NICE: must be a whole number from 0 to 19 (got "${value}")`);
  });
});
