import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { silentLogger } from '../../src/logger.ts';
import { startEmbeddedRedis } from '../../src/runtime/embedded-redis.ts';
import { isAlive } from '../../src/runtime/folder-lock.ts';
import { ensureChromium } from '../../testkit/chromium.ts';
import { findOrInstall } from '../../testkit/debian-packages.ts';
import { RADICALE_PATHS } from '../../testkit/radicale.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A real redis-server started for this test run; each test uses its own key prefix. */
    redisUrl: string;
    /** The Chromium executable of the page tests (Debian's `chromium`, installed when missing). */
    chromiumPath: string;
    /**
     * Debian's nginx (`nginx-light`, installed when missing and root) that runs deploy/nginx.conf; undefined
     * where it cannot be had, and then those tests are skipped, except in CI, where that fails the run.
     */
    nginxPath: string | undefined;
  }
}

/**
 * Starts one real `redis-server` on a free loopback port for the whole run (installing Debian's package
 * first when it is missing and we are root), and stops it afterwards. Finds Debian's `chromium` for the page
 * tests, `nginx-light` for the proxy tests and `radicale` for the CalDAV tests, installing them the same way.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  await stopOrphanedRedis();
  const dataDir = await mkdtemp(join(tmpdir(), DATA_DIR_PREFIX));
  const redis = await startEmbeddedRedis({ dataDir, logger: silentLogger(), persistence: false, shared: false });
  await writeFile(join(dataDir, OWNER_FILE), JSON.stringify({ owner: process.pid, redis: redis.pid }));
  project.provide('redisUrl', redis.url);
  project.provide('chromiumPath', ensureChromium());
  const nginxPath = findOrInstall('nginx-light', ['/usr/sbin/nginx']);
  if (nginxPath === undefined && process.env.CI === 'true')
    throw new Error('the proxy tests need nginx: install it with `sudo apt-get install nginx-light` (Debian/Ubuntu)');
  project.provide('nginxPath', nginxPath);
  // Installed here, once, rather than by the first CalDAV test file (testkit/radicale.ts finds it then).
  if (findOrInstall('radicale', RADICALE_PATHS) === undefined && process.env.CI === 'true')
    throw new Error('the CalDAV tests need Radicale: install it with `sudo apt-get install radicale` (Debian/Ubuntu)');
  return async () => {
    await redis.stop();
    await rm(dataDir, { recursive: true, force: true });
  };
}

/** The test runs' Redis data folders, in the system's temporary folder. */
const DATA_DIR_PREFIX = 'tts-test-redis-';
/** Which run owns a folder and which redis-server it started. */
const OWNER_FILE = 'owner.json';

/**
 * Stops the redis-server of a test run that ended without its teardown (killed, or its machine's session cut):
 * its owner is gone, its server would run on and skew the next measurement. Folders of live runs are left alone.
 */
async function stopOrphanedRedis(): Promise<void> {
  for (const name of await readdir(tmpdir())) {
    if (!name.startsWith(DATA_DIR_PREFIX)) continue;
    const dir = join(tmpdir(), name);
    const owned = await readFile(join(dir, OWNER_FILE), 'utf8').then(
      (text) => JSON.parse(text) as { owner?: number; redis?: number },
      () => undefined,
    );
    if (owned?.owner === undefined || isAlive(owned.owner)) continue;
    if (owned.redis !== undefined && isAlive(owned.redis) && (await isRedisServer(owned.redis)))
      process.kill(owned.redis, 'SIGKILL');
    await rm(dir, { recursive: true, force: true });
  }
}

/** Whether `pid` is still a redis-server (a reused pid of another program is left alone). */
async function isRedisServer(pid: number): Promise<boolean> {
  const command = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
  return command.startsWith('redis-server');
}
