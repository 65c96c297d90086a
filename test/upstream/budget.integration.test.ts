import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { silentLogger } from '../../src/logger.ts';
import { redisUpstreamBudget } from '../../src/upstream/budget.ts';
import { createUniversityClient, type UniversityClient } from '../../src/upstream/client.ts';
import { UpstreamBudgetError } from '../../src/upstream/errors.ts';
import { deletePrefix, uniquePrefix } from '../support/service.ts';
import { type LocalServer, startLocalServer } from './local-server.ts';

const prefix = uniquePrefix('upstream-budget');
let server: LocalServer;
const arrivals: number[] = [];
const connections: Redis[] = [];
const clients: UniversityClient[] = [];

beforeAll(async () => {
  server = await startLocalServer();
  server.handle((_req, res) => {
    arrivals.push(performance.now());
    res.setHeader('content-type', 'application/json');
    res.end('{"success": true, "users": []}');
  });
});
afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
  for (const redis of connections) redis.disconnect();
  await server.close();
  await deletePrefix(inject('redisUrl'), prefix);
});

/** A client as one service process builds it: its own Redis connection, the one shared budget key. */
function processClient(key: string, requestsPerSecond: number): UniversityClient {
  const redis = new Redis(inject('redisUrl'));
  connections.push(redis);
  const client = createUniversityClient({
    baseUrl: server.url,
    logger: silentLogger(),
    retry: { attempts: 1 },
    budget: redisUpstreamBudget(redis, key, requestsPerSecond),
  });
  clients.push(client);
  return client;
}

/** The most arrivals inside any window `[t, t + width]`. */
function busiestWindow(times: readonly number[], width: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  let start = 0;
  for (let end = 0; end < sorted.length; end += 1) {
    while ((sorted[end] as number) - (sorted[start] as number) > width) start += 1;
    most = Math.max(most, end - start + 1);
  }
  return most;
}

describe('the shared upstream budget', () => {
  it('holds UPSTREAM_RATE_LIMIT over two processes together, request-path calls and jobs alike', async () => {
    arrivals.length = 0;
    const key = `${prefix}:rate:shared`;
    const rate = 40;
    const pair = [processClient(key, rate), processClient(key, rate)];
    const started = performance.now();
    await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        (pair[i % 2] as UniversityClient).searchEmployees('Иванов', i % 3 === 0 ? { budgetWaitMs: 10_000 } : {}),
      ),
    );
    const elapsed = performance.now() - started;
    expect(arrivals).toHaveLength(60);
    // Bursts of a tenth of a second's worth (4), then 40/s: at most 44 in any second, 60 take ≥ 1.4 s.
    expect(busiestWindow(arrivals, 1_000)).toBeLessThanOrEqual(44);
    expect(elapsed).toBeGreaterThanOrEqual(1_350);
  });

  it('refuses a request-path call at once when the budget is used up, without asking the university', async () => {
    arrivals.length = 0;
    const client = processClient(`${prefix}:rate:tight`, 1);
    await client.searchEmployees('Петров', { budgetWaitMs: 0 });
    const started = performance.now();
    const refused = await client.searchEmployees('Петров', { budgetWaitMs: 200 }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(UpstreamBudgetError);
    expect((refused as UpstreamBudgetError).retryAfterMs).toBeGreaterThan(500);
    expect(performance.now() - started).toBeLessThan(150);
    expect(arrivals).toHaveLength(1);
    // A background call (no wait limit) waits for its token instead.
    await client.searchEmployees('Петров');
    expect(arrivals).toHaveLength(2);
  });
});
