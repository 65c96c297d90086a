/** The whole API app wired to the fake Google server, for the Google route tests. */
import { UnrecoverableError, Worker } from 'bullmq';
import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { inject } from 'vitest';
import { buildApp } from '../../src/http/app.ts';
import { QUEUE, type RefreshJobData } from '../../src/jobs/contract.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { placeholderName } from '../../src/timetable/calendar-name.ts';
import { sourceOf } from '../../src/timetable/source.ts';
import { type FakeGoogle, startFakeGoogle } from '../../testkit/fake-google/index.ts';
import { testContext } from '../support/service.ts';
import { memoryLogger } from '../upstream/local-server.ts';
import { storeTimetable } from './helpers.ts';

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
  const university = fetchingWorker(context);
  return {
    fake,
    ctx: context,
    app,
    logs: log.output,
    close: async () => {
      await university.close();
      await app.close();
      await close();
      await fake.close();
    },
  };
}

/**
 * A refresh worker standing in for the university: every refresh stores an empty timetable named `Группа <id>`
 * (as a first fetch of a timetable without classes would), unless the source is stored already; ids from
 * {@link UNKNOWN_FROM} up are unknown to it, remembered as missing as the real refresh does. Connecting
 * Google needs one successful fetch; tests that want a named timetable store it before connecting.
 */
export const UNKNOWN_FROM = 1e12;

function fetchingWorker(ctx: ServiceContext): { close(): Promise<void> } {
  const connection = new Redis(inject('redisUrl'), { maxRetriesPerRequest: null });
  const worker = new Worker<RefreshJobData>(
    QUEUE.refresh,
    async (job) => {
      const { source } = job.data;
      if (await ctx.feeds.exists(source)) return { outcome: 'unchanged', occurrences: 0, pushJobs: 0 };
      const { kind, id } = sourceOf(source);
      if (Number(id) >= UNKNOWN_FROM) {
        // What the real refresh does with the university's 404 for an id it does not know.
        await ctx.registry.rememberMissing(source, 'Группа не найдена');
        throw new UnrecoverableError('not found');
      }
      const name = kind === 'personal' ? 'Моё расписание' : placeholderName({ kind, id: Number(id) });
      await storeTimetable(ctx, source, [], { name });
      return { outcome: 'published', occurrences: 0, pushJobs: 0 };
    },
    { connection, prefix: ctx.keys.queuePrefix, concurrency: 4 },
  );
  worker.on('error', () => {});
  return {
    close: async () => {
      await worker.close();
      connection.disconnect();
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
