/**
 * Debian packages the tests drive for real (`chromium` for pages, `nginx-light` for the shipped proxy config):
 * found, or installed when missing and we are root, as the service's own setup does for `redis-server`.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

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
 * The first of `paths` that exists, installing Debian's `pkg` first when none does and we are root (an install
 * that fails is tried once more after `apt-get update`). Undefined when there is still none.
 */
export function findOrInstall(pkg: string, paths: readonly string[]): string | undefined {
  const found = () => paths.find((path) => existsSync(path));
  const present = found();
  if (present !== undefined) return present;
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  if (isRoot && !aptGet('install', '-y', '-qq', '--no-install-recommends', pkg)) {
    aptGet('update', '-qq');
    aptGet('install', '-y', '-qq', '--no-install-recommends', pkg);
  }
  return found();
}
