/**
 * One role of the service (`api` or `worker`, the first argument) as a child process, through the real
 * composition root (startService: workers, the Telegram poller, routes, ordered shutdown on SIGTERM), with the
 * job locks shortened as test/support/worker-process.ts does, so that a killed worker's job is picked up again
 * within seconds. Configuration comes from the environment; prints "is running on URL" when it serves.
 */
import { loadConfig } from '../../../src/config.ts';
import { createLogger } from '../../../src/logger.ts';
import { startService } from '../../../src/runtime/service.ts';
import { Shutdown } from '../../../src/runtime/shutdown.ts';

const role = process.argv[2];
if (role !== 'api' && role !== 'worker') throw new Error('usage: service-process.ts api|worker');
const config = loadConfig(process.env, ['UNIVERSITY_API_URL']);
const redis = config.redisTarget;
if (redis === undefined) throw new Error('set REDIS_URL');
const logger = createLogger({ level: config.logLevel, pretty: false, destination: process.stderr, base: { role } });
const shutdown = new Shutdown(logger);
const signal = shutdown.untilSignal();
const { url } = await startService({
  roles: { api: role === 'api', worker: role === 'worker' },
  config,
  logger,
  redis,
  shutdown,
  host: '127.0.0.1',
  tuning: { lockDurationMs: 2_000, stalledIntervalMs: 500, heartbeatMs: 500 },
});
process.stdout.write(`timetable-sync ${role} is running on ${url}\n`);
await shutdown.run(await signal);
shutdown.exitSoon();
