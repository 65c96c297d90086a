import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { silentLogger } from '../../src/logger.ts';
import { startEmbeddedRedis } from '../../src/runtime/embedded-redis.ts';
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
  const dataDir = await mkdtemp(join(tmpdir(), 'tts-test-redis-'));
  const redis = await startEmbeddedRedis({ dataDir, logger: silentLogger(), persistence: false, shared: false });
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
