import { describe, expect, it, vi } from 'vitest';
import { memoryRoom, RESUME_AFTER_PROBES, RedisFullGuard } from '../../src/jobs/redis-full-guard.ts';
import { silentLogger } from '../../src/logger.ts';

const OOM = () => new Error("OOM command not allowed when used memory > 'maxmemory'.");

const MiB = 1024 * 1024;

describe('memoryRoom', () => {
  it('reads INFO memory: no limit, or use below it', () => {
    expect(memoryRoom('# Memory\r\nused_memory:1000\r\nmaxmemory:0\r\n')).toBe('room');
    expect(memoryRoom('used_memory:1000\r\nmaxmemory:2000\r\n')).toBe('room');
    expect(memoryRoom('used_memory:1000\r\nmaxmemory:1000\r\n', 1)).toBe('full');
    expect(memoryRoom('used_memory:1000\r\nused_memory_human:1K\r\nmaxmemory:1\r\n')).toBe('full');
    expect(memoryRoom('garbage')).toBe('full');
  });

  it('counts room at once only below 95% of the limit or 16 MiB under it; above that, under the limit', () => {
    expect(memoryRoom('used_memory:96\r\nmaxmemory:100\r\n')).toBe('under');
    expect(memoryRoom('used_memory:95\r\nmaxmemory:100\r\n')).toBe('under');
    expect(memoryRoom('used_memory:94\r\nmaxmemory:100\r\n')).toBe('room');
    expect(memoryRoom('used_memory:100\r\nmaxmemory:100\r\n')).toBe('full');
    expect(memoryRoom(`used_memory:${1024 * MiB - 16 * MiB}\r\nmaxmemory:${1024 * MiB}\r\n`)).toBe('room');
    expect(memoryRoom(`used_memory:${1024 * MiB - 15 * MiB}\r\nmaxmemory:${1024 * MiB}\r\n`)).toBe('under');
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

  it('resumes the workers once use has stayed under the limit, though above 95%, for several probes', async () => {
    vi.useFakeTimers();
    try {
      const workers = [{ pause: vi.fn(async () => undefined), resume: vi.fn() }];
      const limit = 100 * MiB;
      let info = `used_memory:${limit}\r\nmaxmemory:${limit}\r\n`;
      const guard = new RedisFullGuard(workers, { info: async () => info } as never, 'tts', silentLogger(), 1_000);
      expect(guard.handle(OOM())).toBe(true);
      info = `used_memory:${0.97 * limit}\r\nmaxmemory:${limit}\r\n`;
      await vi.advanceTimersByTimeAsync((RESUME_AFTER_PROBES - 1) * 1_000);
      expect(guard.full).toBe(true);
      // A probe at the limit starts the count again.
      info = `used_memory:${limit}\r\nmaxmemory:${limit}\r\n`;
      await vi.advanceTimersByTimeAsync(1_000);
      info = `used_memory:${0.97 * limit}\r\nmaxmemory:${limit}\r\n`;
      await vi.advanceTimersByTimeAsync((RESUME_AFTER_PROBES - 1) * 1_000);
      expect(guard.full).toBe(true);
      expect(workers[0]?.resume).not.toHaveBeenCalled();
      await vi.advanceTimersByTimeAsync(1_000);
      expect(guard.full).toBe(false);
      expect(workers[0]?.resume).toHaveBeenCalledOnce();
      guard.close();
    } finally {
      vi.useRealTimers();
    }
  });
});
