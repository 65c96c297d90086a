import { spawnSync } from 'node:child_process';
import type { Logger } from '../logger.ts';
import { RedisUnavailableError } from './errors.ts';

/** How to get Redis, for people reading an error. */
export const REDIS_INSTALL_HINT =
  'Install it with `sudo apt-get install redis-server` (Debian/Ubuntu) or `brew install redis` (macOS), ' +
  'point REDIS_URL at an existing Redis, or run everything with `docker compose up`.';

/** Runs a command quietly (inheriting this process's environment); true when it exits 0. */
function succeeds(command: string, args: readonly string[]): boolean {
  const result = spawnSync(command, args, { stdio: 'ignore', timeout: 900_000 });
  return result.status === 0;
}

/** `apt-get ARGS` without prompts, waiting for a dpkg lock held by e.g. unattended-upgrades at first boot. */
function aptGet(...args: string[]): boolean {
  return succeeds('env', ['DEBIAN_FRONTEND=noninteractive', 'apt-get', '-o', 'DPkg::Lock::Timeout=300', ...args]);
}

/** True when `redis-server` can be started from PATH. */
export function hasRedisServer(): boolean {
  return succeeds('redis-server', ['--version']);
}

/**
 * Makes sure a `redis-server` binary exists: when it is missing and this process runs as root on a machine
 * with apt-get, installs Debian's `redis-server` package; otherwise throws {@link RedisUnavailableError}
 * saying how to get one.
 */
export function ensureRedisServer(logger: Logger): void {
  if (hasRedisServer()) return;
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  if (!isRoot || !succeeds('apt-get', ['--version'])) {
    throw new RedisUnavailableError(`redis-server was not found on PATH. ${REDIS_INSTALL_HINT}`);
  }
  logger.info('redis-server is missing; installing Debian package redis-server (one time)');
  if (!aptGet('install', '-y', '-qq', '--no-install-recommends', 'redis-server')) {
    // A fresh machine has no package lists yet: fetch them once and try again.
    aptGet('update', '-qq');
    if (!aptGet('install', '-y', '-qq', '--no-install-recommends', 'redis-server')) {
      throw new RedisUnavailableError(`installing redis-server with apt-get failed. ${REDIS_INSTALL_HINT}`);
    }
  }
  if (!hasRedisServer())
    throw new RedisUnavailableError(`redis-server is still missing after apt-get install. ${REDIS_INSTALL_HINT}`);
  logger.info('redis-server installed');
}
