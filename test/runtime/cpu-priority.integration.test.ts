/**
 * The worker role lowers its CPU priority (WORKER_NICE) so that feeds already published keep answering while
 * workers on the same cores publish every feed for the first time; the api keeps its own. Checked on real
 * processes of bin/timetable-sync.js, by each thread's niceness as the kernel reports it.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../src/simulator/index.ts';
import { type RoleProcess, startRoleProcess } from '../../testkit/processes.ts';
import { TEST_ADMIN_TOKEN, TEST_SECRET_KEY, uniquePrefix } from '../support/service.ts';

const BIN = resolve(import.meta.dirname, '../../bin/timetable-sync.js');
const MODULE = resolve(import.meta.dirname, '../../src/runtime/cpu-priority.ts');
const LOGGER = resolve(import.meta.dirname, '../../src/logger.ts');

/** The niceness of every thread of `pid` (field 19 of /proc/<pid>/task/<tid>/stat). */
function threadNiceness(pid: number): number[] {
  return readdirSync(`/proc/${pid}/task`).map((tid) => {
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    // After the command's closing parenthesis: state is field 3, so niceness (field 19) is the 17th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[16]);
  });
}

const onLinux = process.platform === 'linux';
let sim: RunningSimulator;
const roles: RoleProcess[] = [];

beforeAll(async () => {
  sim = await startSimulator({ port: 0, seed: 1, groups: 20, employees: 20 });
});
afterAll(async () => {
  await Promise.all(roles.map((role) => role.stop()));
  await sim?.close();
});

async function start(role: 'api' | 'worker', extra: Record<string, string> = {}): Promise<RoleProcess> {
  const started = await startRoleProcess(BIN, role, {
    REDIS_URL: inject('redisUrl'),
    REDIS_PREFIX: uniquePrefix(),
    UNIVERSITY_API_URL: sim.url,
    ADMIN_TOKEN: TEST_ADMIN_TOKEN,
    SECRET_KEY: TEST_SECRET_KEY,
    ...extra,
  });
  roles.push(started);
  return started;
}

describe.runIf(onLinux)('WORKER_NICE', () => {
  it('runs every thread of a worker at niceness 5 by default, and leaves the api at its own', async () => {
    const [worker, api] = await Promise.all([start('worker'), start('api')]);
    const workerThreads = threadNiceness(worker.child.pid as number);
    expect(workerThreads.length).toBeGreaterThan(1);
    expect(new Set(workerThreads)).toEqual(new Set([5]));
    expect(new Set(threadNiceness(api.child.pid as number))).toEqual(new Set([0]));
  });

  it('takes 0 as leaving the priority alone, and never raises one the operator set lower', async () => {
    const untouched = await start('worker', { WORKER_NICE: '0' });
    expect(new Set(threadNiceness(untouched.child.pid as number))).toEqual(new Set([0]));
    // A process started at niceness 12 and asked for 3 stays at 12 (raising it would need privileges anyway).
    const script =
      `const { lowerCpuPriority } = await import(${JSON.stringify(MODULE)});` +
      `const { silentLogger } = await import(${JSON.stringify(LOGGER)});` +
      `process.stdout.write(String(lowerCpuPriority(3, silentLogger())));`;
    const kept = execFileSync('nice', ['-n', '12', process.execPath, '--input-type=module', '-e', script], {
      encoding: 'utf8',
    });
    expect(kept).toBe('12');
  });
});
