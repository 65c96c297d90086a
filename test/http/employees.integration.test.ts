import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../src/simulator/index.ts';
import { type SimControl, simControl } from '../upstream/sim-control.ts';
import { startTestApp, type TestApp } from './helpers.ts';

let sim: RunningSimulator;
let control: SimControl;
let t: TestApp;
let lastName: string;

beforeAll(async () => {
  sim = await startSimulator({
    port: 0,
    seed: 1,
    referenceDate: new Date('2025-10-01T00:00:00Z'),
    groups: 20,
    employees: 40,
    users: 2,
  });
  control = simControl(sim.url);
  t = await startTestApp({ env: { UNIVERSITY_API_URL: sim.url } });
  const [employee] = await control.employees();
  if (!employee) throw new Error('the simulator has no employees');
  lastName = employee.lastName;
});
afterEach(() => control.clearFaults());
afterAll(async () => {
  await t?.close();
  await sim?.close();
});

const search = (q: string) => t.app.inject({ method: 'GET', url: `/api/employees?q=${encodeURIComponent(q)}` });
const searches = async () => (await control.stats()).byEndpoint.employeeSearch ?? 0;

describe('teacher search', () => {
  it('proxies the upstream search once and answers repeats from the cache', async () => {
    const before = await searches();
    const first = await search(lastName);
    expect(first.statusCode).toBe(200);
    expect(first.headers['content-type']).toMatch(/^application\/json/);
    const { employees } = first.json<{ employees: { id: number; lastName: string }[] }>();
    expect(employees.length).toBeGreaterThan(0);
    expect(employees.every((employee) => employee.id > 0)).toBe(true);
    expect(employees.map((employee) => employee.lastName)).toContain(lastName);
    expect(await searches()).toBe(before + 1);

    const again = await search(`  ${lastName.toUpperCase()}  `);
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual(first.json());
    expect(await searches()).toBe(before + 1);
    const ttl = await t.ctx.redis.ttl(t.ctx.keys.employeeSearch(lastName.toLowerCase()));
    expect(ttl).toBeGreaterThan(3500);
    expect(ttl).toBeLessThanOrEqual(3600);
  });

  it('answers 400 for a missing, too short, too long or repeated query', async () => {
    for (const url of [
      '/api/employees',
      '/api/employees?q=',
      '/api/employees?q=%20a%20',
      `/api/employees?q=${'я'.repeat(65)}`,
      '/api/employees?q=ab&q=cd',
    ]) {
      const response = await t.app.inject({ method: 'GET', url });
      expect(response.statusCode, url).toBe(400);
      expect(response.json<{ error: string }>().error).toMatch(/query parameter q/);
    }
  });

  it('answers 502 with the upstream’s words when the upstream fails, and caches nothing', async () => {
    await control.fault({
      endpoint: 'employeeSearch',
      kind: 'status',
      status: 500,
      error: 'справочник недоступен',
      times: 1,
    });
    const failed = await search('ова');
    expect(failed.statusCode).toBe(502);
    expect(failed.json<{ error: string }>().error).toMatch(
      /^the university failed: University API employeeSearch: HTTP 500: справочник недоступен/,
    );
    expect(await t.ctx.redis.exists(t.ctx.keys.employeeSearch('ова'))).toBe(0);
    expect((await search('ова')).statusCode).toBe(200);
  });

  it('answers 503 with Retry-After when the upstream rate-limits us', async () => {
    await control.fault({ endpoint: 'employeeSearch', kind: 'rate-limit', retryAfterSeconds: 7, times: 1 });
    const limited = await search('ев');
    expect(limited.statusCode).toBe(503);
    expect(limited.headers['retry-after']).toBe('7');
  });
});
