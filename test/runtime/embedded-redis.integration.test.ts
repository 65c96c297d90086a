import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.ts';
import {
  type EmbeddedRedis,
  findEmbeddedRedis,
  pingRedis,
  startEmbeddedRedis,
} from '../../src/runtime/embedded-redis.ts';

const started: EmbeddedRedis[] = [];
const dirs: string[] = [];

async function dataDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tts-embedded-'));
  dirs.push(dir);
  return dir;
}

async function start(dir: string): Promise<EmbeddedRedis> {
  const redis = await startEmbeddedRedis({ dataDir: dir, logger: silentLogger() });
  started.push(redis);
  return redis;
}

afterEach(async () => {
  for (const redis of started.splice(0).reverse()) await redis.stop();
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

describe('embedded redis-server', () => {
  it('starts on loopback with AOF on and records its address under the data folder', async () => {
    const dir = await dataDir();
    const redis = await start(dir);
    expect(redis.owned).toBe(true);
    expect(redis.url).toMatch(/^redis:\/\/127\.0\.0\.1:\d+$/);
    expect(await pingRedis(redis.url)).toBe(true);
    const record = JSON.parse(await readFile(join(dir, 'redis.json'), 'utf8')) as { url: string; ownerPid: number };
    expect(record).toMatchObject({ url: redis.url, ownerPid: process.pid });
    const client = new Redis(redis.url, { lazyConnect: true });
    await client.connect();
    expect(await client.config('GET', 'appendonly')).toEqual(['appendonly', 'yes']);
    expect(await client.config('GET', 'maxmemory-policy')).toEqual(['maxmemory-policy', 'noeviction']);
    await client.quit();
  });

  it('is found and reused by a second command in the same folder, which does not stop it', async () => {
    const dir = await dataDir();
    const first = await start(dir);
    expect(await findEmbeddedRedis(dir)).toBe(first.url);
    const second = await start(dir);
    expect(second).toMatchObject({ owned: false, url: first.url });
    await second.stop();
    expect(await pingRedis(first.url)).toBe(true);
  });

  it('stops on request, removes its record, and keeps data across restarts (AOF)', async () => {
    const dir = await dataDir();
    const first = await startEmbeddedRedis({ dataDir: dir, logger: silentLogger() });
    const client = new Redis(first.url);
    await client.set('tts:test:kept', 'yes');
    await client.quit();
    await first.stop();
    expect(await pingRedis(first.url)).toBe(false);
    expect(existsSync(join(dir, 'redis.json'))).toBe(false);
    expect(await findEmbeddedRedis(dir)).toBeUndefined();

    const second = await start(dir);
    expect(second.owned).toBe(true);
    const again = new Redis(second.url);
    expect(await again.get('tts:test:kept')).toBe('yes');
    await again.quit();
  });

  it('ignores a stale record whose server is gone', async () => {
    const dir = await dataDir();
    const first = await startEmbeddedRedis({ dataDir: dir, logger: silentLogger() });
    const staleUrl = first.url;
    await first.stop();
    await import('node:fs/promises').then((fs) =>
      fs.writeFile(join(dir, 'redis.json'), JSON.stringify({ url: staleUrl, pid: 1, ownerPid: 1, startedAt: '' })),
    );
    const fresh = await start(dir);
    expect(fresh.owned).toBe(true);
    expect(await pingRedis(fresh.url)).toBe(true);
  });
});

describe('embedded redis-server records', () => {
  it('treats a malformed record as stale instead of failing', async () => {
    const dir = await dataDir();
    await import('node:fs/promises').then((fs) => fs.writeFile(join(dir, 'redis.json'), '{}'));
    expect(await findEmbeddedRedis(dir)).toBeUndefined();
    const redis = await start(dir);
    expect(redis.owned).toBe(true);
  });

  it('adopts a Redis whose owner died without stopping it, and stops it on exit', async () => {
    const dir = await dataDir();
    const orphan = await startEmbeddedRedis({ dataDir: dir, logger: silentLogger() });
    const { spawnSync } = await import('node:child_process');
    const deadPid = spawnSync('true').pid as number;
    const record = JSON.parse(await readFile(join(dir, 'redis.json'), 'utf8')) as Record<string, unknown>;
    await import('node:fs/promises').then((fs) =>
      fs.writeFile(join(dir, 'redis.json'), JSON.stringify({ ...record, ownerPid: deadPid })),
    );
    const adopted = await startEmbeddedRedis({ dataDir: dir, logger: silentLogger() });
    expect(adopted).toMatchObject({ owned: true, url: orphan.url, pid: record.pid });
    await adopted.stop();
    expect(await pingRedis(orphan.url)).toBe(false);
    expect(existsSync(join(dir, 'redis.json'))).toBe(false);
    await orphan.stop();
  });
});
