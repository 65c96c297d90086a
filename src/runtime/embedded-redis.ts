import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, open, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import type { Logger } from '../logger.ts';
import { EmbeddedRedisError } from './errors.ts';
import { ensureRedisServer } from './redis-install.ts';

/** What `.data/redis.json` records about a running embedded Redis, so later commands in the folder find it. */
export interface EmbeddedRedisRecord {
  url: string;
  pid: number;
  ownerPid: number;
  startedAt: string;
}

/** A Redis this process uses without a configured `REDIS_URL`. */
export interface EmbeddedRedis {
  url: string;
  /** True when this process started (or adopted) it and so stops it; false when it reused a running one. */
  owned: boolean;
  /** The redis-server process id, when owned: an emergency exit kills it synchronously. */
  pid?: number | undefined;
  stop(): Promise<void>;
}

/** Options for {@link startEmbeddedRedis}. */
export interface EmbeddedRedisOptions {
  dataDir: string;
  logger: Logger;
  /** AOF persistence under `dataDir/redis` (default true); tests turn it off. */
  persistence?: boolean;
  /** Record the address in `dataDir/redis.json` and reuse a live one found there (default true). */
  shared?: boolean;
}

const RECORD_FILE = 'redis.json';

/** Sends one inline command over a raw socket; the first reply chunk, or undefined. No client, no retries. */
function rawCommand(url: string, command: string, timeoutMs: number): Promise<string | undefined> {
  const { hostname, port } = new URL(url);
  return new Promise((done) => {
    const socket = connect({ host: hostname, port: Number(port || 6379) });
    const finish = (reply: string | undefined) => {
      socket.destroy();
      done(reply);
    };
    socket.setTimeout(timeoutMs, () => finish(undefined));
    socket.once('error', () => finish(undefined));
    socket.once('connect', () => socket.write(`${command}\r\n`));
    socket.once('data', (data) => finish(data.toString()));
  });
}

/** Sends PING; true on `+PONG` within the timeout. */
export async function pingRedis(url: string, timeoutMs = 1_000): Promise<boolean> {
  return (await rawCommand(url, 'PING', timeoutMs))?.startsWith('+PONG') === true;
}

/** The `process_id` of the Redis answering at `url`, so that we never mistake another server for ours. */
async function redisProcessId(url: string, timeoutMs: number): Promise<number | undefined> {
  const match = /process_id:(\d+)/.exec((await rawCommand(url, 'INFO server', timeoutMs)) ?? '');
  return match ? Number(match[1]) : undefined;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The live embedded Redis recorded under `dataDir` (the recorded process answers at the recorded URL). */
async function liveRecord(dataDir: string): Promise<EmbeddedRedisRecord | undefined> {
  const record = await readRecord(dataDir);
  if (record && (await redisProcessId(record.url, 1_000)) === record.pid) return record;
  return undefined;
}

/** The URL of a live embedded Redis recorded under `dataDir`, or undefined. */
export async function findEmbeddedRedis(dataDir: string): Promise<string | undefined> {
  return (await liveRecord(dataDir))?.url;
}

const recordSchema = z.object({
  url: z.string().regex(/^redis:\/\/127\.0\.0\.1:\d+$/),
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

async function writeRecord(dataDir: string, record: EmbeddedRedisRecord): Promise<void> {
  const file = join(dataDir, RECORD_FILE);
  await writeFile(`${file}.tmp`, `${JSON.stringify(record, null, 2)}\n`);
  await rename(`${file}.tmp`, file);
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
 * Finds or starts the private `redis-server` of a data folder: reuses a live one recorded in
 * `dataDir/redis.json`, otherwise installs the binary if needed and can, starts one on a free loopback port
 * (AOF on, data in `dataDir/redis`), waits for PING and records its address.
 */
export async function startEmbeddedRedis(options: EmbeddedRedisOptions): Promise<EmbeddedRedis> {
  const { logger, persistence = true, shared = true } = options;
  const dataDir = resolve(options.dataDir);
  if (shared) {
    const existing = await liveRecord(dataDir);
    if (existing && isAlive(existing.ownerPid)) {
      logger.info({ redisUrl: existing.url }, 'reusing the embedded Redis already running for this folder');
      return { url: existing.url, owned: false, stop: async () => {} };
    }
    if (existing) {
      // Its owner died without stopping it (kill -9, crash): adopt it, so that it is stopped on our exit.
      await writeRecord(dataDir, { ...existing, ownerPid: process.pid });
      logger.info({ redisUrl: existing.url }, 'adopted the embedded Redis left running by an earlier process');
      return { url: existing.url, owned: true, pid: existing.pid, stop: () => stopAdopted(existing, dataDir, logger) };
    }
  }
  ensureRedisServer(logger);
  const redisDir = join(dataDir, 'redis');
  await mkdir(redisDir, { recursive: true });
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}`;
  const child = await spawnRedis(redisDir, port, persistence);
  await waitUntilReady(child, url, join(redisDir, 'redis.log'));
  if (shared)
    await writeRecord(dataDir, {
      url,
      pid: child.pid ?? 0,
      ownerPid: process.pid,
      startedAt: new Date().toISOString(),
    });
  logger.info({ redisUrl: url, dataDir: redisDir }, 'embedded Redis started');
  return { url, owned: true, pid: child.pid, stop: () => stopRedis(child, shared ? dataDir : undefined, logger) };
}

async function spawnRedis(redisDir: string, port: number, persistence: boolean): Promise<ChildProcess> {
  const log = await open(join(redisDir, 'redis.log'), 'a');
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    redisDir,
    '--daemonize',
    'no',
    '--appendonly',
    persistence ? 'yes' : 'no',
    '--save',
    '',
    '--maxmemory-policy',
    'noeviction',
  ];
  // Its own process group, so that Ctrl-C reaches only us and our ordered shutdown stops Redis last.
  const child = spawn('redis-server', args, { stdio: ['ignore', log.fd, log.fd], detached: true });
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
    `embedded redis-server did not start on ${url}${exited ? ' (it exited)' : ''}; its log ends:\n${tail}`,
  );
}

async function stopAdopted(record: EmbeddedRedisRecord, dataDir: string, logger: Logger): Promise<void> {
  if (isAlive(record.pid)) process.kill(record.pid, 'SIGTERM');
  const deadline = Date.now() + 10_000;
  while (isAlive(record.pid) && Date.now() < deadline) await new Promise((wake) => setTimeout(wake, 50));
  if ((await readRecord(dataDir))?.pid === record.pid) await rm(join(dataDir, RECORD_FILE), { force: true });
  logger.info('embedded Redis stopped');
}

async function stopRedis(child: ChildProcess, dataDir: string | undefined, logger: Logger): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((done) => child.once('exit', done));
    child.kill('SIGTERM'); // redis-server flushes the AOF and exits on SIGTERM
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }
  if (dataDir) {
    const record = await readRecord(dataDir);
    if (record?.pid === child.pid) await rm(join(dataDir, RECORD_FILE), { force: true });
  }
  logger.info('embedded Redis stopped');
}
