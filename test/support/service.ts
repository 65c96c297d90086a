import { inject } from 'vitest';
import type { CalDavClientFactory } from '../../src/caldav/caldav-client.ts';
import { type Config, loadConfig } from '../../src/config.ts';
import type { CalendarClientFactory } from '../../src/google/calendar-client.ts';
import { type Logger, silentLogger } from '../../src/logger.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { openServiceContext } from '../../src/runtime/service-context.ts';
import { deletePrefix, uniquePrefix } from '../../testkit/redis-prefix.ts';

/** Tests take the shared Redis prefix helpers from here along with the service context. */
export { deletePrefix, uniquePrefix };

/** A 32-byte SECRET_KEY and an ADMIN_TOKEN for tests (never real secrets). */
export const TEST_SECRET_KEY = '8f32551effa4f0bc84471877166934d9e65899db6a4a94b7ba256f9b0f567865';
export const TEST_ADMIN_TOKEN = 'test-admin-token-0123456789';

/** A configuration for tests: the run's Redis, a unique prefix, test secrets, fast retries; `env` overrides. */
export function testConfig(env: Record<string, string | undefined> = {}): Config {
  return loadConfig({
    REDIS_URL: inject('redisUrl'),
    REDIS_PREFIX: uniquePrefix(),
    ADMIN_TOKEN: TEST_ADMIN_TOKEN,
    SECRET_KEY: TEST_SECRET_KEY,
    REFRESH_ATTEMPTS: '2',
    REFRESH_BACKOFF: '50ms',
    CONFIRM_DELAY: '200ms',
    LOG_LEVEL: 'silent',
    // CalDAV servers in tests (Radicale, fault proxies) listen on loopback.
    CALDAV_ALLOW_PRIVATE: 'true',
    // Webhook receivers in tests listen on loopback.
    WEBHOOK_ALLOW_PRIVATE: 'true',
    ...env,
  });
}

/** A service context on the run's Redis under a unique prefix; `close` also deletes every key it made. */
export async function testContext(
  env: Record<string, string | undefined> = {},
  options: {
    logger?: Logger;
    now?: () => number;
    wallClock?: () => number;
    googleFactory?: CalendarClientFactory;
    caldavFactory?: CalDavClientFactory;
  } = {},
): Promise<{ context: ServiceContext; close: () => Promise<void> }> {
  const config = testConfig(env);
  const opened = openServiceContext({
    config,
    logger: options.logger ?? silentLogger(),
    redis: config.redisTarget ?? missingRedis(),
    role: 'test',
    ...(options.now ? { now: options.now } : {}),
    ...(options.wallClock ? { wallClock: options.wallClock } : {}),
    ...(options.googleFactory ? { googleFactory: options.googleFactory } : {}),
    ...(options.caldavFactory ? { caldavFactory: options.caldavFactory } : {}),
  });
  return {
    context: opened.context,
    close: async () => {
      await opened.close();
      // Sentinel and Cluster tests run on Redis processes of their own, which they stop.
      if (config.redisUrl) await deletePrefix(config.redisUrl, config.redisPrefix);
    },
  };
}

function missingRedis(): never {
  throw new Error('the test configuration has no Redis (REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES)');
}
