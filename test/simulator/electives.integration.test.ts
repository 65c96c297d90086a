import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../../src/simulator/index.ts';
import { call, employeeEntries, groupEntries, type SimUser, start, type WireEntry } from './helpers.ts';

type ControlEntry = WireEntry & { groupIds: number[]; userIds?: number[] };

describe('simulator electives (entries with userIds)', () => {
  let sim: RunningSimulator;
  let users: SimUser[];
  let teacherId: number;
  /** Two users of the same group and subgroup: their personal timetables are equal until one has an elective. */
  let student: SimUser;
  let classmate: SimUser;

  const personal = async (user: SimUser): Promise<WireEntry[]> => {
    const { status, body } = await call<{ subjects: WireEntry[] }>(sim.url, '/users/@me/schedule', {
      headers: { Authorization: `Bearer ${user.token}` },
    });
    expect(status).toBe(200);
    return body.subjects;
  };
  const elective = (fields: Record<string, unknown> = {}) =>
    call<ControlEntry>(sim.url, '/_sim/entries', {
      method: 'POST',
      body: {
        userIds: [student.id],
        subject_name: 'Факультатив',
        teacher_id: teacherId,
        day_week_schedule: 6,
        ...fields,
      },
    });

  beforeAll(async () => {
    sim = await start({ users: 400 });
    users = (await call<{ users: SimUser[] }>(sim.url, '/_sim/users')).body.users;
    const pair = users.flatMap((a) =>
      users.filter((b) => b.id !== a.id && b.groupId === a.groupId && b.subgroup === a.subgroup).map((b) => [a, b]),
    )[0];
    if (!pair) throw new Error('no two users share a group and subgroup');
    [student, classmate] = pair as [SimUser, SimUser];
    teacherId = (await groupEntries(sim.url, student.groupId))[0]?.teacher_id ?? 0;
  });

  afterEach(async () => {
    expect((await call(sim.url, '/_sim/reset', { method: 'POST' })).status).toBe(204);
  });

  afterAll(async () => {
    await sim.close();
  });

  it('shows an elective in its user’s and its teacher’s timetables only, not in the group’s', async () => {
    const before = await personal(classmate);
    expect(await personal(student)).toEqual(before);
    const { status, body } = await elective();
    expect(status).toBe(201);
    expect(body).toMatchObject({ groupIds: [], userIds: [student.id], group_list: '' });
    expect((await call<ControlEntry>(sim.url, `/_sim/entries/${body.id}`)).body).toEqual(body);
    const { groupIds: _groups, userIds: _users, ...wire } = body;
    const own = await personal(student);
    expect(own.filter((entry) => entry.id === body.id)).toEqual([wire]);
    expect(own.filter((entry) => entry.id !== body.id)).toEqual(before);
    expect(await personal(classmate)).toEqual(before);
    expect((await groupEntries(sim.url, student.groupId)).some((entry) => entry.id === body.id)).toBe(false);
    expect((await employeeEntries(sim.url, teacherId)).some((entry) => entry.id === body.id)).toBe(true);
  });

  it('keeps the personal timetable of a user with an elective current when the elective or the group changes', async () => {
    const { body } = await elective();
    await personal(student);
    await call(sim.url, `/_sim/entries/${body.id}`, { method: 'PATCH', body: { num_auditorium_schedule: 'Ф-1' } });
    expect((await personal(student)).find((entry) => entry.id === body.id)?.num_auditorium_schedule).toBe('Ф-1');
    const groupEntry = (await groupEntries(sim.url, student.groupId)).find((entry) => !entry.note_schedule);
    if (!groupEntry) throw new Error('the group has no class for the whole group');
    await call(sim.url, `/_sim/entries/${groupEntry.id}`, {
      method: 'PATCH',
      body: { num_auditorium_schedule: 'Ф-2' },
    });
    expect((await personal(student)).find((entry) => entry.id === groupEntry.id)?.num_auditorium_schedule).toBe('Ф-2');
    expect((await personal(classmate)).find((entry) => entry.id === groupEntry.id)?.num_auditorium_schedule).toBe(
      'Ф-2',
    );
  });

  it('moves an elective between users, and back to the shared body when a user has none left', async () => {
    const { body } = await elective();
    const before = await personal(classmate);
    const moved = await call<ControlEntry>(sim.url, `/_sim/entries/${body.id}`, {
      method: 'PATCH',
      body: { userIds: [classmate.id] },
    });
    expect(moved.body.userIds).toEqual([classmate.id]);
    expect((await personal(student)).some((entry) => entry.id === body.id)).toBe(false);
    expect((await personal(classmate)).filter((entry) => entry.id !== body.id)).toEqual(before);
    expect((await personal(classmate)).some((entry) => entry.id === body.id)).toBe(true);
    expect((await call(sim.url, `/_sim/entries/${body.id}`, { method: 'DELETE' })).status).toBe(204);
    expect(await personal(classmate)).toEqual(before);
  });

  it('shows a class with both groupIds and userIds in the group and once in the user’s timetable', async () => {
    const other = users.find((user) => user.groupId !== student.groupId) as SimUser;
    const { status, body } = await elective({ groupIds: [other.groupId] });
    expect(status).toBe(201);
    expect(body).toMatchObject({ groupIds: [other.groupId], userIds: [student.id] });
    expect((await groupEntries(sim.url, other.groupId)).some((entry) => entry.id === body.id)).toBe(true);
    expect((await personal(student)).filter((entry) => entry.id === body.id)).toHaveLength(1);
    const inGroup = await call<ControlEntry>(sim.url, '/_sim/entries', {
      method: 'POST',
      body: { groupIds: [student.groupId], userIds: [student.id], subject_name: 'Спецкурс' },
    });
    expect((await personal(student)).filter((entry) => entry.id === inGroup.body.id)).toHaveLength(1);
  });

  it('refuses an entry of nobody and unknown users', async () => {
    expect((await call(sim.url, '/_sim/entries', { method: 'POST', body: { subject_name: 'x' } })).status).toBe(400);
    const none = await call<{ error: string }>(sim.url, '/_sim/entries', {
      method: 'POST',
      body: { groupIds: [], userIds: [] },
    });
    expect(none.status).toBe(400);
    expect(none.body.error).toMatch(/at least one/);
    const unknown = await call<{ error: string }>(sim.url, '/_sim/entries', { method: 'POST', body: { userIds: [1] } });
    expect(unknown).toMatchObject({ status: 400, body: { error: 'userIds: unknown user 1' } });
    const { body } = await elective();
    const emptied = await call(sim.url, `/_sim/entries/${body.id}`, { method: 'PATCH', body: { userIds: [] } });
    expect(emptied.status).toBe(400);
    const toGroup = await call<ControlEntry>(sim.url, `/_sim/entries/${body.id}`, {
      method: 'PATCH',
      body: { userIds: [], groupIds: [student.groupId] },
    });
    expect(toGroup.status).toBe(200);
    expect(toGroup.body.userIds).toBeUndefined();
    expect((await groupEntries(sim.url, student.groupId)).some((entry) => entry.id === body.id)).toBe(true);
  });
});
