import { Cluster, type Redis } from 'ioredis';
import { describe, expect, it, vi } from 'vitest';
import { RedisUnavailableError } from '../../src/lib/errors.ts';
import { DiskWaiter, RECHECK_MS } from '../../src/lib/redis-durability.ts';
import type { RedisClient } from '../../src/lib/redis-target.ts';
import { silentLogger } from '../../src/logger.ts';

const MARKER = '{tts}:durability';

/** Errors as ioredis throws them. */
function replyError(message: string): Error {
  return Object.assign(new Error(message), { name: 'ReplyError' });
}

/** A server connection that records the commands it gets; `waitaof` answers WAITAOF. */
function server(name: string, log: string[][], waitaof: () => Promise<unknown> = async () => [1, 0]) {
  return {
    options: { host: '10.0.0.1', port: Number(name.replace(/\D/g, '')) || 6379 },
    // Connected: closing sends QUIT (a connection that is not ready is only disconnected).
    status: 'ready',
    incr: vi.fn(async (key: string) => {
      log.push([name, 'INCR', key]);
      return 1;
    }),
    call: vi.fn(async (...args: string[]) => {
      log.push([name, ...args]);
      if (args[0] === 'WAITAOF') return waitaof();
      throw new Error(`unexpected ${args[0]}`);
    }),
    quit: vi.fn(async () => 'OK'),
    disconnect: vi.fn(),
  };
}

function waiter(connection: unknown, clock: () => number = () => 1) {
  const connect = vi.fn(() => connection as RedisClient);
  return {
    connect,
    disk: new DiskWaiter({ connect, markerKey: MARKER, logger: silentLogger(), timeoutMs: 1_500, clock }),
  };
}

describe('DiskWaiter', () => {
  it('writes a marker and waits for it on its own connection, opened on first use', async () => {
    const log: string[][] = [];
    const { connect, disk } = waiter(server('own', log));
    expect(connect).not.toHaveBeenCalled();
    await disk.wait();
    await disk.wait();
    expect(connect).toHaveBeenCalledTimes(1);
    expect(log).toEqual([
      ['own', 'INCR', MARKER],
      ['own', 'WAITAOF', '1', '0', '1500'],
      ['own', 'INCR', MARKER],
      ['own', 'WAITAOF', '1', '0', '1500'],
    ]);
  });

  it('on a Cluster, sends marker and wait to the primary serving the marker slot only', async () => {
    const log: string[][] = [];
    const nodes = [server('node7001', log), server('node7002', log), server('node7003', log)];
    const slots: string[][] = [];
    slots[4242] = ['10.0.0.1:7002', '10.0.0.1:7005'];
    const cluster = Object.assign(Object.create(Cluster.prototype) as object, {
      slots,
      nodes: (role: string) => (role === 'master' ? nodes : []),
      call: vi.fn(async (...args: string[]) => {
        log.push(['cluster', ...args]);
        return args[0] === 'CLUSTER' && args[1] === 'KEYSLOT' && args[2] === MARKER ? 4242 : Promise.reject();
      }),
      incr: vi.fn(),
    });
    const { disk } = waiter(cluster);
    await disk.wait();
    await disk.wait();
    expect(log).toEqual([
      ['cluster', 'CLUSTER', 'KEYSLOT', MARKER],
      ['node7002', 'INCR', MARKER],
      ['node7002', 'WAITAOF', '1', '0', '1500'],
      ['node7002', 'INCR', MARKER],
      ['node7002', 'WAITAOF', '1', '0', '1500'],
    ]);
  });

  it('opens no connection again once closed: waits asked for later reject', async () => {
    const log: string[][] = [];
    const own = server('own', log);
    const { connect, disk } = waiter(own);
    await disk.wait();
    await disk.close();
    expect(own.quit).toHaveBeenCalledOnce();
    await expect(disk.wait()).rejects.toBeInstanceOf(RedisUnavailableError);
    expect(connect).toHaveBeenCalledTimes(1);
    expect(log).toHaveLength(2);
  });

  it('throws unavailable when the marker is not on disk in time (the token must not be handed out)', async () => {
    const { disk } = waiter(server('own', [], async () => [0, 0]));
    await expect(disk.wait()).rejects.toBeInstanceOf(RedisUnavailableError);
  });

  it('waits that arrive during a wait share the next one', async () => {
    const log: string[][] = [];
    const releases: (() => void)[] = [];
    const { disk } = waiter(server('own', log, () => new Promise((resolve) => releases.push(() => resolve([1, 0])))));
    const first = disk.wait();
    await vi.waitFor(() => expect(releases).toHaveLength(1));
    const later = [disk.wait(), disk.wait(), disk.wait()];
    releases[0]?.();
    await first;
    await vi.waitFor(() => expect(releases).toHaveLength(2));
    releases[1]?.();
    await Promise.all(later);
    expect(log.filter((entry) => entry[1] === 'WAITAOF')).toHaveLength(2);
  });

  it('falls back on a server without WAITAOF or AOF, and asks again after a while', async () => {
    for (const message of [
      "ERR unknown command 'WAITAOF', with args beginning with: '1' '0' '2000' ",
      'ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.',
    ]) {
      let now = 1;
      const log: string[][] = [];
      const own = server('own', log, async () => {
        throw replyError(message);
      });
      const logger = silentLogger();
      const warn = vi.spyOn(logger, 'warn');
      const disk = new DiskWaiter({
        connect: () => own as unknown as Redis,
        markerKey: MARKER,
        logger,
        clock: () => now,
      });
      await disk.wait();
      await disk.wait();
      expect(own.call).toHaveBeenCalledTimes(1);
      expect(warn).toHaveBeenCalledTimes(1);
      now += RECHECK_MS;
      await disk.wait();
      expect(own.call).toHaveBeenCalledTimes(2);
    }
  });

  it('passes a replica refusal and lost connections on, and asks again next time', async () => {
    const replica = replyError(
      'ERR WAITAOF cannot be used with replica instances. Please also note that writes to replicas are just local and are not propagated.',
    );
    const own = server('own', [], async () => {
      throw replica;
    });
    const { disk } = waiter(own);
    await expect(disk.wait()).rejects.toBe(replica);
    await expect(disk.wait()).rejects.toBe(replica);
    expect(own.call).toHaveBeenCalledTimes(2);
  });
});
