import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { open, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { probeRedis, redactRedisUrl, withRedisProbe } from '../lib/redis-connection.ts';
import type { Logger } from '../logger.ts';
import { EmbeddedRedisError } from './errors.ts';
import { isAlive } from './folder-lock.ts';
import { ensurePrivateDir, restrictTree, writePrivateFile } from './private-files.ts';
import { ensureRedisServer } from './redis-install.ts';

/** What `.data/redis.json` records about a running embedded Redis, so later commands in the folder find it. */
export interface EmbeddedRedisRecord {
  url: string;
  pid: number;
  ownerPid: number;
  startedAt: string;
}

/** The Redis this process started (or adopted) without a configured `REDIS_URL`, and stops on exit. */
export interface EmbeddedRedis {
  /** `redis://:<password>@127.0.0.1:<port>`: never print or log it as it is (redactRedisUrl). */
  url: string;
  /** The redis-server process id: an emergency exit kills it synchronously. */
  pid?: number | undefined;
  /**
   * Stops it: SIGTERM (it writes its AOF and exits), and SIGKILL when it has not exited within `budgetMs` less a
   * moment (default {@link STOP_WAIT_MS}). A paused one (SIGSTOP) is continued, so that it can act on the SIGTERM.
   */
  stop(budgetMs?: number): Promise<void>;
}

/** How long a stop waits for redis-server to exit on SIGTERM by default, before SIGKILL. */
export const STOP_WAIT_MS = 10_000;

/** Kept from a stop's budget for SIGKILL and the exit it causes. */
const KILL_MS = 250;

/** Options for {@link startEmbeddedRedis}. */
export interface EmbeddedRedisOptions {
  dataDir: string;
  logger: Logger;
  /** AOF persistence under `dataDir/redis` (default true); tests turn it off. */
  persistence?: boolean;
  /** Record the address in `dataDir/redis.json` and adopt an orphaned one found there (default true). */
  shared?: boolean;
}

const RECORD_FILE = 'redis.json';

/** Sends PING with the URL's password; true when it answers within the timeout. */
export async function pingRedis(url: string, timeoutMs = 1_000): Promise<boolean> {
  return probeRedis(url, timeoutMs).then(
    () => true,
    () => false,
  );
}

/** The `process_id` of the Redis answering at `url`, so that we never mistake another server for ours. */
async function redisProcessId(url: string, timeoutMs: number): Promise<number | undefined> {
  const info = await withRedisProbe(url, timeoutMs, (redis) => redis.info('server')).catch(() => '');
  const match = /process_id:(\d+)/.exec(info);
  return match ? Number(match[1]) : undefined;
}

/** The live embedded Redis recorded under `dataDir` (the recorded process answers at the recorded URL). */
async function liveRecord(dataDir: string): Promise<EmbeddedRedisRecord | undefined> {
  const record = await readRecord(dataDir);
  if (record && (await redisProcessId(record.url, 1_000)) === record.pid) return record;
  return undefined;
}

/** The URL (with its password) of a live embedded Redis recorded under `dataDir`, or undefined. */
export async function findEmbeddedRedis(dataDir: string): Promise<string | undefined> {
  return (await liveRecord(dataDir))?.url;
}

const recordSchema = z.object({
  // A record of an earlier version, without a password, is stale: its Redis is not protected.
  url: z.string().regex(/^redis:\/\/:[0-9a-f]{64}@127\.0\.0\.1:\d+$/),
  pid: z.number().int().positive(),
  ownerPid: z.number().int().positive(),
  startedAt: z.string(),
});

/** The record of `dataDir`, or undefined when there is none or it is unreadable (then it is stale). */
async function readRecord(dataDir: string): Promise<EmbeddedRedisRecord | undefined> {
  try {
    const parsed = recordSchema.safeParse(JSON.parse(await readFile(join(dataDir, RECORD_FILE), 'utf8')));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** Mode 0600: the record carries the password, and `resync`/`render` of the same user read it. */
async function writeRecord(dataDir: string, record: EmbeddedRedisRecord): Promise<void> {
  await writePrivateFile(join(dataDir, RECORD_FILE), `${JSON.stringify(record, null, 2)}\n`);
}

/** A TCP port that was free a moment ago on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? done(address.port) : fail(new Error('no port'))));
    });
  });
}

/**
 * Finds or starts the private `redis-server` of a data folder: adopts one recorded in `dataDir/redis.json`
 * whose owner died, otherwise installs the binary if needed and can, and starts one on a free loopback port
 * with a fresh password (AOF on, data in `dataDir/redis`, folders 0700 and files 0600), waits for it and
 * records its address, password included, in the 0600 record. The caller holds the folder's instance lock
 * (folder-lock.ts), so a recorded Redis whose owner lives belongs to a process outside that rule: refused.
 */
export async function startEmbeddedRedis(options: EmbeddedRedisOptions): Promise<EmbeddedRedis> {
  const { logger, persistence = true, shared = true } = options;
  const dataDir = resolve(options.dataDir);
  await ensurePrivateDir(dataDir);
  if (shared) {
    const existing = await liveRecord(dataDir);
    if (existing && existing.ownerPid !== process.pid && isAlive(existing.ownerPid))
      throw new EmbeddedRedisError(
        `the embedded Redis of ${dataDir} belongs to pid ${existing.ownerPid}, which is still running`,
      );
    if (existing) {
      // Its owner died without stopping it (kill -9, crash): adopt it, so that it is stopped on our exit.
      await writeRecord(dataDir, { ...existing, ownerPid: process.pid });
      logger.info(
        { redis: redactRedisUrl(existing.url) },
        'adopted the embedded Redis left running by an earlier process',
      );
      return {
        url: existing.url,
        pid: existing.pid,
        stop: (budgetMs) => stopAdopted(existing, dataDir, logger, budgetMs),
      };
    }
  }
  ensureRedisServer(logger);
  const redisDir = join(dataDir, 'redis');
  await ensurePrivateDir(redisDir, { own: true });
  await restrictTree(redisDir);
  const port = await freePort();
  const password = randomBytes(32).toString('hex');
  const url = `redis://:${password}@127.0.0.1:${port}`;
  const child = await spawnRedis({ redisDir, port, password, persistence });
  await waitUntilReady(child, url, join(redisDir, 'redis.log'));
  if (shared)
    await writeRecord(dataDir, {
      url,
      pid: child.pid ?? 0,
      ownerPid: process.pid,
      startedAt: new Date().toISOString(),
    });
  logger.info({ redis: redactRedisUrl(url), dataDir: redisDir }, 'embedded Redis started');
  return {
    url,
    pid: child.pid,
    stop: (budgetMs) => stopRedis(child, shared ? dataDir : undefined, logger, budgetMs),
  };
}

/** A value for redis.conf: double-quoted, so that a data folder with spaces stays one argument. */
function confValue(value: string): string {
  return `"${value.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;
}

async function spawnRedis(settings: {
  redisDir: string;
  port: number;
  password: string;
  persistence: boolean;
}): Promise<ChildProcess> {
  const { redisDir, port, password, persistence } = settings;
  // The password goes in a 0600 file, not on the command line, where `ps` shows it to every local user.
  const confFile = join(redisDir, 'redis.conf');
  const conf = [
    `port ${port}`,
    'bind 127.0.0.1',
    'protected-mode yes',
    `requirepass ${password}`,
    `dir ${confValue(redisDir)}`,
    'daemonize no',
    `appendonly ${persistence ? 'yes' : 'no'}`,
    'save ""',
    'maxmemory-policy noeviction',
  ];
  await writePrivateFile(confFile, `${conf.join('\n')}\n`);
  const log = await open(join(redisDir, 'redis.log'), 'a', 0o600);
  // Redis creates its AOF and RDB files with the mode our umask allows: 077 makes them 0600 and its folders
  // 0700. spawn() forks before it returns, so the narrower umask covers the child and nothing else of ours.
  const umask = process.umask(0o077);
  let child: ChildProcess;
  try {
    // Its own process group, so that Ctrl-C reaches only us and our ordered shutdown stops Redis last.
    child = spawn('redis-server', [confFile], { stdio: ['ignore', log.fd, log.fd], detached: true });
  } finally {
    process.umask(umask);
  }
  child.once('spawn', () => void log.close());
  child.once('error', () => void log.close());
  return child;
}

async function waitUntilReady(child: ChildProcess, url: string, logFile: string): Promise<void> {
  let exited = false;
  child.once('exit', () => (exited = true));
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (exited) break;
    // Ask for the process id, not just PONG: another server may have taken the port between our probe and
    // our spawn, and then ours exits while theirs answers.
    if ((await redisProcessId(url, 250)) === child.pid) return;
    await new Promise((wake) => setTimeout(wake, 50));
  }
  child.kill('SIGKILL');
  const tail = (await readFile(logFile, 'utf8').catch(() => '')).split('\n').slice(-8).join('\n');
  throw new EmbeddedRedisError(
    `embedded redis-server did not start on ${redactRedisUrl(url)}${exited ? ' (it exited)' : ''}; its log ends:\n${tail}`,
  );
}

/** How long to wait for an exit on SIGTERM, out of a stop's budget. */
function termWaitMs(budgetMs: number | undefined): number {
  return Math.max(0, (budgetMs ?? STOP_WAIT_MS) - KILL_MS);
}

async function stopAdopted(
  record: EmbeddedRedisRecord,
  dataDir: string,
  logger: Logger,
  budgetMs: number | undefined,
): Promise<void> {
  if (isAlive(record.pid)) terminate((signal) => process.kill(record.pid, signal));
  const deadline = Date.now() + termWaitMs(budgetMs);
  while (isAlive(record.pid) && Date.now() < deadline) await new Promise((wake) => setTimeout(wake, 50));
  if (isAlive(record.pid)) {
    process.kill(record.pid, 'SIGKILL');
    logger.warn({ pid: record.pid }, 'embedded Redis did not exit on SIGTERM in time: killed');
  }
  if ((await readRecord(dataDir))?.pid === record.pid) await rm(join(dataDir, RECORD_FILE), { force: true });
  logger.info('embedded Redis stopped');
}

/** SIGTERM (redis-server writes its AOF and exits), then SIGCONT: a paused one acts on SIGTERM only once continued. */
function terminate(send: (signal: NodeJS.Signals) => void): void {
  send('SIGTERM');
  send('SIGCONT');
}

async function stopRedis(
  child: ChildProcess,
  dataDir: string | undefined,
  logger: Logger,
  budgetMs: number | undefined,
): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((done) => child.once('exit', done));
    terminate((signal) => child.kill(signal));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      logger.warn({ pid: child.pid }, 'embedded Redis did not exit on SIGTERM in time: killed');
    }, termWaitMs(budgetMs));
    await exited;
    clearTimeout(timer);
  }
  if (dataDir) {
    const record = await readRecord(dataDir);
    if (record?.pid === child.pid) await rm(join(dataDir, RECORD_FILE), { force: true });
  }
  logger.info('embedded Redis stopped');
}
