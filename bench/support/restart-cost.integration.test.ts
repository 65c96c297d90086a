import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Cleanup, privateRedis, tempDir } from '../../testkit/processes.ts';
import { restartRedisFromAof } from './restart-cost.ts';

describe('restartRedisFromAof', () => {
  let cleanup: Cleanup;
  let dir: string;
  let url: string;

  beforeEach(async () => {
    cleanup = new Cleanup();
    dir = await tempDir(cleanup, 'restart-test');
    url = await privateRedis(cleanup, join(dir, 'data'));
  });

  afterEach(() => cleanup.run());

  it('restarts a new server from the AOF with every key, and logs its output', async () => {
    const before = new Redis(url);
    const pid = Number(/process_id:(\d+)/.exec(await before.info('server'))?.[1]);
    await before.mset({ a: '1', b: '2', c: '3' });
    await before.hset('h', { field: 'value' });
    // Not compared: a key with an expiry may expire during the restart.
    await before.set('lock', '1', 'PX', 60_000);
    before.disconnect();
    const log = join(dir, 'restart.log');

    // The embedded Redis keeps its files in `redis` under the data folder it was given.
    const restart = await restartRedisFromAof(cleanup, url, join(dir, 'data', 'redis'), log);

    expect(restart.keys).toBe(4);
    expect(restart.aofBytes).toBeGreaterThan(0);
    const after = new Redis(url);
    try {
      expect(await after.dbsize()).toBe(5);
      expect(await after.hget('h', 'field')).toBe('value');
      expect(Number(/process_id:(\d+)/.exec(await after.info('server'))?.[1])).not.toBe(pid);
    } finally {
      after.disconnect();
    }
    expect(await readFile(log, 'utf8')).toMatch(/DB loaded from (append only file|base file)/i);
  });
});
