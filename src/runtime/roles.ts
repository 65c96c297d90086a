import { loadConfig, readEnvironment, type Config } from '../config.ts';
import { createLogger, type Logger } from '../logger.ts';
import { startSimulator } from '../simulator/index.ts';
import { EXIT_NOT_IMPLEMENTED } from './command-error.ts';
import { startEmbeddedRedis } from './embedded-redis.ts';
import { Shutdown } from './shutdown.ts';

/** The long-running roles of DESIGN.md's command line. */
export type ServiceRole = 'start' | 'api' | 'worker';


function rootLogger(config: Pick<Config, 'logLevel'>, role: string): Logger {
  return createLogger({ level: config.logLevel, base: { role } });
}

/** Resolves the Redis to use: `REDIS_URL`, or the embedded one of the data folder (started when needed). */
async function resolveRedis(config: Config, logger: Logger, shutdown: Shutdown): Promise<string> {
  if (config.redisUrl) return config.redisUrl;
  const redis = await startEmbeddedRedis({ dataDir: config.dataDir, logger });
  if (redis.owned) {
    shutdown.add('embedded redis', redis.stop);
    const { pid } = redis;
    if (pid !== undefined) shutdown.onEmergencyExit(() => process.kill(pid, 'SIGTERM'));
  }
  return redis.url;
}

/** `start`, `api`, `worker`: validates the configuration the role needs, then runs it. */
export async function runServiceRole(role: ServiceRole): Promise<number> {
  loadConfig(readEnvironment(), role === 'api' ? [] : ['UNIVERSITY_API_URL']);
  process.stderr.write(`timetable-sync ${role}: not implemented yet\n`);
  return EXIT_NOT_IMPLEMENTED;
}

/** `simulator`: the fake university API alone, until Ctrl-C. */
export async function runSimulator(options: { port: number; seed: string | undefined; host: string | undefined }): Promise<number> {
  const config = loadConfig(readEnvironment());
  const logger = rootLogger(config, 'simulator');
  const shutdown = new Shutdown(logger);
  const simulator = await startSimulator({ port: options.port, host: options.host, seed: options.seed ?? 1, logger });
  shutdown.add('simulator', simulator.close);
  process.stdout.write(`University simulator listening on ${simulator.url}\n` +
    `  try: curl ${simulator.url}/_sim/groups | head -c 300\n`);
  await shutdown.run(await shutdown.untilSignal());
  return 0;
}

/** `demo`: embedded Redis, the simulator and the service roles in one process, with URLs to try. */
export async function runDemo(options: { simulatorPort: number | undefined; seed: string | undefined }): Promise<number> {
  const config = loadConfig(readEnvironment());
  const logger = rootLogger(config, 'demo');
  const shutdown = new Shutdown(logger);
  const signal = shutdown.untilSignal();
  try {
    const redisUrl = await resolveRedis(config, logger, shutdown);
    const simulator = await startSimulator({ port: options.simulatorPort ?? 4010, seed: options.seed ?? 1, logger: logger.child({ component: 'simulator' }) });
    shutdown.add('simulator', simulator.close);
    const sample = await sampleIds(simulator.url);
    process.stdout.write([
      '',
      'timetable-sync demo is running (Ctrl-C stops everything).',
      `  Redis:                ${redisUrl}${config.redisUrl ? '' : ` (embedded, data in ${config.dataDir}/redis)`}`,
      `  University simulator: ${simulator.url}`,
      `    a group's timetable:   ${simulator.url}/groups/${sample.groupId}/schedule`,
      `    a teacher's timetable: ${simulator.url}/employees/${sample.employeeId}/schedule`,
      `    teacher search:        ${simulator.url}/employees?q=${encodeURIComponent(sample.lastName)}`,
      '  ICS feeds and the HTTP API: not implemented yet.',
      '',
    ].join('\n'));
  } catch (error) {
    await shutdown.run('startup failed');
    throw error;
  }
  await shutdown.run(await signal);
  return 0;
}

async function sampleIds(baseUrl: string): Promise<{ groupId: number; employeeId: number; lastName: string }> {
  const groups = (await (await fetch(`${baseUrl}/_sim/groups`)).json()) as { groups: { id: number }[] };
  const employees = (await (await fetch(`${baseUrl}/_sim/employees`)).json()) as { employees: { id: number; lastName: string }[] };
  const employee = employees.employees[0];
  return { groupId: groups.groups[0]?.id ?? 1, employeeId: employee?.id ?? 1, lastName: employee?.lastName ?? 'а' };
}
