/** The demo's secrets (kept under DATA_DIR so that subscriptions survive a restart) and its welcome text. */
import { randomBytes } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import type { Config } from '../config.ts';
import { describeRedisTarget } from '../lib/redis-connection.ts';
import type { RedisTarget } from '../lib/redis-target.ts';
import { clockOf } from '../notify/quiet-hours.ts';
import { cleanGroupName, type DirectoryGroup } from '../store/group-directory.ts';
import type { ServiceContext } from './context.ts';
import { CommandError } from './errors.ts';
import { folderLockHolder, isAlive } from './folder-lock.ts';
import { ensurePrivateDir, writePrivateFile } from './private-files.ts';

const secretsSchema = z.object({ adminToken: z.string().min(16), secretKey: z.string().regex(/^[0-9a-f]{64}$/) });

/** `<dataDir>/demo.json`: where a running demo's simulator answers, so that `render` in the folder uses it. */
const DEMO_RECORD = 'demo.json';
const demoRecordSchema = z.object({ pid: z.number().int().positive(), simulatorUrl: z.url() });

/**
 * Records the running demo's simulator address under `dataDir`; answers the step that removes the record.
 * `render --group` in the demo's folder then reads the demo's university, as `resync` finds its Redis.
 */
export async function recordDemo(dataDir: string, simulatorUrl: string): Promise<() => Promise<void>> {
  const file = join(dataDir, DEMO_RECORD);
  await writePrivateFile(file, `${JSON.stringify({ pid: process.pid, simulatorUrl }, null, 2)}\n`);
  return () => rm(file, { force: true });
}

/**
 * The simulator address of the demo running in `dataDir`, or undefined. The record counts only while its
 * process lives and still holds the folder as a demo: a record left by a killed demo names nothing.
 */
export async function runningDemoSimulator(dataDir: string): Promise<string | undefined> {
  let record: z.infer<typeof demoRecordSchema> | undefined;
  try {
    record = demoRecordSchema.safeParse(JSON.parse(await readFile(join(dataDir, DEMO_RECORD), 'utf8'))).data;
  } catch {
    return undefined;
  }
  if (record === undefined || !isAlive(record.pid)) return undefined;
  const holder = await folderLockHolder(dataDir);
  return holder?.command === 'demo' && holder.pid === record.pid ? record.simulatorUrl : undefined;
}

/** The demo's ADMIN_TOKEN and SECRET_KEY: read from `<dataDir>/demo-secrets.json`, made on the first run. */
export async function demoSecrets(dataDir: string): Promise<z.infer<typeof secretsSchema>> {
  const file = join(dataDir, 'demo-secrets.json');
  try {
    return secretsSchema.parse(JSON.parse(await readFile(file, 'utf8')));
  } catch {
    const secrets = {
      adminToken: `demo-${randomBytes(16).toString('hex')}`,
      secretKey: randomBytes(32).toString('hex'),
    };
    await ensurePrivateDir(dataDir);
    await writePrivateFile(file, `${JSON.stringify(secrets, null, 2)}\n`);
    return secrets;
  }
}

/**
 * Imports the simulator's groups (`/_sim/groups`) into the group directory, as an admin would import the
 * university's list, so that the page finds any group by name. Resolves to how many groups there are.
 */
export async function importSimulatorGroups(ctx: ServiceContext, simulatorUrl: string): Promise<number> {
  const answer = await fetch(`${simulatorUrl}/_sim/groups`);
  const { groups } = (await answer.json()) as { groups: { id: number; name: string }[] };
  const clean = groups.flatMap(({ id, name }): DirectoryGroup[] => {
    const cleaned = cleanGroupName(name);
    return cleaned === undefined ? [] : [{ id, name: cleaned }];
  });
  await ctx.directory.import(clean);
  return clean.length;
}

/** The simulator's port when neither `--simulator-port` nor `--port 0` says otherwise. */
export const DEMO_SIMULATOR_PORT = 4010;

/**
 * The port the demo's simulator listens on: `--simulator-port` when given; else any free one when the service's
 * `--port` is 0 (who asks for a free port wants no fixed one anywhere); else {@link DEMO_SIMULATOR_PORT}.
 */
export function demoSimulatorPort(options: { port: number | undefined; simulatorPort: number | undefined }): number {
  return options.simulatorPort ?? (options.port === 0 ? 0 : DEMO_SIMULATOR_PORT);
}

/**
 * Runs `listen`, turning a port in use (EADDRINUSE) into one line that says which flag picks another: a stack
 * trace would hide the one thing to do.
 */
export async function onFreePort<T>(
  listen: () => Promise<T>,
  what: { port: number; flag: '--port' | '--simulator-port'; name: string },
): Promise<T> {
  try {
    return await listen();
  } catch (error) {
    if ((error as { code?: unknown } | null)?.code !== 'EADDRINUSE') throw error;
    throw new CommandError(
      `port ${what.port} (${what.name}) is in use: choose another with ${what.flag} N, or ${what.flag} 0 for a free one`,
      1,
      { cause: error },
    );
  }
}

