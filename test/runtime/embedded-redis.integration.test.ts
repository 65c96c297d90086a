import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger, silentLogger } from '../../src/logger.ts';
import {
  type EmbeddedRedis,
  findEmbeddedRedis,
  pingRedis,
  startEmbeddedRedis,
} from '../../src/runtime/embedded-redis.ts';
import { waitUntil } from '../../testkit/poll.ts';

const started: EmbeddedRedis[] = [];
const dirs: string[] = [];
const sleepers: ChildProcess[] = [];

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

async function mode(path: string): Promise<string> {
  return ((await stat(path)).mode & 0o777).toString(8);
}

/** Every path under `dir` with its mode, for one readable assertion. */
async function modesUnder(dir: string): Promise<Record<string, string>> {
  const { readdir } = await import('node:fs/promises');
  const modes: Record<string, string> = {};
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true }))
    modes[join(entry.parentPath, entry.name).slice(dir.length + 1)] = await mode(join(entry.parentPath, entry.name));
  return modes;
}

/** The first reply of a plain TCP client sending one inline command, as redis-cli without -a would. */
function rawReply(port: number, command: string): Promise<string> {
  return new Promise((done, fail) => {
    const socket = connect({ host: '127.0.0.1', port }, () => socket.write(`${command}\r\n`));
    socket.once('data', (data) => {
      socket.destroy();
      done(String(data));
    });
    socket.once('error', fail);
  });
}

