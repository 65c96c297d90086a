/** Debian's `chromium` for the page tests, found or installed like `redis-server` (see global-setup.ts). */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/** Where Debian's package puts the browser. */
export const CHROMIUM_PATHS = ['/usr/bin/chromium', '/usr/bin/chromium-browser'];

function chromiumPath(): string | undefined {
  return CHROMIUM_PATHS.find((path) => existsSync(path));
}

/** `apt-get ARGS` without prompts, waiting for a dpkg lock held by another install. */
function aptGet(...args: string[]): boolean {
  const result = spawnSync(
    'env',
    ['DEBIAN_FRONTEND=noninteractive', 'apt-get', '-o', 'DPkg::Lock::Timeout=300', ...args],
    { stdio: 'ignore', timeout: 900_000 },
  );
  return result.status === 0;
}

/**
 * The path of a Chromium executable, installing Debian's `chromium` package when it is missing and we are root
 * (as the test setup does for `redis-server`). Throws with what to do otherwise.
 */
export function ensureChromium(): string {
  const found = chromiumPath();
  if (found !== undefined) return found;
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  if (isRoot && !aptGet('install', '-y', '-qq', '--no-install-recommends', 'chromium')) {
    aptGet('update', '-qq');
    aptGet('install', '-y', '-qq', '--no-install-recommends', 'chromium');
  }
  const installed = chromiumPath();
  if (installed === undefined)
    throw new Error('the page tests need Chromium: install it with `sudo apt-get install chromium` (Debian/Ubuntu)');
  return installed;
}
