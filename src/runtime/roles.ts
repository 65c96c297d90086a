import { type Config, loadConfig, readEnvironment } from '../config.ts';
import type { RedisTarget } from '../lib/redis-target.ts';
import { createLogger, type Logger } from '../logger.ts';
import { type Dialect, startSimulator } from '../simulator/index.ts';
import { lowerCpuPriority } from './cpu-priority.ts';
import { demoSecrets, demoSimulatorPort, importSimulatorGroups, onFreePort, printDemo, recordDemo } from './demo.ts';
import { freePort, startEmbeddedRedis } from './embedded-redis.ts';
import { acquireFolderLock } from './folder-lock.ts';
import { startService } from './service.ts';
import { Shutdown } from './shutdown.ts';

/** The long-running roles of docs/design.md's command line. */
export type ServiceRole = 'start' | 'api' | 'worker';

function rootLogger(config: Pick<Config, 'logLevel'>, role: string): Logger {
  return createLogger({ level: config.logLevel, base: { role } });
}

/**
 * Takes the instance lock of the data folder for `command`, released last on shutdown (and on an emergency
 * exit): a second `demo` or embedded-Redis `start` in the folder fails instead of joining this one.
 */
async function lockFolder(config: Config, command: string, shutdown: Shutdown): Promise<void> {
  const lock = await acquireFolderLock(config.dataDir, command);
  shutdown.add('folder lock', lock.release);
  shutdown.onEmergencyExit(lock.releaseSync);
}

/**
 * Resolves the Redis to use: the configured one (`REDIS_URL`, `REDIS_SENTINELS`, `REDIS_CLUSTER_NODES`), or the embedded one of the data folder, started by this process
 * under the folder's lock (taken here unless the caller holds it already).
 */
async function resolveRedis(
  config: Config,
  logger: Logger,
  shutdown: Shutdown,
  lock: { command: string } | 'held',
): Promise<RedisTarget> {
  if (config.redisTarget) return config.redisTarget;
  if (lock !== 'held') await lockFolder(config, lock.command, shutdown);
  const redis = await startEmbeddedRedis({ dataDir: config.dataDir, logger });
  shutdown.add('embedded redis', (budgetMs) => redis.stop(budgetMs));
  const { pid } = redis;
  if (pid !== undefined) shutdown.onEmergencyExit(() => process.kill(pid, 'SIGTERM'));
  return { kind: 'standalone', url: redis.url };
}

/**
 * `start`, `api`, `worker`: the service until SIGTERM or SIGINT, then an ordered shutdown within
 * SHUTDOWN_BUDGET_MS, and the process ends (shutdown.ts), whatever state Redis is in.
 */
export async function runServiceRole(role: ServiceRole): Promise<number> {
  const config = loadConfig(readEnvironment(), ['UNIVERSITY_API_URL']);
  const logger = rootLogger(config, role);
  // First, before the worker starts threads of its own; `start` keeps its priority: its api is in the process.
  if (role === 'worker') lowerCpuPriority(config.workerNice, logger);
  const shutdown = new Shutdown(logger);
  const signal = shutdown.untilSignal();
  try {
    const redis = await resolveRedis(config, logger, shutdown, { command: role });
    const roles = { api: role !== 'worker', worker: role !== 'api' };
    const { url } = await startService({ roles, config, logger, redis, shutdown });
    process.stdout.write(
      `timetable-sync ${role} is running on ${url} (public URL ${config.publicUrl}); SIGTERM or Ctrl-C stops it.\n`,
    );
  } catch (error) {
    await shutdown.run('startup failed');
    shutdown.exitSoon();
    throw error;
  }
  await shutdown.run(await signal);
  shutdown.exitSoon();
  return 0;
}

/** `simulator`: the fake university API alone, until Ctrl-C. */
export async function runSimulator(options: {
  port: number;
  seed: string | undefined;
  host: string | undefined;
  dialect?: Dialect | undefined;
}): Promise<number> {
  const config = loadConfig(readEnvironment());
  const logger = rootLogger(config, 'simulator');
  const shutdown = new Shutdown(logger);
  const { port, host, dialect } = options;
  const simulator = await startSimulator({ port, host, dialect, seed: options.seed ?? 1, logger });
  shutdown.add('simulator', simulator.close);
  process.stdout.write(
    `University simulator listening on ${simulator.url}\n` + `  try: curl ${simulator.url}/_sim/groups | head -c 300\n`,
  );
  await shutdown.run(await shutdown.untilSignal());
  shutdown.exitSoon();
  return 0;
}

/** `demo`: embedded Redis, the simulator and both service roles in one process, with URLs to try. */
export async function runDemo(options: {
  port: number | undefined;
  simulatorPort: number | undefined;
  seed: string | undefined;
}): Promise<number> {
  const environment = readEnvironment();
  const base = loadConfig(environment);
  const logger = rootLogger(base, 'demo');
  const shutdown = new Shutdown(logger);
  const signal = shutdown.untilSignal();
  try {
    // Always locked, also with REDIS_URL: the folder's demo secrets and simulator belong to one demo.
    await lockFolder(base, 'demo', shutdown);
    const redis = await resolveRedis(base, logger, shutdown, 'held');
    const simulatorPort = demoSimulatorPort(options);
    const simulator = await onFreePort(
      () =>
        startSimulator({
          port: simulatorPort,
          seed: options.seed ?? 1,
          logger: logger.child({ component: 'simulator' }),
        }),
      { port: simulatorPort, flag: '--simulator-port', name: 'the university simulator' },
    );
    shutdown.add('simulator', simulator.close);
    shutdown.add('demo record', await recordDemo(base.dataDir, simulator.url));
    const secrets = await demoSecrets(base.dataDir);
    // The port is chosen before the configuration is made, so that PUBLIC_URL (in subscription feed URLs) is right.
    const port = options.port === 0 ? await freePort() : (options.port ?? base.port);
    const config = loadConfig({
      ADMIN_TOKEN: secrets.adminToken,
      SECRET_KEY: secrets.secretKey,
      ...environment,
      PORT: String(port),
      UNIVERSITY_API_URL: simulator.url,
    });
    const { url, context } = await onFreePort(
      () => startService({ roles: { api: true, worker: true }, config, logger, redis, shutdown, host: '127.0.0.1' }),
      { port, flag: '--port', name: 'the service' },
    );
    // The university has no list of groups; the simulator does: the page then finds any group by name.
    await importSimulatorGroups(context, simulator.url);
    await printDemo({ config, serviceUrl: url, simulatorUrl: simulator.url, redis, embedded: !base.redisTarget });
  } catch (error) {
    await shutdown.run('startup failed');
    shutdown.exitSoon();
    throw error;
  }
  await shutdown.run(await signal);
  shutdown.exitSoon();
  return 0;
}
