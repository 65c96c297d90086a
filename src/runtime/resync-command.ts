import { type Config, loadConfig, readEnvironment } from '../config.ts';
import { UnknownSubscriptionError } from '../jobs/errors.ts';
import { type JobOutcomes, type JobWatch, watchJobs } from '../jobs/job-watch.ts';
import { type ResyncTarget, requestResync } from '../jobs/resync.ts';
import { connectRedis, probeRedis } from '../lib/redis-connection.ts';
import type { RedisTarget } from '../lib/redis-target.ts';
import { createLogger } from '../logger.ts';
import { InvalidSourceError } from '../timetable/errors.ts';
import type { ServiceContext } from './context.ts';
import { findEmbeddedRedis } from './embedded-redis.ts';
import { CommandError } from './errors.ts';
import { type ProgressCounts, ProgressReport } from './progress.ts';
import { openServiceContext } from './service-context.ts';
import { waitSummary } from './wait-summary.ts';

/** The selector of `timetable-sync resync`, already checked by the command line (exactly one is set). */
export interface ResyncOptions {
  all: boolean;
  group?: string | undefined;
  employee?: string | undefined;
  subscription?: string | undefined;
  /** Wait for the jobs, showing progress, and end with a summary (exit 1 when any failed). */
  wait?: boolean;
}

/** How long the command waits for a connection to Redis before it gives up. */
const CONNECT_TIMEOUT_MS = 5_000;

/**
 * `resync`: queues a resync in the service's Redis and prints one job id per line; with `wait`, waits for
 * the jobs instead (see {@link waitForJobs}). Never starts a Redis of its own: without a configured Redis it uses
 * the embedded one a running `start` or `demo` recorded in this folder.
 */
export async function runResync(options: ResyncOptions): Promise<number> {
  const config = loadConfig(readEnvironment());
  const redis = await findRedis(config);
  // Warnings and errors only, on stderr: stdout carries nothing but job ids, for scripts.
  const logger = createLogger({
    level: config.logLevel === 'silent' ? 'silent' : 'warn',
    destination: process.stderr,
    pretty: false,
    base: { role: 'resync' },
  });
  await probeRedis(redis, CONNECT_TIMEOUT_MS);
  const opened = openServiceContext({ config, logger, redis, role: 'resync' });
  let watching: { watch: JobWatch; blocking: ReturnType<typeof connectRedis> } | undefined;
  try {
    if (options.wait) watching = await openWatch(opened.context, redis);
    const jobs = await requestResync(opened.context, target(options));
    if (jobs.length === 0) {
      process.stderr.write('timetable-sync resync: no active sources, nothing queued\n');
      return 0;
    }
    if (watching) return await waitForJobs(watching.watch, [...new Set(jobs)]);
    process.stdout.write(`${jobs.join('\n')}\n`);
    return 0;
  } catch (error) {
    if (error instanceof UnknownSubscriptionError || error instanceof InvalidSourceError)
      throw new CommandError(error.message);
    throw error;
  } finally {
    await watching?.watch.close();
    await watching?.blocking.quit().catch(() => watching?.blocking.disconnect());
    await opened.close();
  }
}

/** Opened before the jobs are queued, so that no job's end is missed. */
async function openWatch(
  ctx: Pick<ServiceContext, 'queues' | 'redis' | 'redisOutage'>,
  redis: RedisTarget,
): Promise<{ watch: JobWatch; blocking: ReturnType<typeof connectRedis> }> {
  const blocking = connectRedis(redis, { name: 'resync-wait', outage: ctx.redisOutage, blocking: true });
  try {
    return { watch: await watchJobs(ctx.queues.refresh, ctx.redis, blocking), blocking };
  } catch (error) {
    blocking.disconnect();
    throw error;
  }
}

/**
 * Waits for `jobs` with a progress report on stderr and prints the summary on stdout. Ctrl-C stops the
 * waiting, never the jobs. Resolves to the exit code: 1 when a job failed, 130 when stopped, else 0.
 */
async function waitForJobs(watch: JobWatch, jobs: string[]): Promise<number> {
  const stop = new AbortController();
  const onInterrupt = () => stop.abort();
  process.once('SIGINT', onInterrupt);
  process.stderr.write(
    `timetable-sync resync: waiting for ${jobs.length} refresh job${jobs.length === 1 ? '' : 's'} (Ctrl-C stops waiting; the jobs go on)\n`,
  );
  const report = new ProgressReport({
    write: (text) => process.stderr.write(text),
    tty: process.stderr.isTTY === true,
  });
  try {
    const outcomes = await watch.wait(jobs, {
      signal: stop.signal,
      onChange: (now) => report.update(counts(now)),
    });
    report.update(counts(outcomes));
    report.end();
    const stopped = outcomes.pending.size > 0;
    process.stdout.write(`${waitSummary(outcomes, report.elapsedMs(), stopped)}\n`);
    if (outcomes.failed.size > 0) return 1;
    return stopped ? 130 : 0;
  } finally {
    process.off('SIGINT', onInterrupt);
  }
}

function counts(outcomes: JobOutcomes): ProgressCounts {
  const failed = [...outcomes.failed.values()].reduce((sum, ids) => sum + ids.length, 0);
  return { total: outcomes.total, done: outcomes.done, failed };
}

function target(options: ResyncOptions): ResyncTarget {
  // The ids were checked as positive integers; Number() drops leading zeros (`--group 042` is group 42).
  if (options.group !== undefined) return { source: `group:${Number(options.group)}` };
  if (options.employee !== undefined) return { source: `employee:${Number(options.employee)}` };
  if (options.subscription !== undefined) return { subscription: options.subscription };
  return { all: true };
}

async function findRedis(config: Config): Promise<RedisTarget> {
  if (config.redisTarget) return config.redisTarget;
  const embedded = await findEmbeddedRedis(config.dataDir);
  if (embedded) return { kind: 'standalone', url: embedded };
  throw new CommandError(
    'no Redis: set REDIS_URL (or REDIS_SENTINELS, REDIS_CLUSTER_NODES) or run `timetable-sync start`/`demo` in this folder',
  );
}
