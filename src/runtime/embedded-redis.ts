import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, readFile, rm, writeFile, rename, open } from 'node:fs/promises';
import { createServer, connect } from 'node:net';
import { join, resolve } from 'node:path';
import type { Logger } from '../logger.ts';
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
  /** True when this process started it (and so stops it); false when it reused one already running. */
  owned: boolean;
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

/** Thrown when the embedded `redis-server` does not come up; the message carries the tail of its log. */
export class EmbeddedRedisError extends Error {
  override name = 'EmbeddedRedisError';
}

const RECORD_FILE = 'redis.json';

/** Sends PING over a raw socket; true on `+PONG` within the timeout. No client library, no retries. */
export function pingRedis(url: string, timeoutMs = 1_000): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((done) => {
    const socket = connect({ host: hostname, port: Number(port || 6379) });
    const finish = (ok: boolean) => {
      socket.destroy();
      done(ok);
    };
    socket.setTimeout(timeoutMs, () => finish(false));
    socket.once('error', () => finish(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (data) => finish(data.toString().startsWith('+PONG')));
  });
}

/** The URL of a live embedded Redis recorded under `dataDir`, or undefined. */
export async function findEmbeddedRedis(dataDir: string): Promise<string | undefined> {
  const record = await readRecord(dataDir);
  if (record && (await pingRedis(record.url))) return record.url;
  return undefined;
}

async function readRecord(dataDir: string): Promise<EmbeddedRedisRecord | undefined> {
  try {
    return JSON.parse(await readFile(join(dataDir, RECORD_FILE), 'utf8')) as EmbeddedRedisRecord;
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
    const existing = await findEmbeddedRedis(dataDir);
    if (existing) {
      logger.info({ redisUrl: existing }, 'reusing the embedded Redis already running for this folder');
      return { url: existing, owned: false, stop: async () => {} };
    }
  }
  ensureRedisServer(logger);
  const redisDir = join(dataDir, 'redis');
  await mkdir(redisDir, { recursive: true });
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}`;
  const child = await spawnRedis(redisDir, port, persistence);
  await waitUntilReady(child, url, join(redisDir, 'redis.log'));
  if (shared) await writeRecord(dataDir, { url, pid: child.pid ?? 0, ownerPid: process.pid, startedAt: new Date().toISOString() });
  logger.info({ redisUrl: url, dataDir: redisDir }, 'embedded Redis started');
  return { url, owned: true, stop: () => stopRedis(child, shared ? dataDir : undefined, logger) };
}

async function spawnRedis(redisDir: string, port: number, persistence: boolean): Promise<ChildProcess> {
  const log = await open(join(redisDir, 'redis.log'), 'a');
  const args = [
    '--port', String(port), '--bind', '127.0.0.1', '--dir', redisDir, '--daemonize', 'no',
    '--appendonly', persistence ? 'yes' : 'no', '--save', '', '--maxmemory-policy', 'noeviction',
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
    if (await pingRedis(url, 250)) return;
    if (exited) break;
    await new Promise((wake) => setTimeout(wake, 50));
  }
  child.kill('SIGKILL');
  const tail = (await readFile(logFile, 'utf8').catch(() => '')).split('\n').slice(-8).join('\n');
  throw new EmbeddedRedisError(`embedded redis-server did not start on ${url}${exited ? ' (it exited)' : ''}; its log ends:\n${tail}`);
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
