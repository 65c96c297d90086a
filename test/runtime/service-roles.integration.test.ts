import type { ChildProcess } from 'node:child_process';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../../src/runtime/embedded-redis.ts';
import { startSimulator } from '../../src/simulator/index.ts';
import { until } from '../../testkit/poll.ts';
import { exited, startCli, waitForOutput } from '../support/cli.ts';
import { deletePrefix, TEST_ADMIN_TOKEN, TEST_SECRET_KEY, uniquePrefix } from '../support/service.ts';

let sim: Awaited<ReturnType<typeof startSimulator>>;
const children: ChildProcess[] = [];
const prefixes: string[] = [];

beforeAll(async () => {
  sim = await startSimulator({ port: 0, seed: 2, groups: 10, employees: 10, users: 2 });
});
afterEach(async () => {
  for (const child of children.splice(0))
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const prefix of prefixes.splice(0)) await deletePrefix(inject('redisUrl'), prefix);
});
afterAll(async () => {
  await sim?.close();
});

async function environment(): Promise<Record<string, string>> {
  const prefix = uniquePrefix('roles');
  prefixes.push(prefix);
  return {
    REDIS_URL: inject('redisUrl'),
    REDIS_PREFIX: prefix,
    UNIVERSITY_API_URL: sim.url,
    ADMIN_TOKEN: TEST_ADMIN_TOKEN,
    SECRET_KEY: TEST_SECRET_KEY,
    LOG_LEVEL: 'warn',
  };
}

describe('service roles', () => {
  it('`start` serves a feed fetched on first request, is ready, and stops cleanly on SIGTERM', async () => {
    const port = await freePort();
    const start = startCli(['start'], { env: { ...(await environment()), PORT: String(port) } });
    children.push(start);
    await waitForOutput(start, /is running on/);
    const [group] = ((await (await fetch(`${sim.url}/_sim/groups`)).json()) as { groups: { id: number }[] }).groups;
    const response = await fetch(`http://127.0.0.1:${port}/feeds/groups/${group?.id}.ics`);
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('BEGIN:VEVENT');
    expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
    start.kill('SIGTERM');
    expect(await exited(start)).toBe(0);
  });

  it('separate `api` and `worker` processes share the work through Redis alone', async () => {
    const env = await environment();
    const [apiPort, workerPort] = [await freePort(), await freePort()];
    const api = startCli(['api'], { env: { ...env, PORT: String(apiPort) } });
    children.push(api);
    await waitForOutput(api, /is running on/);
    // Without a worker the API is alive but not ready.
    expect((await fetch(`http://127.0.0.1:${apiPort}/healthz`)).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${apiPort}/readyz`)).status).toBe(503);

    const worker = startCli(['worker'], { env: { ...env, PORT: String(workerPort) } });
    children.push(worker);
    await waitForOutput(worker, /is running on/);
    expect((await fetch(`http://127.0.0.1:${workerPort}/healthz`)).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${apiPort}/readyz`)).status).toBe(200);
    const employees = ((await (await fetch(`${sim.url}/_sim/employees`)).json()) as { employees: { id: number }[] })
      .employees;
    const response = await fetch(`http://127.0.0.1:${apiPort}/feeds/employees/${employees[0]?.id}.ics`);
    expect(response.status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${workerPort}/metrics`)).status).toBe(200);
    // The feed is stored before the job ends and its duration is counted: wait for the count.
    const metrics = await until(
      async () => (await fetch(`http://127.0.0.1:${workerPort}/metrics`)).text(),
      (text) => text.includes('timetable_refresh_duration_seconds_count{outcome="published"}'),
      10_000,
    );
    expect(metrics).toContain('timetable_refresh_duration_seconds_count{outcome="published"} 1');

    worker.kill('SIGTERM');
    api.kill('SIGTERM');
    expect(await exited(worker)).toBe(0);
    expect(await exited(api)).toBe(0);
  });
});
