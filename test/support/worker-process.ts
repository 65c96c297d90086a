/**
 * A worker process for multi-process tests: the real workers of `timetable-sync worker`, with lock and
 * stall intervals shortened so that a killed worker's job is recovered within seconds. Configuration comes
 * from the environment; prints `ready <worker id>` when it takes jobs, and shuts down cleanly on SIGTERM.
 */
import { loadConfig } from '../../src/config.ts';
import { startWorkers } from '../../src/jobs/workers.ts';
import { createLogger } from '../../src/logger.ts';
import { openServiceContext } from '../../src/runtime/service-context.ts';

const config = loadConfig(process.env, ['UNIVERSITY_API_URL']);
const redis = config.redisTarget;
if (redis === undefined) throw new Error('set REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES');
const logger = createLogger({ level: config.logLevel, pretty: false, destination: process.stderr });
const opened = openServiceContext({ config, logger, redis, role: 'worker' });
const workers = await startWorkers(opened.context, redis, {
  lockDurationMs: 2_000,
  stalledIntervalMs: 500,
  heartbeatMs: 500,
});
process.stdout.write(`ready ${workers.id}\n`);
process.once('SIGTERM', () => {
  void (async () => {
    await workers.close();
    await opened.close();
    process.exit(0);
  })();
});
