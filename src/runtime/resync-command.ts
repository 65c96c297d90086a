import { type Config, loadConfig, readEnvironment } from '../config.ts';
import { UnknownSubscriptionError } from '../jobs/errors.ts';
import { type ResyncTarget, requestResync } from '../jobs/resync.ts';
import { probeRedis } from '../lib/redis-connection.ts';
import { createLogger } from '../logger.ts';
import { InvalidSourceError } from '../sources/errors.ts';
import { findEmbeddedRedis } from './embedded-redis.ts';
import { CommandError } from './errors.ts';
import { openServiceContext } from './service-context.ts';

/** The selector of `timetable-sync resync`, already checked by the command line (exactly one is set). */
export interface ResyncOptions {
  all: boolean;
  group?: string | undefined;
  employee?: string | undefined;
  subscription?: string | undefined;
}

/** How long the command waits for a connection to Redis before it gives up. */
const CONNECT_TIMEOUT_MS = 5_000;

/**
 * `resync`: queues a resync in the service's Redis and prints one job id per line. Never starts a Redis of
 * its own: without `REDIS_URL` it uses the embedded one a running `start` or `demo` recorded in this folder.
 */
export async function runResync(options: ResyncOptions): Promise<number> {
  const config = loadConfig(readEnvironment());
  const redisUrl = await findRedis(config);
  // Warnings and errors only, on stderr: stdout carries nothing but job ids, for scripts.
  const logger = createLogger({
    level: config.logLevel === 'silent' ? 'silent' : 'warn',
    destination: process.stderr,
    pretty: false,
    base: { role: 'resync' },
  });
  await probeRedis(redisUrl, CONNECT_TIMEOUT_MS);
  const opened = openServiceContext({ config, logger, redisUrl, role: 'resync' });
  try {
    const jobs = await requestResync(opened.context, target(options));
    if (jobs.length > 0) process.stdout.write(`${jobs.join('\n')}\n`);
    else process.stderr.write('timetable-sync resync: no active sources, nothing queued\n');
    return 0;
  } catch (error) {
    if (error instanceof UnknownSubscriptionError || error instanceof InvalidSourceError)
      throw new CommandError(error.message);
    throw error;
  } finally {
    await opened.close();
  }
}

function target(options: ResyncOptions): ResyncTarget {
  // The ids were checked as positive integers; Number() drops leading zeros (`--group 042` is group 42).
  if (options.group !== undefined) return { source: `group:${Number(options.group)}` };
  if (options.employee !== undefined) return { source: `employee:${Number(options.employee)}` };
  if (options.subscription !== undefined) return { subscription: options.subscription };
  return { all: true };
}

async function findRedis(config: Config): Promise<string> {
  if (config.redisUrl) return config.redisUrl;
  const embedded = await findEmbeddedRedis(config.dataDir);
  if (embedded) return embedded;
  throw new CommandError('no Redis: set REDIS_URL or run `timetable-sync start`/`demo` in this folder');
}
