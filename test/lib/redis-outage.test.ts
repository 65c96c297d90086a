import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { OUTAGE_SUMMARY_MS, RedisOutageLog } from '../../src/lib/redis-outage.ts';
import { createLogger } from '../../src/logger.ts';

interface Line {
  level: number;
  msg: string;
  source?: string;
  failedAttempts?: number;
  durationMs?: number;
  downForMs?: number;
  lastError?: string;
  err?: { message: string };
}

function captured() {
  const lines: Line[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Line);
      callback();
    },
  });
  return { logger: createLogger({ level: 'info', destination, pretty: false }), lines };
}

const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6379'), { code: 'ECONNREFUSED' });

describe('RedisOutageLog', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('logs an outage once, a summary a minute by default, and its end with duration and count', () => {
    const { logger, lines } = captured();
    const outage = new RedisOutageLog(logger, { clock: () => Date.now() });
    outage.failed('api', refused());
    for (let second = 1; second <= 150; second++) {
      vi.advanceTimersByTime(1_000);
      // Six reports a second, as several connections and BullMQ workers retried.
      for (let attempt = 0; attempt < 6; attempt++) outage.failed(`worker:refresh`, new Error('Connection is closed.'));
    }
    outage.restored('api');
    expect(lines.map((line) => line.msg)).toEqual([
      'Redis outage started: cannot reach Redis; retrying in the background',
      'Redis outage goes on: still cannot reach Redis',
      'Redis outage goes on: still cannot reach Redis',
      'Redis outage ended: Redis answers again',
    ]);
    expect(lines[0]).toMatchObject({
      level: 50,
      source: 'api',
      err: { message: 'connect ECONNREFUSED 127.0.0.1:6379' },
    });
    expect(lines[1]).toMatchObject({ level: 50, downForMs: OUTAGE_SUMMARY_MS, lastError: 'Connection is closed.' });
    expect(lines[2]).toMatchObject({ downForMs: 2 * OUTAGE_SUMMARY_MS });
    expect(lines[3]).toMatchObject({ level: 30, source: 'api', durationMs: 150_000, failedAttempts: 1 + 150 * 6 });
  });

  it('says nothing when nothing failed, and stops with the outage (and when closed)', () => {
    const { logger, lines } = captured();
    const outage = new RedisOutageLog(logger, { summaryEveryMs: 1_000 });
    outage.restored('api');
    expect(lines).toEqual([]);
    outage.failed('api', refused());
    outage.restored('api');
    vi.advanceTimersByTime(5_000);
    expect(lines).toHaveLength(2);
    outage.failed('api', refused());
    expect(outage.down).toBe(true);
    outage.close();
    vi.advanceTimersByTime(5_000);
    outage.failed('api', refused());
    outage.restored('api');
    expect(lines).toHaveLength(3);
  });
});