/** What the demo prints once everything runs. */
export interface DemoInfo {
  config: Config;
  /** Where the service listens (the printed links are on `config.publicUrl`). */
  serviceUrl: string;
  simulatorUrl: string;
  /** With its passwords, if any: printed through describeRedisTarget only. */
  redis: RedisTarget;
  embedded: boolean;
}

/**
 * Fetches the sample feeds once (so that the printed URLs answer at once), then prints them with the
 * commands worth trying. Links are on PUBLIC_URL, the host Google sends a browser back to: the consent cookie
 * is host-only, so a consent started on another name of the service (`127.0.0.1` for `localhost`) is
 * redirected there first.
 */
export async function printDemo(info: DemoInfo): Promise<void> {
  const { simulatorUrl, config } = info;
  const serviceUrl = config.publicUrl;
  const sample = await sampleIds(simulatorUrl);
  const feedPaths = [`/feeds/groups/${sample.groupId}.ics`, `/feeds/employees/${sample.employeeId}.ics`];
  // Fetched where the service listens: PUBLIC_URL may name a proxy or tunnel that is not up yet.
  await Promise.all(feedPaths.map((path) => fetch(`${info.serviceUrl}${path}`).then((answer) => answer.arrayBuffer())));
  const [groupFeed, teacherFeed] = feedPaths.map((path) => `${serviceUrl}${path}`);
  const admin = `-H 'Authorization: Bearer ${config.adminToken ?? ''}'`;
  process.stdout.write(
    [
      '',
      'timetable-sync demo is running (Ctrl-C stops everything).',
      '',
      `  Find a timetable:       ${serviceUrl}/  (search a group or a teacher, or sign in with a token below)`,
      '',
      '  Feeds (open in a calendar app, or curl):',
      `    a group:              ${groupFeed}`,
      `    a teacher:            ${teacherFeed}`,
      `    with options:         ${groupFeed}?subgroup=1&alarm=15`,
      '',
      "  A personal feed, from a simulated student's university token:",
      `    curl -s -X POST ${serviceUrl}/api/subscriptions -H 'Content-Type: application/json' -d '{"credential":"${sample.userToken}"}'`,
      '',
      `  Admin (token kept in ${config.dataDir}/demo-secrets.json):`,
      `    resync a group:       curl -s -X POST ${serviceUrl}/admin/resync ${admin} -H 'Content-Type: application/json' -d '{"source":"group:${sample.groupId}"}'`,
      `    sources:              curl -s ${serviceUrl}/admin/sources ${admin}`,
      `    queue board:          ${serviceUrl}/admin/queues (any user name, the admin token as password)`,
      `    health and metrics:   ${serviceUrl}/readyz  ${serviceUrl}/metrics`,
      '',
      config.googleClientId === undefined
        ? '  Google Calendar push:   set GOOGLE_CLIENT_ID and GOOGLE_CLIENT_SECRET (docs/operations.md) to enable it'
        : `  Google Calendar push:   ${serviceUrl}/google/connect?source=group:${sample.groupId}`,
      '',
      ...quietHoursLines(config),
      `  University simulator:   ${simulatorUrl}  (move a class: docs/simulator.md, "Move a class")`,
      `  Redis:                  ${describeRedisTarget(info.redis)}${info.embedded ? embeddedNote(config.dataDir) : ''}`,
      '',
    ].join('\n'),
  );
}

/**
 * The quiet hours of Telegram messages, when they are on: a message written at night otherwise seems lost until
 * the morning. Says how to turn them off.
 */
function quietHoursLines(config: Pick<Config, 'notifyQuietHours' | 'timezone'>): string[] {
  const quiet = config.notifyQuietHours;
  if (quiet === undefined) return [];
  return [
    `  Quiet hours:            Telegram messages wait from ${clockOf(quiet.fromMinute)} to ${clockOf(quiet.toMinute)} (${config.timezone}) unless a class starts sooner;`,
    '                          NOTIFY_QUIET_HOURS=off sends them at once',
    '',
  ];
}

/** Where the embedded Redis keeps its password and data: the printed address never carries the password. */
function embeddedNote(dataDir: string): string {
  return ` (embedded; password in ${dataDir}/redis.json, data in ${dataDir}/redis; both readable by you alone)`;
}

async function sampleIds(baseUrl: string): Promise<{ groupId: number; employeeId: number; userToken: string }> {
  const control = async <T>(path: string) => (await (await fetch(`${baseUrl}/_sim/${path}`)).json()) as T;
  const [groups, employees, users] = await Promise.all([
    control<{ groups: { id: number }[] }>('groups'),
    control<{ employees: { id: number }[] }>('employees'),
    control<{ users: { token: string }[] }>('users'),
  ]);
  return {
    groupId: groups.groups[0]?.id ?? 1,
    employeeId: employees.employees[0]?.id ?? 1,
    userToken: users.users[0]?.token ?? '',
  };
}
