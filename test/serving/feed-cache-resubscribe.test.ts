import { EventEmitter } from 'node:events';
import { describe, expect, it, vi } from 'vitest';
import { RedisOutageLog } from '../../src/lib/redis-outage.ts';
import { silentLogger } from '../../src/logger.ts';
import { FeedCache } from '../../src/serving/feed-cache.ts';

const FAILED = 'feed-updates resubscription failed; trying again';

describe('FeedCache resubscription', () => {
  it('logs a resubscription that keeps failing now and then, not only its first failure', async () => {
    vi.useFakeTimers();
    try {
      // A connection back up whose SUBSCRIBE keeps being refused (e.g. ACL or a Cluster node moving).
      const subscriber = Object.assign(new EventEmitter(), {
        status: 'ready',
        subscribe: vi.fn(async () => undefined),
        quit: vi.fn(async () => 'OK'),
        disconnect: vi.fn(),
      });
      const warn = vi.fn();
      const logger = { warn, info: vi.fn(), error: vi.fn(), debug: vi.fn() };
      const cache = new FeedCache({
        feeds: { get: async () => undefined },
        subscriber: subscriber as never,
        channel: 'tts:feed-updates',
        logger: logger as never,
        outage: new RedisOutageLog(silentLogger()),
      });
      await cache.start();
      subscriber.subscribe.mockRejectedValue(new Error('ERR refused'));
      subscriber.emit('close');
      subscriber.emit('ready');
      // Backoff doubles from 100 ms to 5 s: 30 attempts take about 2 minutes.
      await vi.advanceTimersByTimeAsync(150_000);
      const attempts = subscriber.subscribe.mock.calls.length - 1;
      const logged = warn.mock.calls.filter((call) => call[1] === FAILED).length;
      expect(attempts).toBeGreaterThan(24);
      expect(logged).toBe(Math.ceil(attempts / 12));
      await cache.stop();
    } finally {
      vi.useRealTimers();
    }
  });
});
