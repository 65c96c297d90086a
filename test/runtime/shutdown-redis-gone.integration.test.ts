/**
 * SIGTERM and SIGINT end `start`, `api`, `worker` and `demo` within 10 s, with exit code 0, whatever state Redis is
 * in: killed (`kill -9`, the clients reconnecting) or paused (`SIGSTOP`, nothing answers). Real child processes of
 * bin/timetable-sync.js and a real redis-server of the test's own; `docker stop` and Compose kill a process 10 s
 * after SIGTERM, so a shutdown that waits for Redis must never reach that.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/runtime/embedded-redis.ts';
import { isAlive } from '../../src/runtime/folder-lock.ts';
import { startSimulator } from '../../src/simulator/index.ts';
import { waitUntil } from '../../testkit/poll.ts';
import { type RedisProcess, startRedisProcess } from '../../testkit/redis-process.ts';
import { startCli } from '../support/cli.ts';
import { TEST_ADMIN_TOKEN, TEST_SECRET_KEY, uniquePrefix } from '../support/service.ts';

/** What a supervisor allows: Docker's and Compose's SIGKILL comes 10 s after SIGTERM. */
const EXIT_WITHIN_MS = 10_000;

let sim: Awaited<ReturnType<typeof startSimulator>>;
const children: ChildProcess[] = [];
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  sim = await startSimulator({ port: 0, seed: 3, groups: 4, employees: 4, users: 2 });
});
afterEach(async () => {
  for (const child of children.splice(0))
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(async () => {
  await sim?.close();
});

/** A child whose stdout and stderr are kept, for waiting on them and for failure messages. */
function spawnRole(args: string[], env: Record<string, string>, cwd?: string) {
  const child = startCli(args, { env, ...(cwd ? { cwd } : {}) });
  children.push(child);
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return { child, output: () => output };
}

async function privateRedis(): Promise<RedisProcess> {
  const redis = await startRedisProcess();
  cleanups.push(redis.close);
  return redis;
}

async function roleEnvironment(redis: RedisProcess): Promise<Record<string, string>> {
  return {
    REDIS_URL: redis.url,
    REDIS_PREFIX: uniquePrefix('gone'),
    UNIVERSITY_API_URL: sim.url,
    ADMIN_TOKEN: TEST_ADMIN_TOKEN,
    SECRET_KEY: TEST_SECRET_KEY,
    LOG_LEVEL: 'warn',
    PORT: String(await freePort()),
  };
}

/** Sends `signal` and resolves with the exit code and how long the exit took (rejects after 20 s). */
async function stopWith(
  role: { child: ChildProcess; output: () => string },
  signal: NodeJS.Signals,
): Promise<{ code: number | null; tookMs: number }> {
  const { child } = role;
  const exit = new Promise<number | null>((done, fail) => {
    const timer = setTimeout(() => fail(new Error(`still running 20 s after ${signal}:\n${role.output()}`)), 20_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      done(code);
    });
  });
  const sent = performance.now();
  child.kill(signal);
  const code = await exit;
  return { code, tookMs: performance.now() - sent };
}

const cases: { role: 'start' | 'api' | 'worker'; redis: 'killed' | 'paused'; signal: NodeJS.Signals }[] = [
  { role: 'start', redis: 'killed', signal: 'SIGTERM' },
  { role: 'start', redis: 'paused', signal: 'SIGTERM' },
  { role: 'api', redis: 'killed', signal: 'SIGINT' },
  { role: 'api', redis: 'paused', signal: 'SIGTERM' },
  { role: 'worker', redis: 'killed', signal: 'SIGTERM' },
  { role: 'worker', redis: 'paused', signal: 'SIGINT' },
];

describe('shutdown with Redis gone', () => {
  it.each(cases)(
    '`$role` with Redis $redis exits 0 within 10 s of $signal',
    async ({ role, redis: state, signal }) => {
      const redis = await privateRedis();
      const running = spawnRole([role], await roleEnvironment(redis));
      await waitUntil(() => running.output().includes('is running on'), `${role} running`, 30_000);
      if (state === 'killed') {
        await redis.kill();
        // Its clients have lost Redis and reconnect: the state that kept the process alive. (What it logs first
        // depends on which client notices first; each reconnect attempt is refused.)
        await waitUntil(
          () => /ECONNREFUSED|Redis outage started/.test(running.output()),
          `${role} noticing the outage`,
        );
      } else redis.pause();
      const { code, tookMs } = await stopWith(running, signal);
      expect(code, running.output()).toBe(0);
      expect(tookMs, running.output()).toBeLessThan(EXIT_WITHIN_MS);
    },
    60_000,
  );

  it('`demo` with its embedded Redis paused exits 0 within 10 s of SIGTERM, and stops that Redis', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'tts-gone-demo-'));
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    const demo = spawnRole(
      ['demo', '--port', '0', '--simulator-port', String(await freePort())],
      { DATA_DIR: dataDir, LOG_LEVEL: 'warn' },
      dataDir,
    );
    await waitUntil(() => demo.output().includes('demo is running'), 'demo running', 45_000);
    const { pid } = JSON.parse(await readFile(join(dataDir, 'redis.json'), 'utf8')) as { pid: number };
    cleanups.push(async () => {
      if (!isAlive(pid)) return;
      process.kill(pid, 'SIGCONT');
      process.kill(pid, 'SIGKILL');
    });
    process.kill(pid, 'SIGSTOP');
    const { code, tookMs } = await stopWith(demo, 'SIGTERM');
    expect(code, demo.output()).toBe(0);
    expect(tookMs, demo.output()).toBeLessThan(EXIT_WITHIN_MS);
    await waitUntil(() => !isAlive(pid), 'the embedded redis-server gone', 5_000);
  }, 90_000);
});
