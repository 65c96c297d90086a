/**
 * Issue 16's restart cost, measured once the largest step's feeds are all published: how long the
 * benchmark's Redis takes to load its AOF when restarted, and how long a freshly started api (cold feed
 * cache) takes to serve its first 1,000 distinct feeds.
 *
 * The steps run without persistence (an AOF written all along would slow the cycles the benchmark measures).
 * Here AOF is switched on with `CONFIG SET appendonly yes`, which writes the whole dataset as the AOF's base,
 * in the RDB encoding that Redis 7 uses for it by default, as any production AOF is after its first rewrite;
 * Redis is then shut down (it syncs the AOF) and started again with `appendonly yes` on the same port.
 */
import { spawn } from 'node:child_process';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { type Cleanup, rawRequest, sleep, stopChild } from './processes.ts';

/** Distinct feeds a fresh api serves in the measurement. */
export const FIRST_FEEDS = 1_000;

/**
 * The `Accept-Encoding` of calendar clients, one pattern of 20 requests repeated: mostly `gzip` (Google's
 * and Microsoft's fetchers), some also offering brotli, and a few asking for the identity body (no header).
 */
const ENCODING_PATTERN: readonly (string | undefined)[] = [
  ...Array<string>(14).fill('gzip'),
  ...Array<string>(3).fill('gzip, deflate, br'),
  ...Array<undefined>(3).fill(undefined),
];

/** The `Accept-Encoding` of the `index`-th request of the measurement (undefined: none sent). */
export function encodingFor(index: number): string | undefined {
  return ENCODING_PATTERN[index % ENCODING_PATTERN.length];
}

/**
 * `count` distinct paths spread evenly over `paths` (every k-th), so that they keep the proportions of the
 * mix (groups, teachers and personal subscriptions are listed in blocks).
 */
export function spreadSample<T>(paths: readonly T[], count: number): T[] {
  if (count >= paths.length) return [...paths];
  return Array.from({ length: count }, (_, index) => paths[Math.floor((index * paths.length) / count)] as T);
}

/** What restarting Redis took. */
export interface RedisRestart {
  /** Every file of the AOF folder (base, increments, manifest). */
  aofBytes: number;
  /** From `CONFIG SET appendonly yes` until the rewrite of the base ended. */
  rewriteSeconds: number;
  /** From spawning redis-server until it answers and `INFO persistence` says `loading:0`. */
  loadSeconds: number;
}

/**
 * Switches AOF on in the Redis at `url` whose data folder is `redisDir` (the embedded Redis's: its
 * `redis.conf` is there), shuts it down and starts it again with `appendonly yes`; the new process is stopped
 * at cleanup. Nothing else may use that Redis meanwhile (clients reconnect on their own afterwards).
 */
export async function restartRedisFromAof(cleanup: Cleanup, url: string, redisDir: string): Promise<RedisRestart> {
  const admin = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
  await admin.connect();
  const rewriteStarted = Date.now();
  let oldPid: number;
  try {
    await admin.config('SET', 'appendonly', 'yes');
    for (;;) {
      const info = persistence(await admin.info('persistence'));
      if (info.aof_enabled === '1' && info.aof_rewrite_in_progress === '0' && info.aof_rewrite_scheduled === '0') break;
      await sleep(100);
    }
    oldPid = Number(/process_id:(\d+)/.exec(await admin.info('server'))?.[1]);
    // The connection ends with the server: the command's answer never comes.
    await admin.shutdown().catch(() => undefined);
  } finally {
    admin.disconnect();
  }
  const rewriteSeconds = (Date.now() - rewriteStarted) / 1000;
  while (isAlive(oldPid)) await sleep(50);
  const aofBytes = await folderBytes(join(redisDir, 'appendonlydir'));
  const started = Date.now();
  const child = spawn('redis-server', [join(redisDir, 'redis.conf'), '--appendonly', 'yes'], {
    stdio: 'ignore',
    detached: true,
  });
  cleanup.add('restarted redis', () => stopChild(child));
  await untilLoaded(url);
  return { aofBytes, rewriteSeconds, loadSeconds: (Date.now() - started) / 1000 };
}

/** Polls until Redis at `url` answers PING and has finished loading its data. */
async function untilLoaded(url: string, timeoutMs = 600_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const probe = new Redis(url, {
      lazyConnect: true,
      enableReadyCheck: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      connectTimeout: 1_000,
    });
    probe.on('error', () => undefined);
    try {
      await probe.connect();
      // While loading, Redis answers PING with a LOADING error, and INFO with `loading:1`.
      if ((await probe.ping()) === 'PONG' && persistence(await probe.info('persistence')).loading === '0') return;
    } catch {
      // Not listening yet, or still loading.
    } finally {
      probe.disconnect();
    }
    await sleep(20);
  }
  throw new Error(`Redis did not load its AOF within ${timeoutMs / 1000} s`);
}

function persistence(info: string): Record<string, string> {
  return Object.fromEntries(info.split('\r\n').map((line) => line.split(':', 2) as [string, string]));
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function folderBytes(dir: string): Promise<number> {
  const names = await readdir(dir);
  const sizes = await Promise.all(names.map(async (name) => (await stat(join(dir, name))).size));
  return sizes.reduce((sum, size) => sum + size, 0);
}

/** How a fresh api served its first feeds. */
export interface FirstFeeds {
  feeds: number;
  seconds: number;
  notOk: number;
}

/**
 * GETs each of `paths` once from the api at `apiUrl`, 32 at a time, with the encodings of {@link encodingFor};
 * answers how long it took and how many answers were not 200.
 */
export async function serveFirstFeeds(apiUrl: string, paths: readonly string[]): Promise<FirstFeeds> {
  let next = 0;
  let notOk = 0;
  const started = Date.now();
  const lane = async () => {
    for (let index = next++; index < paths.length; index = next++) {
      const encoding = encodingFor(index);
      const answer = await rawRequest(`${apiUrl}${paths[index]}`, {
        headers: encoding === undefined ? {} : { 'Accept-Encoding': encoding },
      });
      if (answer.status !== 200) notOk += 1;
    }
  };
  await Promise.all(Array.from({ length: 32 }, lane));
  return { feeds: paths.length, seconds: (Date.now() - started) / 1000, notOk };
}
