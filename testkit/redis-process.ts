/**
 * A redis-server of a test's own, on a free loopback port, that the test may kill, pause and start again on the
 * same port and data folder (the run's shared Redis must never be harmed). AOF on, `appendfsync everysec`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { probeRedis } from '../src/lib/redis-connection.ts';
import { freePort } from '../src/runtime/embedded-redis.ts';
import { waitUntil } from './poll.ts';

/** A redis-server the test controls. */
export interface RedisProcess {
  url: string;
  /** `kill -9`: no shutdown, no last fsync. Resolves once it exited. */
  kill(): Promise<void>;
  /** `SIGSTOP` / `SIGCONT`: the sockets stay open, nothing answers. */
  pause(): void;
  resume(): void;
  /** Starts it again on the same port and data folder (it loads its AOF). */
  restart(): Promise<void>;
  /** Stops it and deletes its data folder. */
  close(): Promise<void>;
}

/** Starts a redis-server with AOF on a free port; `args` adds settings (`--maxmemory 10mb`). */
export async function startRedisProcess(args: string[] = []): Promise<RedisProcess> {
  const port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), 'tts-outage-redis-'));
  const url = `redis://127.0.0.1:${port}`;
  const settings = [
    ...['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', ''],
    ...['--appendonly', 'yes', '--appendfsync', 'everysec', '--maxmemory-policy', 'noeviction', ...args],
  ];
  let child: ChildProcess | undefined;
  const start = async () => {
    child = spawn('redis-server', settings, { stdio: 'ignore' });
    await waitUntil(
      () =>
        probeRedis(url, 500).then(
          () => true,
          () => false,
        ),
      `redis-server on ${port}`,
      20_000,
    );
  };
  const kill = async () => {
    const running = child;
    if (running === undefined || running.exitCode !== null || running.signalCode !== null) return;
    const exited = new Promise((done) => running.once('exit', done));
    running.kill('SIGKILL');
    await exited;
  };
  await start();
  return {
    url,
    kill,
    pause: () => child?.kill('SIGSTOP'),
    resume: () => child?.kill('SIGCONT'),
    restart: start,
    close: async () => {
      child?.kill('SIGCONT');
      await kill();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
