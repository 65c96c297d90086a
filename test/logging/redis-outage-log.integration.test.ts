/**
 * What a process logs while Redis is down: the whole service (API and workers, as `start` runs them) on a
 * redis-server of the test's own, killed with `kill -9` and started again on the same port. One line when the
 * outage starts, a summary per interval with the failed attempts counted, one line when it ends; never a line
 * with a stack per reconnect attempt (BullMQ workers passed on each attempt of each of their connections:
 * about six error lines a second).
 */
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { RedisOutageLog } from '../../src/lib/redis-outage.ts';
import { createLogger } from '../../src/logger.ts';
import { freePort } from '../../src/runtime/embedded-redis.ts';
import { startService } from '../../src/runtime/service.ts';
import { Shutdown } from '../../src/runtime/shutdown.ts';
import { waitUntil } from '../../testkit/poll.ts';
import { type RedisProcess, startRedisProcess } from '../../testkit/redis-process.ts';
import { testConfig } from '../support/service.ts';

/** A summary every 1.5 s instead of every minute, so that an outage of a few seconds has some. */
const SUMMARY_MS = 1_500;
/** How long Redis stays down. */
const OUTAGE_MS = 5_000;

interface LogLine {
  level: number;
  msg: string;
  err?: { stack?: string };
  failedAttempts?: number;
  durationMs?: number;
  source?: string;
}

let redis: RedisProcess | undefined;
let shutdown: Shutdown | undefined;

afterEach(async () => {
  await shutdown?.run('test over');
  await redis?.close();
  shutdown = undefined;
  redis = undefined;
});

/** A logger whose JSON lines the test reads. */
function capturedLogger() {
  const lines: LogLine[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as LogLine);
      callback();
    },
  });
  return { logger: createLogger({ level: 'info', destination, pretty: false }), lines };
}

const ERROR = 50;

describe('logging a Redis outage', () => {
  it('logs it once when it starts, sums it up per interval, and once when it ends', async () => {
    redis = await startRedisProcess();
    const { logger, lines } = capturedLogger();
    const config = testConfig({ REDIS_URL: redis.url, PORT: String(await freePort()) });
    shutdown = new Shutdown(logger);
    await startService({
      roles: { api: true, worker: true },
      config,
      logger,
      redis: { kind: 'standalone', url: redis.url },
      shutdown,
      host: '127.0.0.1',
      redisOutage: new RedisOutageLog(logger, { summaryEveryMs: SUMMARY_MS }),
      tuning: { heartbeatMs: 500 },
    });
    const before = lines.length;

    await redis.kill();
    await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS));
    const during = lines.slice(before);
    const shown = () => JSON.stringify(during.map((line) => [line.level, line.msg, line.source]));
    const started = during.filter((line) => line.msg.includes('Redis outage started'));
    expect(started, shown()).toHaveLength(1);
    const summaries = during.filter((line) => line.msg.includes('Redis outage goes on'));
    expect(summaries.length, shown()).toBeGreaterThanOrEqual(2);
    expect(summaries.length, shown()).toBeLessThanOrEqual(Math.ceil(OUTAGE_MS / SUMMARY_MS));
    const counts = summaries.map((line) => line.failedAttempts ?? 0);
    expect(counts[0], shown()).toBeGreaterThan(1);
    expect(counts, shown()).toEqual([...counts].sort((a, b) => a - b));
    // Nothing else is repeated (one warning of a component, such as the feed cache serving stale copies, is
    // fine), and the only error lines are the start and the summaries.
    const repeated = Object.entries(Object.groupBy(during, (line) => line.msg)).filter(
      ([msg, same]) => !msg.includes('Redis outage goes on') && (same?.length ?? 0) > 1,
    );
    expect(repeated, shown()).toEqual([]);
    expect(during.filter((line) => line.level >= ERROR).length, shown()).toBe(1 + summaries.length);

    await redis.restart();
    await waitUntil(
      () => lines.some((line) => line.msg.includes('Redis outage ended')),
      'the outage ended line',
      15_000,
    );
    // Every connection is back within its longest retry delay (5 s): none of them starts another outage.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const after = lines.slice(before);
    const ended = after.filter((line) => line.msg.includes('Redis outage ended'));
    expect(ended, shown()).toHaveLength(1);
    expect(ended[0]?.durationMs).toBeGreaterThanOrEqual(OUTAGE_MS);
    expect(ended[0]?.failedAttempts).toBeGreaterThanOrEqual(counts.at(-1) ?? 0);
    expect(after.filter((line) => line.msg.includes('Redis outage started'))).toHaveLength(1);
  }, 60_000);
});
