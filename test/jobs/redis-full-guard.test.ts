import { describe, expect, it, vi } from 'vitest';
import { hasRoom, RedisFullGuard } from '../../src/jobs/redis-full-guard.ts';
import { silentLogger } from '../../src/logger.ts';

const OOM = () => new Error("OOM command not allowed when used memory > 'maxmemory'.");

describe('hasRoom', () => {
  it('reads INFO memory: no limit, or use below it', () => {
    expect(hasRoom('# Memory\r\nused_memory:1000\r\nmaxmemory:0\r\n')).toBe(true);
    expect(hasRoom('used_memory:1000\r\nmaxmemory:2000\r\n')).toBe(true);
    expect(hasRoom('used_memory:1000\r\nmaxmemory:1000\r\n', 1)).toBe(false);
    expect(hasRoom('used_memory:1000\r\nused_memory_human:1K\r\nmaxmemory:1\r\n')).toBe(false);
    expect(hasRoom('garbage')).toBe(false);
  });

  it('counts room only below 95% of the limit, so that a Redis just under it does not resume the workers', () => {
    expect(hasRoom('used_memory:96\r\nmaxmemory:100\r\n')).toBe(false);
    expect(hasRoom('used_memory:95\r\nmaxmemory:100\r\n')).toBe(false);
    expect(hasRoom('used_memory:94\r\nmaxmemory:100\r\n')).toBe(true);
  });
});

describe('RedisFullGuard', () => {
  it('pauses every worker once on a refused write, and resumes them when Redis has room', async () => {
    vi.useFakeTimers();
    try {
      const workers = [0, 1].map(() => ({ pause: vi.fn(async () => undefined), resume: vi.fn() }));
      let info = 'used_memory:1000\r\nmaxmemory:1\r\n';
      const guard = new RedisFullGuard(workers, { info: async () => info } as never, 'tts', silentLogger(), 1_000);
      expect(guard.handle(new Error('some script error'))).toBe(false);
      expect(guard.handle(OOM())).toBe(true);
      expect(guard.handle(OOM())).toBe(true);
      expect(workers.map((worker) => worker.pause.mock.calls.length)).toEqual([1, 1]);
      await vi.advanceTimersByTimeAsync(3_000);
      expect(guard.full).toBe(true);
      // Just under the limit (keys freed by a job ending) is not room yet.
      info = 'used_memory:980\r\nmaxmemory:1000\r\n';
      await vi.advanceTimersByTimeAsync(3_000);
      expect(guard.full).toBe(true);
      info = 'used_memory:1000\r\nmaxmemory:0\r\n';
      await vi.advanceTimersByTimeAsync(1_000);
      expect(guard.full).toBe(false);
      expect(workers.map((worker) => worker.resume.mock.calls.length)).toEqual([1, 1]);
      guard.close();
    } finally {
      vi.useRealTimers();
    }
  });
});
