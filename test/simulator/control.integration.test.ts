import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../../src/simulator/index.ts';
import { call, employeeEntries, groupEntries, type SimUser, start, type WireEntry } from './helpers.ts';

interface SimGroup {
  id: number;
  name: string;
  entryCount: number;
}

type ControlEntry = WireEntry & { groupIds: number[] };

describe('simulator control endpoints', () => {
  let sim: RunningSimulator;
  let groups: SimGroup[];
  let users: SimUser[];
  let teachers: number[];

  beforeAll(async () => {
    sim = await start();
    groups = (await call<{ groups: SimGroup[] }>(sim.url, '/_sim/groups')).body.groups;
    users = (await call<{ users: SimUser[] }>(sim.url, '/_sim/users')).body.users;
    const someEntries = await groupEntries(sim.url, groups[0]?.id ?? 0);
    teachers = [...new Set(someEntries.map((entry) => entry.teacher_id))];
  });

  afterEach(async () => {
    expect((await call(sim.url, '/_sim/reset', { method: 'POST' })).status).toBe(204);
  });

  afterAll(async () => {
    await sim.close();
  });

  const [first, second] = [(): SimGroup => groups[0] as SimGroup, (): SimGroup => groups[1] as SimGroup];

  it('lists employees with whether they teach: the teachers of a group’s classes do, some staff do not', async () => {
    const staff = (await call<{ employees: { id: number; teacher: boolean }[] }>(sim.url, '/_sim/employees')).body
      .employees;
    const teaching = new Set(staff.filter((employee) => employee.teacher).map((employee) => employee.id));
    expect(teachers.length).toBeGreaterThan(0);
    for (const id of teachers) expect(teaching.has(id)).toBe(true);
    expect(staff.some((employee) => !employee.teacher)).toBe(true);
  });

  it('adds a class shown in every named group and in the teacher’s timetable, with derived fields filled', async () => {
    const teacherId = teachers[0] as number;
    const { status, body } = await call<ControlEntry>(sim.url, '/_sim/entries', {
      method: 'POST',
      body: {
        groupIds: [first().id, second().id],
        subject_name: 'Дополнительная лекция',
        subject_kind_name: 'лекция',
        day_week_schedule: 6,
        time_interval_id: 7,
        teacher_id: teacherId,
        type_week_schedule: 1,
      },
    });
    expect(status).toBe(201);
    expect(body).toMatchObject({
      group_list: `${first().name}, ${second().name}`,
      groupIds: [first().id, second().id],
      total_time_schedule: '19:00-20:30',
      begin_time_schedule: '19:00',
      end_time_schedule: '20:30',
      start_day_schedule: '01.09.25',
      finish_day_schedule: '28.12.25',
      year: 2025,
      note_schedule: '',
      teacher_lastname: expect.any(String),
      building_name: expect.any(String),
    });
    const { groupIds: _groupIds, ...wire } = body;
    for (const group of [first(), second()])
      expect((await groupEntries(sim.url, group.id)).find((e) => e.id === body.id)).toEqual(wire);
    expect((await employeeEntries(sim.url, teacherId)).find((e) => e.id === body.id)).toEqual(wire);
    expect((await call<ControlEntry>(sim.url, `/_sim/entries/${body.id}`)).body).toEqual(body);
    const listed = (await call<{ groups: SimGroup[] }>(sim.url, '/_sim/groups')).body.groups.find(
      (g) => g.id === first().id,
    );
    expect(listed?.entryCount).toBe(first().entryCount + 1);
  });

  it('stores invalid values as given, honours a given id, and rejects bad requests', async () => {
    const created = await call<ControlEntry>(sim.url, '/_sim/entries', {
      method: 'POST',
      body: {
        id: 999_001,
        groupIds: [first().id],
        day_week_schedule: 9,
        start_day_schedule: '31.02.25',
        type_week_schedule: 'odd',
      },
    });
    expect(created.status).toBe(201);
    const served = (await groupEntries(sim.url, first().id)).find((entry) => entry.id === 999_001);
    expect(served).toMatchObject({ day_week_schedule: 9, start_day_schedule: '31.02.25', type_week_schedule: 'odd' });
    const duplicate = await call(sim.url, '/_sim/entries', {
      method: 'POST',
      body: { id: 999_001, groupIds: [first().id] },
    });
    expect(duplicate.status).toBe(409);
    const noGroups = await call<{ error: string }>(sim.url, '/_sim/entries', {
      method: 'POST',
      body: { subject_name: 'x' },
    });
    expect(noGroups.status).toBe(400);
    expect(noGroups.body.error).toContain('groupIds');
    const unknownGroup = await call(sim.url, '/_sim/entries', { method: 'POST', body: { groupIds: [1] } });
    expect(unknownGroup.status).toBe(400);
    expect((await call(sim.url, '/_sim/entries', { method: 'POST', body: '{' })).status).toBe(400);
    expect((await call(sim.url, '/_sim/entries/123456789')).status).toBe(404);
  });

  it('moves a class (day, slot, teacher) in the group view and in both teachers’ views', async () => {
    const entries = await groupEntries(sim.url, first().id);
    const original = entries.find((entry) => !entry.group_list.includes(',')) as WireEntry;
    const newTeacher = teachers.find((id) => id !== original.teacher_id) as number;
    const { status, body } = await call<ControlEntry>(sim.url, `/_sim/entries/${original.id}`, {
      method: 'PATCH',
      body: { day_week_schedule: 6, time_interval_id: 4, teacher_id: newTeacher, num_auditorium_schedule: '777' },
    });
    expect(status).toBe(200);
    expect(body).toMatchObject({
      id: original.id,
      day_week_schedule: 6,
      time_interval_id: 4,
      begin_time_schedule: '14:00',
      total_time_schedule: '14:00-15:30',
      teacher_id: newTeacher,
      num_auditorium_schedule: '777',
      subject_name: original.subject_name,
    });
    const moved = (await groupEntries(sim.url, first().id)).find((entry) => entry.id === original.id);
    expect(moved).toMatchObject({ day_week_schedule: 6, begin_time_schedule: '14:00', teacher_id: newTeacher });
    const staff = (await call<{ employees: { id: number; lastName: string }[] }>(sim.url, '/_sim/employees')).body
      .employees;
    expect(moved?.teacher_lastname).toBe(staff.find((employee) => employee.id === newTeacher)?.lastName);
    expect((await employeeEntries(sim.url, newTeacher)).find((entry) => entry.id === original.id)).toEqual(moved);
    expect((await employeeEntries(sim.url, original.teacher_id)).some((entry) => entry.id === original.id)).toBe(false);
    const bad = await call(sim.url, `/_sim/entries/${original.id}`, { method: 'PATCH', body: { id: 5 } });
    expect(bad.status).toBe(400);
    expect((await call(sim.url, '/_sim/entries/123456789', { method: 'PATCH', body: {} })).status).toBe(404);
  });

  it('moves a class to other groups with PATCH groupIds, updating group_list', async () => {
    const original = (await groupEntries(sim.url, first().id)).find(
      (entry) => !entry.group_list.includes(','),
    ) as WireEntry;
    const { status, body } = await call<ControlEntry>(sim.url, `/_sim/entries/${original.id}`, {
      method: 'PATCH',
      body: { groupIds: [second().id] },
    });
    expect(status).toBe(200);
    expect(body).toMatchObject({ groupIds: [second().id], group_list: second().name });
    expect((await groupEntries(sim.url, first().id)).some((entry) => entry.id === original.id)).toBe(false);
    expect((await groupEntries(sim.url, second().id)).find((entry) => entry.id === original.id)?.group_list).toBe(
      second().name,
    );
    const unknown = await call(sim.url, `/_sim/entries/${original.id}`, { method: 'PATCH', body: { groupIds: [1] } });
    expect(unknown.status).toBe(400);
  });

  it('cancels a class: it vanishes from group, teacher and personal timetables', async () => {
    const user = users[0] as SimUser;
    const entries = await groupEntries(sim.url, user.groupId);
    const target = entries.find((entry) => !entry.note_schedule.includes('подгруппа')) as WireEntry;
    const headers = { Authorization: `Bearer ${user.token}` };
    const before = await call<{ subjects: WireEntry[] }>(sim.url, '/users/@me/schedule', { headers });
    expect(before.body.subjects.some((entry) => entry.id === target.id)).toBe(true);
    expect((await call(sim.url, `/_sim/entries/${target.id}`, { method: 'DELETE' })).status).toBe(204);
    expect((await groupEntries(sim.url, user.groupId)).some((entry) => entry.id === target.id)).toBe(false);
    expect((await employeeEntries(sim.url, target.teacher_id)).some((entry) => entry.id === target.id)).toBe(false);
    const after = await call<{ subjects: WireEntry[] }>(sim.url, '/users/@me/schedule', { headers });
    expect(after.body.subjects.map((entry) => entry.id)).toEqual(
      before.body.subjects.map((entry) => entry.id).filter((id) => id !== target.id),
    );
    expect((await call(sim.url, `/_sim/entries/${target.id}`)).status).toBe(404);
    expect((await call(sim.url, `/_sim/entries/${target.id}`, { method: 'DELETE' })).status).toBe(404);
  });

  it('counts API requests (faulted ones too, control requests never) and zeroes the counters', async () => {
    expect((await call(sim.url, '/_sim/stats', { method: 'DELETE' })).status).toBe(204);
    await call(sim.url, `/groups/${first().id}/schedule`);
    await call(sim.url, '/groups/999999/schedule');
    await call(sim.url, `/employees?q=${encodeURIComponent('ов')}`);
    await call(sim.url, '/users/@me', { method: 'POST' });
    await call(sim.url, '/_sim/faults', { method: 'POST', body: { endpoint: 'myPlan', kind: 'status', status: 503 } });
    expect((await call(sim.url, '/users/@me/plan')).status).toBe(503);
    await call(sim.url, '/_sim/groups');
    await call(sim.url, '/nowhere');
    const { body } = await call(sim.url, '/_sim/stats');
    expect(body).toEqual({
      requests: {
        total: 5,
        byEndpoint: { groupSchedule: 2, employeeSchedule: 0, employeeSearch: 1, me: 1, mySchedule: 0, myPlan: 1 },
      },
    });
    // Per path, for the paths asked for only: the same endpoint's other ids, queries and unasked paths apart.
    await call(sim.url, `/groups/${first().id}/schedule?from=2025-09-01`);
    const paths = [`/groups/${first().id}/schedule`, '/groups/999999/schedule', '/groups/1/schedule', '/nowhere'];
    const query = paths.map((path) => `path=${encodeURIComponent(path)}`).join('&');
    const perPath = await call<{ requests: { byPath: Record<string, number> } }>(sim.url, `/_sim/stats?${query}`);
    expect(perPath.body.requests.byPath).toEqual({
      [`/groups/${first().id}/schedule`]: 2,
      '/groups/999999/schedule': 1,
      '/groups/1/schedule': 0,
      '/nowhere': 0,
    });
    await call(sim.url, '/_sim/stats', { method: 'DELETE' });
    expect((await call<{ requests: { total: number } }>(sim.url, '/_sim/stats')).body.requests.total).toBe(0);
    const zeroed = await call<{ requests: { byPath: Record<string, number> } }>(sim.url, `/_sim/stats?${query}`);
    expect(Object.values(zeroed.body.requests.byPath)).toEqual([0, 0, 0, 0]);
  });

  it('reset regenerates the original data and clears faults and stats', async () => {
    const originalBytes = await (await fetch(`${sim.url}/groups/${first().id}/schedule`)).text();
    const entries = await groupEntries(sim.url, first().id);
    await call(sim.url, `/_sim/entries/${entries[0]?.id}`, { method: 'DELETE' });
    await call(sim.url, '/_sim/entries', { method: 'POST', body: { groupIds: [first().id] } });
    await call(sim.url, '/_sim/faults', { method: 'POST', body: { kind: 'status', status: 500 } });
    expect((await call(sim.url, `/groups/${first().id}/schedule`)).status).toBe(500);
    expect((await call(sim.url, '/_sim/reset', { method: 'POST' })).status).toBe(204);
    expect(await (await fetch(`${sim.url}/groups/${first().id}/schedule`)).text()).toBe(originalBytes);
    const stats = await call<{ requests: { total: number } }>(sim.url, '/_sim/stats');
    expect(stats.body.requests.total).toBe(1);
  });
});
