/** The whole API app wired to the fake Google server, for the Google route tests. */
import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { inject } from 'vitest';
import { buildApp } from '../../src/http/app.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { type FakeGoogle, startFakeGoogle } from '../fake-google/index.ts';
import { testContext } from '../support/service.ts';
import { memoryLogger } from '../upstream/local-server.ts';

/** Where the service says it lives: the OAuth redirect URI is built from it. */
export const PUBLIC_URL = 'https://timetable.example';

/** A running app on the fake Google server, with everything it logged. */
export interface GoogleApp {
  fake: FakeGoogle;
  ctx: ServiceContext;
  app: FastifyInstance;
  logs(): string;
  close(): Promise<void>;
}

/** The Google settings of a context talking to `fake`. */
export function googleEnv(fake: FakeGoogle): Record<string, string> {
  return {
    PUBLIC_URL,
    GOOGLE_CLIENT_ID: fake.clientId,
    GOOGLE_CLIENT_SECRET: fake.clientSecret,
    GOOGLE_API_ROOT_URL: fake.rootUrl,
    GOOGLE_OAUTH_TOKEN_URL: fake.tokenUrl,
    GOOGLE_OAUTH_AUTH_URL: fake.authUrl,
  };
}

/** Starts the fake Google server and an app on a fresh key prefix; `env` overrides (e.g. unset the client). */
export async function startGoogleApp(env: Record<string, string | undefined> = {}): Promise<GoogleApp> {
  const fake = await startFakeGoogle();
  const log = memoryLogger();
  const { context, close } = await testContext(
    // These suites connect dozens of times from one address; the connect limits have their own tests.
    { ...googleEnv(fake), LOG_LEVEL: 'debug', GOOGLE_CONNECTS_PER_CLIENT: '1000/1m', ...env },
    { logger: log.logger },
  );
  const app = await buildApp(context, { logger: log.logger });
  await app.ready();
  return {
    fake,
    ctx: context,
    app,
    logs: log.output,
    close: async () => {
      await app.close();
      await close();
      await fake.close();
    },
  };
}

/** Every string value stored under the context's prefix (hash fields and values included). */
export async function storedText(ctx: ServiceContext): Promise<string> {
  const redis = new Redis(inject('redisUrl'));
  try {
    const parts: string[] = [];
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${ctx.config.redisPrefix}:*`, 'COUNT', 1000);
      cursor = next;
      for (const key of keys) parts.push(key, await valueText(redis, key));
    } while (cursor !== '0');
    return parts.join('\n');
  } finally {
    redis.disconnect();
  }
}

async function valueText(redis: Redis, key: string): Promise<string> {
  const type = await redis.type(key);
  if (type === 'string') return (await redis.get(key)) ?? '';
  if (type === 'hash') return JSON.stringify(await redis.hgetall(key));
  if (type === 'set') return (await redis.smembers(key)).join(' ');
  if (type === 'zset') return (await redis.zrange(key, '0', '-1')).join(' ');
  if (type === 'list') return (await redis.lrange(key, 0, -1)).join(' ');
  return '';
}

/** Bearer authorization headers. */
export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
