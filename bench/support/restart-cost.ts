/**
 * The restart cost of a large deployment, measured once the largest step's feeds are all published: how long the
 * benchmark's Redis takes to load its AOF when restarted, and how long a freshly started api (cold feed
 * cache) takes to serve its first 1,000 distinct feeds.
 *
 * The steps run without persistence (an AOF written all along would slow the cycles the benchmark measures).
 * Here AOF is switched on with `CONFIG SET appendonly yes`, which writes the whole dataset as the AOF's base,
 * in the RDB encoding that Redis 7 uses for it by default; Redis is then shut down (it syncs the AOF) and
 * started again with `appendonly yes` on the same port. That AOF is freshly rewritten: an RDB preamble and no
 * increments, the best case. A production AOF also replays the commands written since its last rewrite.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { open, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Redis, ReplyError } from 'ioredis';
import { type Cleanup, rawRequest, sleep, stopChild } from '../../testkit/processes.ts';

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
  /** From `CONFIG SET appendonly yes` until Redis reported the rewrite of the base ended, and ended well. */
  rewriteSeconds: number;
  /** From spawning redis-server until it answers and `INFO persistence` says `loading:0`. */
  loadSeconds: number;
  /**
   * Keys without an expiry before the shutdown, equal to the restarted server's (checked). Keys with one
   * (locks, rate windows) may expire during the restart, so they are not compared.
   */
  keys: number;
}

/** How long the AOF rewrite, the shutdown and the load may take before the measurement fails. */
const REWRITE_TIMEOUT_MS = 600_000;
const SHUTDOWN_TIMEOUT_MS = 120_000;
const LOAD_TIMEOUT_MS = 600_000;

/**
 * Switches AOF on in the Redis at `url` whose data folder is `redisDir` (the embedded Redis's: its
 * `redis.conf` is there), shuts it down and starts it again with `appendonly yes`, its output appended to
 * `logFile`; the new process is stopped at cleanup. Fails unless the rewrite ended well, a new process
 * answers and it holds as many keys as the old one did. Nothing else may use that Redis meanwhile (clients
 * reconnect on their own afterwards).
 */
export async function restartRedisFromAof(
  cleanup: Cleanup,
  url: string,
  redisDir: string,
  logFile: string,
): Promise<RedisRestart> {
  const admin = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
  admin.on('error', () => undefined); // The shutdown ends the connection; real failures reject the commands.
  await admin.connect();
  let rewriteSeconds: number;
  let oldPid: number;
  let keys: number;
  try {
    const rewriteStarted = Date.now();
    await admin.config('SET', 'appendonly', 'yes');
    await until(REWRITE_TIMEOUT_MS, 'the AOF rewrite did not end', async () => {
      const info = persistence(await admin.info('persistence'));
      return info.aof_enabled === '1' && info.aof_rewrite_in_progress === '0' && info.aof_rewrite_scheduled === '0';
    });
    rewriteSeconds = (Date.now() - rewriteStarted) / 1000;
    const status = persistence(await admin.info('persistence')).aof_last_bgrewrite_status;
    if (status !== 'ok') throw new Error(`the AOF rewrite ended with aof_last_bgrewrite_status:${status}`);
    keys = lastingKeys(await admin.info('keyspace'));
    oldPid = serverPid(await admin.info('server'));
    // The connection ends with the server, so a successful SHUTDOWN never answers; an error reply (e.g. the
    // AOF could not be synced) means the server is still running.
    await admin.shutdown().catch((error: unknown) => {
      if (error instanceof ReplyError) throw error;
    });
  } finally {
    admin.disconnect();
  }
  await until(SHUTDOWN_TIMEOUT_MS, `Redis (pid ${oldPid}) did not exit after SHUTDOWN`, async () => !isAlive(oldPid));
  const aofBytes = await folderBytes(join(redisDir, 'appendonlydir'));
  const log = await open(logFile, 'a');
  const started = Date.now();
  const child = spawn('redis-server', [join(redisDir, 'redis.conf'), '--appendonly', 'yes'], {
    stdio: ['ignore', log.fd, log.fd],
    detached: true,
  });
  await log.close();
  cleanup.add('restarted redis', () => stopChild(child));
  const restarted = await untilLoaded(url, child, logFile);
  const loadSeconds = (Date.now() - started) / 1000;
  if (restarted.pid === oldPid) throw new Error(`the Redis answering at ${url} is still the old process ${oldPid}`);
  if (restarted.keys !== keys)
    throw new Error(
      `Redis held ${keys} keys without an expiry before the restart and ${restarted.keys} after loading its AOF`,
    );
  return { aofBytes, rewriteSeconds, loadSeconds, keys };
}

/** Polls `done` every 50 ms until it holds; throws `what` after `timeoutMs`. */
async function until(timeoutMs: number, what: string, done: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`${what} within ${timeoutMs / 1000} s`);
    await sleep(50);
  }
}

/**
 * Polls until Redis at `url` answers PING and has finished loading its data; answers its process id and key
 * count. Fails at once if `child` exits.
 */
async function untilLoaded(url: string, child: ChildProcess, logFile: string): Promise<{ pid: number; keys: number }> {
  const deadline = Date.now() + LOAD_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`the restarted Redis exited (${child.exitCode ?? child.signalCode}); see ${logFile}`);
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
      if ((await probe.ping()) === 'PONG' && persistence(await probe.info('persistence')).loading === '0')
        return { pid: serverPid(await probe.info('server')), keys: lastingKeys(await probe.info('keyspace')) };
    } catch {
      // Not listening yet, or still loading.
    } finally {
      probe.disconnect();
    }
    await sleep(20);
  }
  throw new Error(`Redis did not load its AOF within ${LOAD_TIMEOUT_MS / 1000} s; see ${logFile}`);
}

function persistence(info: string): Record<string, string> {
  return Object.fromEntries(info.split('\r\n').map((line) => line.split(':', 2) as [string, string]));
}

/** Keys without an expiry over every database, from `INFO keyspace` (`db0:keys=12,expires=3,…`). */
function lastingKeys(info: string): number {
  let sum = 0;
  for (const [, keys, expires] of info.matchAll(/^db\d+:keys=(\d+),expires=(\d+)/gm))
    sum += Number(keys) - Number(expires);
  return sum;
}

function serverPid(info: string): number {
  return Number(persistence(info).process_id);
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

/** How the api answered a pass of feed requests. */
export interface FeedPass {
  feeds: number;
  seconds: number;
  notOk: number;
}

/**
 * GETs each of `paths` once from the api at `apiUrl`, 32 at a time, with the encodings of {@link encodingFor};
 * answers how long it took and how many answers were not 200.
 */
export async function requestEachFeed(apiUrl: string, paths: readonly string[]): Promise<FeedPass> {
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

/**
 * A pass's figure, `feeds, seconds`; or a FAILED line when an answer was not 200: a time that includes errors
 * (a 503 answers at once) measures nothing.
 */
export function feedPassFigure(pass: FeedPass): string {
  return pass.notOk === 0
    ? `${pass.feeds}, ${pass.seconds.toFixed(2)}`
    : `FAILED: ${pass.notOk} of ${pass.feeds} answers not 200 (time not valid)`;
}