afterEach(async () => {
  for (const redis of started.splice(0).reverse()) await redis.stop();
  for (const sleeper of sleepers.splice(0)) sleeper.kill('SIGKILL');
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

describe('embedded redis-server', () => {
  it('starts on loopback with AOF on and records its address under the data folder', async () => {
    const dir = await dataDir();
    const redis = await start(dir);
    expect(redis.url).toMatch(/^redis:\/\/:[0-9a-f]{64}@127\.0\.0\.1:\d+$/);
    expect(await pingRedis(redis.url)).toBe(true);
    const record = JSON.parse(await readFile(join(dir, 'redis.json'), 'utf8')) as { url: string; ownerPid: number };
    expect(record).toMatchObject({ url: redis.url, ownerPid: process.pid });
    const client = new Redis(redis.url, { lazyConnect: true });
    await client.connect();
    expect(await client.config('GET', 'appendonly')).toEqual(['appendonly', 'yes']);
    expect(await client.config('GET', 'maxmemory-policy')).toEqual(['maxmemory-policy', 'noeviction']);
    expect(await client.config('GET', 'bind')).toEqual(['bind', '127.0.0.1']);
    await client.quit();
  });

  it('requires its password: a client without it is refused with NOAUTH, a wrong one with WRONGPASS', async () => {
    const redis = await start(await dataDir());
    const { port } = new URL(redis.url);
    // What the attacker did with redis-cli: write a token hash without a password.
    expect(await rawReply(Number(port), 'SET tts:feed-token:hash x')).toMatch(/^-NOAUTH/);
    expect(await pingRedis(`redis://127.0.0.1:${port}`)).toBe(false);
    expect(await pingRedis(`redis://:${'0'.repeat(64)}@127.0.0.1:${port}`)).toBe(false);
    // A fresh password per start: one read from an old record is worthless.
    await redis.stop();
    started.splice(started.indexOf(redis), 1);
    const again = await start(dirs[0] as string);
    expect(new URL(again.url).password).not.toBe(new URL(redis.url).password);
  });

  it('keeps its folders 0700 and its files 0600, data files and the password-bearing record included', async () => {
    const dir = await dataDir();
    const redis = await start(dir);
    const client = new Redis(redis.url);
    await client.set('tts:test:private', 'yes');
    // An AOF rewrite writes the RDB-format base file; a BGSAVE the dump: every file Redis makes.
    await client.bgrewriteaof();
    const idle = async () => {
      const info = await client.info('persistence');
      return /aof_rewrite_in_progress:0/.test(info) && /rdb_bgsave_in_progress:0/.test(info);
    };
    await waitUntil(idle, 'the AOF rewrite');
    await client.bgsave();
    await waitUntil(idle, 'the BGSAVE');
    await client.quit();
    const modes = await modesUnder(dir);
    expect(await mode(dir)).toBe('700');
    expect(modes).toMatchObject({ 'redis.json': '600', redis: '700', 'redis/redis.conf': '600' });
    expect(Object.keys(modes)).toEqual(expect.arrayContaining(['redis/dump.rdb', 'redis/appendonlydir']));
    for (const [path, found] of Object.entries(modes)) {
      const isDir = (await stat(join(dir, path))).isDirectory();
      expect(`${path} ${found}`).toBe(`${path} ${isDir ? '700' : '600'}`);
    }
  });

  it('makes a folder from an earlier version private: 0755 folders and 0644 data files', async () => {
    const dir = join(await dataDir(), '.data');
    await mkdir(join(dir, 'redis/appendonlydir'), { recursive: true });
    await writeFile(join(dir, 'redis/appendonlydir/old.aof'), '', { mode: 0o644 });
    for (const folder of [dir, join(dir, 'redis'), join(dir, 'redis/appendonlydir')]) await chmod(folder, 0o755);
    await start(dir);
    expect(await mode(dir)).toBe('700');
    expect(await mode(join(dir, 'redis/appendonlydir'))).toBe('700');
    expect(await mode(join(dir, 'redis/appendonlydir/old.aof'))).toBe('600');
  });

  it('never logs its password', async () => {
    const lines: string[] = [];
    const stream = new Writable({ write: (chunk: Buffer, _encoding, done) => done(void lines.push(String(chunk))) });
    const dir = await dataDir();
    const redis = await startEmbeddedRedis({
      dataDir: dir,
      logger: createLogger({ level: 'trace', destination: stream, pretty: false }),
    });
    await redis.stop();
    const password = new URL(redis.url).password;
    expect(lines.join('')).toContain('embedded Redis started');
    expect(lines.join('')).toContain('(credentials hidden)');
    expect(lines.join('')).not.toContain(password);
  });

  it('is found by later commands in the folder, and refused to a second owner while its owner lives', async () => {
    const dir = await dataDir();
    const first = await start(dir);
    expect(await findEmbeddedRedis(dir)).toBe(first.url);
    // Another live process owns it (the folder lock keeps a second demo or start from getting here).
    const owner = spawn('sleep', ['60'], { stdio: 'ignore' });
    sleepers.push(owner);
    const record = JSON.parse(await readFile(join(dir, 'redis.json'), 'utf8')) as Record<string, unknown>;
    await writeFile(join(dir, 'redis.json'), JSON.stringify({ ...record, ownerPid: owner.pid }));
    await expect(startEmbeddedRedis({ dataDir: dir, logger: silentLogger() })).rejects.toThrow(
      `belongs to pid ${owner.pid}, which is still running`,
    );
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
    const again = new Redis(second.url);
    expect(await again.get('tts:test:kept')).toBe('yes');
    await again.quit();
  });

  it('ignores a stale record whose server is gone', async () => {
    const dir = await dataDir();
    const first = await startEmbeddedRedis({ dataDir: dir, logger: silentLogger() });
    const staleUrl = first.url;
    await first.stop();
    await writeFile(join(dir, 'redis.json'), JSON.stringify({ url: staleUrl, pid: 1, ownerPid: 1, startedAt: '' }));
    const fresh = await start(dir);
    expect(fresh.url).not.toBe(staleUrl);
    expect(await pingRedis(fresh.url)).toBe(true);
  });
});

describe('embedded redis-server records', () => {
  it('treats a malformed record, or one without a password, as stale instead of failing', async () => {
    const dir = await dataDir();
    await writeFile(join(dir, 'redis.json'), '{}');
    expect(await findEmbeddedRedis(dir)).toBeUndefined();
    const redis = await start(dir);
    const { port } = new URL(redis.url);
    const unprotected = { url: `redis://127.0.0.1:${port}`, pid: redis.pid, ownerPid: process.pid, startedAt: '' };
    await writeFile(join(dir, 'redis.json'), JSON.stringify(unprotected));
    expect(await findEmbeddedRedis(dir)).toBeUndefined();
  });

  it('adopts a Redis whose owner died without stopping it, and stops it on exit', async () => {
    const dir = await dataDir();
    const orphan = await startEmbeddedRedis({ dataDir: dir, logger: silentLogger() });
    const deadPid = spawnSync('true').pid as number;
    const record = JSON.parse(await readFile(join(dir, 'redis.json'), 'utf8')) as Record<string, unknown>;
    await writeFile(join(dir, 'redis.json'), JSON.stringify({ ...record, ownerPid: deadPid }));
    const adopted = await startEmbeddedRedis({ dataDir: dir, logger: silentLogger() });
    expect(adopted).toMatchObject({ url: orphan.url, pid: record.pid });
    expect(await mode(join(dir, 'redis.json'))).toBe('600');
    await adopted.stop();
    expect(await pingRedis(orphan.url)).toBe(false);
    expect(existsSync(join(dir, 'redis.json'))).toBe(false);
    await orphan.stop();
  });
});
