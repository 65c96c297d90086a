import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.ts';
import { startSimulator } from '../../src/simulator/index.ts';
import { createUniversityClient, type UniversityClient } from '../../src/upstream/client.ts';
import { simControl } from './sim-control.ts';

const REFERENCE_DATE = new Date('2025-10-01T00:00:00Z');
type Simulator = Awaited<ReturnType<typeof startSimulator>>;

interface Deployment {
  sim: Simulator;
  client: UniversityClient;
}

const deployments: Deployment[] = [];

async function deployment(variant: { dateFormat?: 'DD.MM.YY' | 'YYYY-MM-DD'; numericStrings?: boolean }) {
  const size = { groups: 60, employees: 60, users: 10 };
  const sim = await startSimulator({ port: 0, seed: 1, referenceDate: REFERENCE_DATE, ...size, ...variant });
  const client = createUniversityClient({ baseUrl: sim.url, logger: silentLogger() });
  const created = { sim, client };
  deployments.push(created);
  return created;
}

let standard: Deployment;
let variants: Deployment[];

beforeAll(async () => {
  standard = await deployment({});
  variants = [
    await deployment({ numericStrings: true }),
    await deployment({ dateFormat: 'YYYY-MM-DD' }),
    await deployment({ numericStrings: true, dateFormat: 'YYYY-MM-DD' }),
  ];
});
afterAll(async () => {
  for (const { sim, client } of deployments.splice(0)) {
    await client.close();
    await sim.close();
  }
});

describe('deployment variants normalise identically', () => {
  it('gives the same group and employee timetables', async () => {
    const control = simControl(standard.sim.url);
    const [group] = await control.groups();
    const expected = await standard.client.groupSchedule(group?.id ?? 0);
    expect(expected.problems).toEqual([]);
    expect(expected.entries.length).toBeGreaterThan(0);
    const teacherId = expected.entries.find((e) => e.teacher.id !== null)?.teacher.id ?? 0;
    const expectedTeacher = await standard.client.employeeSchedule(teacherId);
    for (const { client } of variants) {
      expect(await client.groupSchedule(group?.id ?? 0)).toEqual(expected);
      expect(await client.employeeSchedule(teacherId)).toEqual(expectedTeacher);
    }
  });

  it('gives the same profile, plan and search results', async () => {
    const [user] = await simControl(standard.sim.url).users();
    const [employee] = await simControl(standard.sim.url).employees();
    const token = user?.token ?? '';
    const select = { id: true, studentId: true, group: true } as const;
    const expected = {
      me: await standard.client.me(token, select),
      plan: await standard.client.myPlan(token),
      search: await standard.client.searchEmployees(employee?.lastName ?? ''),
    };
    expect(expected.plan.length).toBeGreaterThan(0);
    for (const { client } of variants) {
      expect(await client.me(token, select)).toEqual(expected.me);
      expect(await client.myPlan(token)).toEqual(expected.plan);
      expect(await client.searchEmployees(employee?.lastName ?? '')).toEqual(expected.search);
    }
  });
});

describe('invalid entries added through the control API', () => {
  const cases: [string, Record<string, unknown>, string, string][] = [
    ['weekday 0', { day_week_schedule: 0 }, 'day_week_schedule', '0'],
    ['weekday 8', { day_week_schedule: 8 }, 'day_week_schedule', '8'],
    ['week type 3', { type_week_schedule: 3 }, 'type_week_schedule', '3'],
    ['impossible date', { start_day_schedule: '31.02.25' }, 'start_day_schedule', '31.02.25'],
    ['end before begin', { begin_time_schedule: '12:00', end_time_schedule: '11:00' }, 'end_time_schedule', '11:00'],
    ['end equal to begin', { begin_time_schedule: '12:00', end_time_schedule: '12:00' }, 'end_time_schedule', '12:00'],
  ];

  it.each(cases)(
    '%s becomes one problem naming the entry and field; the rest stay',
    async (_name, fields, field, value) => {
      const control = simControl(standard.sim.url);
      const [group] = await control.groups();
      const before = await standard.client.groupSchedule(group?.id ?? 0);
      const added = await control.addEntry({ groupIds: [group?.id], ...fields });
      const after = await standard.client.groupSchedule(group?.id ?? 0);
      expect(after.entries).toEqual(before.entries);
      expect(after.problems).toHaveLength(1);
      expect(after.problems[0]).toMatchObject({ entryId: added.id, field });
      expect(after.problems[0]?.reason).toContain(value);
      await control.deleteEntry(added.id);
      expect(await standard.client.groupSchedule(group?.id ?? 0)).toEqual(before);
    },
  );
});
