import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.ts';
import { hasHashTag } from '../src/lib/redis-target.ts';

function problemsOf(env: Record<string, string>): readonly string[] {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
}

describe('the Redis target in the configuration', () => {
  it('is undefined without a Redis variable (the embedded redis-server)', () => {
    expect(loadConfig({}).redisTarget).toBeUndefined();
  });

  it('reads REDIS_URL as a standalone Redis', () => {
    expect(loadConfig({ REDIS_URL: 'redis://:pw@cache:6380/2' }).redisTarget).toEqual({
      kind: 'standalone',
      url: 'redis://:pw@cache:6380/2',
    });
  });

  it('reads the sentinels, the primary name and both passwords', () => {
    const config = loadConfig({
      REDIS_SENTINELS: 'sentinel-1:26379, 10.0.0.2:26380,[::1]:26381',
      REDIS_SENTINEL_MASTER: 'timetable',
      REDIS_SENTINEL_PASSWORD: 'sentinel-secret',
      REDIS_PASSWORD: 'data-secret',
    });
    expect(config.redisTarget).toEqual({
      kind: 'sentinel',
      sentinels: [
        { host: 'sentinel-1', port: 26379 },
        { host: '10.0.0.2', port: 26380 },
        { host: '::1', port: 26381 },
      ],
      master: 'timetable',
      sentinelPassword: 'sentinel-secret',
      password: 'data-secret',
    });
    expect(config.redisPrefix).toBe('tts');
  });

  it('reads the cluster nodes and makes the default prefix a hash tag', () => {
    const config = loadConfig({ REDIS_CLUSTER_NODES: 'redis-1:6379,redis-2:6379' });
    expect(config.redisTarget).toEqual({
      kind: 'cluster',
      nodes: [
        { host: 'redis-1', port: 6379 },
        { host: 'redis-2', port: 6379 },
      ],
      password: undefined,
    });
    expect(config.redisPrefix).toBe('{tts}');
    expect(loadConfig({ REDIS_CLUSTER_NODES: 'r:1', REDIS_PREFIX: 'uni-{a}' }).redisPrefix).toBe('uni-{a}');
  });

  it('refuses a cluster prefix without a hash tag, naming one that would do', () => {
    expect(problemsOf({ REDIS_CLUSTER_NODES: 'r:1', REDIS_PREFIX: 'uni' })).toEqual([
      'REDIS_PREFIX: with REDIS_CLUSTER_NODES it must hold a hash tag such as {uni} ' +
        '(every key and queue of the service must share one cluster slot)',
    ]);
    expect(problemsOf({ REDIS_CLUSTER_NODES: 'r:1', REDIS_PREFIX: 'a{}b' })[0]).toMatch(/^REDIS_PREFIX: /);
  });

  it('refuses more than one topology, naming the variables', () => {
    expect(
      problemsOf({
        REDIS_URL: 'redis://x:1',
        REDIS_CLUSTER_NODES: 'r:1',
        REDIS_PREFIX: '{t}',
      }),
    ).toEqual([
      'REDIS_URL, REDIS_CLUSTER_NODES: set only one of REDIS_URL, REDIS_SENTINELS, REDIS_CLUSTER_NODES ' +
        '(one Redis per deployment)',
    ]);
    const three = problemsOf({ REDIS_URL: 'redis://x:1', REDIS_SENTINELS: 's:1', REDIS_SENTINEL_MASTER: 'm' });
    expect(three[0]).toMatch(/^REDIS_URL, REDIS_SENTINELS: set only one of/);
  });

  it('wants the sentinels and the primary name together, and passwords only where they are used', () => {
    expect(problemsOf({ REDIS_SENTINELS: 's:26379' })[0]).toMatch(/^REDIS_SENTINELS, REDIS_SENTINEL_MASTER: set both/);
    expect(problemsOf({ REDIS_SENTINEL_MASTER: 'm' })[0]).toMatch(/^REDIS_SENTINELS, REDIS_SENTINEL_MASTER: set both/);
    expect(problemsOf({ REDIS_URL: 'redis://x:1', REDIS_PASSWORD: 'pw' })[0]).toMatch(
      /^REDIS_PASSWORD: only used with .*put it in the URL/,
    );
    expect(problemsOf({ REDIS_SENTINEL_PASSWORD: 'pw' })[0]).toMatch(/^REDIS_SENTINEL_PASSWORD: only used with/);
  });

  it.each(['redis-1', 'redis-1:', ':6379', 'redis-1:0', 'redis-1:70000', 'a b:1', ','])(
    'names a bad node list %j',
    (value) => {
      const [problem] = problemsOf({ REDIS_CLUSTER_NODES: value, REDIS_PREFIX: '{t}' });
      expect(problem).toMatch(/^REDIS_CLUSTER_NODES: /);
    },
  );

  it('never echoes a Redis password in its error', () => {
    const problems = problemsOf({ REDIS_URL: 'redis://x:1', REDIS_PASSWORD: 'hunter2-secret' });
    expect(problems.join('\n')).not.toContain('hunter2-secret');
  });
});

describe('hash tags', () => {
  it.each([
    ['{tts}', true],
    ['uni:{tts}', true],
    ['{a}{b}', true],
    ['tts', false],
    ['{}tts', false],
    ['{tts', false],
    ['tts}', false],
  ])('%j has one: %s', (prefix, expected) => {
    expect(hasHashTag(prefix)).toBe(expected);
  });
});
