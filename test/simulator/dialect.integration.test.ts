/**
 * The simulator's legacy dialect: what real deployments of the older API send, so that the service can be run
 * against it. Bodies are read as bytes and decoded with the WHATWG decoder, independently of the client.
 */
import { TextDecoder } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.ts';
import { SPLIT_ROW_ID_STEP } from '../../src/simulator/dialect.ts';
import type { RunningSimulator } from '../../src/simulator/index.ts';
import { mergeRows } from '../../src/timetable/merge-rows.ts';
import { createUniversityClient, type UniversityClient } from '../../src/upstream/client.ts';
import type { TimetableEntry } from '../../src/upstream/schedule-schema.ts';
import { call, type SimUser, start } from './helpers.ts';

async function raw(base: string, path: string, init: RequestInit = {}) {
  const response = await fetch(`${base}${path}`, init);
  const bytes = new Uint8Array(await response.arrayBuffer());
  const contentType = response.headers.get('content-type');
  const charset = /charset=([\w-]+)/.exec(contentType ?? '')?.[1] ?? 'utf-8';
  return { status: response.status, contentType, bytes, json: JSON.parse(new TextDecoder(charset).decode(bytes)) };
}

/** A group's timetable with the per-group rows' ids taken back to the class's and the group lists left out. */
function ownRows(timetable: { entries: TimetableEntry[]; problems: unknown[] }) {
  const entries = timetable.entries.map(({ groups: _groups, ...entry }) => ({
    ...entry,
    id: entry.id % SPLIT_ROW_ID_STEP,
  }));
  return { entries, problems: timetable.problems };
}

describe('simulator legacy dialect', () => {
  let standard: RunningSimulator;
  let legacy: RunningSimulator;
  let clients: UniversityClient[];
  let groupId: number;
  let user: SimUser;

  beforeAll(async () => {
    const options = { groups: 40, employees: 60, users: 5 };
    [standard, legacy] = await Promise.all([start(options), start({ ...options, dialect: 'legacy' })]);
    clients = [standard, legacy].map((sim) => createUniversityClient({ baseUrl: sim.url, logger: silentLogger() }));
    groupId = (await call<{ groups: { id: number }[] }>(legacy.url, '/_sim/groups')).body.groups[0]?.id ?? 0;
    user = (await call<{ users: SimUser[] }>(legacy.url, '/_sim/users')).body.users[0] as SimUser;
  });

  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close()));
    await Promise.all([standard.close(), legacy.close()]);
  });

  it('answers timetables in windows-1251, without success, with strings, HH.MM, DD.MM.YYYY and ";"', async () => {
    const answer = await raw(legacy.url, `/groups/${groupId}/schedule`);
    expect(answer.contentType).toBe('application/json; charset=windows-1251');
    // Cyrillic in windows-1251 is one byte per letter, never the UTF-8 lead bytes 0xD0/0xD1 followed by 0x80–0xBF.
    expect(Buffer.from(answer.bytes).toString('utf8')).toContain('\ufffd');
    expect(answer.json).not.toHaveProperty('success');
    const [entry] = answer.json.subjects as Record<string, unknown>[];
    expect(entry?.id).toMatch(/^\d+$/);
    expect(entry?.building_id).toMatch(/^\d+$/);
    expect(entry?.start_day_schedule).toMatch(/^\d{2}\.\d{2}\.20\d{2}$/);
    expect(entry?.begin_time_schedule).toMatch(/^\d{2}\.\d{2}$/);
    expect(entry?.total_time_schedule).toMatch(/^\d{2}\.\d{2}-\d{2}\.\d{2}$/);
    expect(entry?.subject_name).toMatch(/[А-Яа-я]/);
    const shared = (answer.json.subjects as Record<string, unknown>[]).find((e) => String(e.group_list).includes(';'));
    expect(shared?.group_list).not.toContain(',');
  });

  it('sends a class of several groups as one row per group (even ids), and control characters in some text', async () => {
    const teacherId = [...((await clients[0]?.groupSchedule(groupId))?.entries ?? [])].find(
      (entry) => entry.groups.length > 1 && entry.id % 2 === 0,
    )?.teacher.id;
    expect(teacherId).toBeDefined();
    const answer = await raw(legacy.url, `/employees/${teacherId}/schedule`);
    const rows = answer.json.subjects as Record<string, unknown>[];
    const split = rows.filter((row) => Number(row.id) > SPLIT_ROW_ID_STEP);
    expect(split.length).toBeGreaterThan(0);
    for (const row of split) {
      const first = rows.find((other) => Number(other.id) === Number(row.id) % SPLIT_ROW_ID_STEP);
      expect(first).toBeDefined();
      expect(String(row.group_list)).not.toMatch(/[;,]/);
      expect(String(first?.group_list)).not.toMatch(/[;,]/);
      expect({ ...row, id: '', group_list: '' }).toEqual({ ...first, id: '', group_list: '' });
    }
    const all = JSON.stringify(rows);
    expect(all).toContain('\\u0007');
    expect(all).toContain('\\u000b');
  });

  it('legacy-unlabelled answers the same windows-1251 bytes with no charset in Content-Type', async () => {
    const labelled = await raw(legacy.url, `/groups/${groupId}/schedule`);
    await call(legacy.url, '/_sim/dialect', { method: 'PUT', body: { dialect: 'legacy-unlabelled' } });
    try {
      const response = await fetch(`${legacy.url}/groups/${groupId}/schedule`);
      expect(response.headers.get('content-type')).toBe('application/json');
      expect(new Uint8Array(await response.arrayBuffer())).toEqual(labelled.bytes);
    } finally {
      await call(legacy.url, '/_sim/dialect', { method: 'PUT', body: { dialect: 'legacy' } });
    }
  });

  it('answers the teacher search with employees in snake_case and profiles with nulls', async () => {
    const search = await raw(legacy.url, `/employees?q=${encodeURIComponent('а')}`);
    expect(search.json.success).toBe(true);
    const [employee] = search.json.employees as Record<string, unknown>[];
    expect(Object.keys(employee ?? {}).sort()).toEqual(
      ['email', 'employee_id', 'firstname', 'is_teacher', 'lastname', 'middlename', 'post', 'subdivision'].sort(),
    );
    expect(employee?.employee_id).toMatch(/^\d+$/);

    const select = { id: true, firstName: true, studentId: true, group: { id: true, name: true } };
    const me = await raw(legacy.url, '/users/@me', {
      method: 'POST',
      headers: { authorization: `Bearer ${user.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ select }),
    });
    expect(me.json).toEqual({
      user: {
        id: String(user.id),
        firstName: expect.any(String),
        studentId: null,
        group: { id: null, name: expect.any(String) },
      },
    });
  });

  it('reads, through the client, to the same timetables as the standard dialect', async () => {
    const [fromStandard, fromLegacy] = clients as [UniversityClient, UniversityClient];
    const expected = await fromStandard.groupSchedule(groupId);
    expect(expected.entries.length).toBeGreaterThan(0);
    // A group's timetable has its own row of a class sent per group: another id, only this group listed.
    expect(ownRows(await fromLegacy.groupSchedule(groupId))).toEqual(ownRows(expected));
    const teacherId = expected.entries.find((entry) => entry.teacher.id !== null)?.teacher.id ?? 0;
    // A teacher's has every group's row, which merge back into the class.
    const teacher = await fromLegacy.employeeSchedule(teacherId);
    expect(teacher.problems).toEqual([]);
    expect(mergeRows(teacher.entries)).toEqual(mergeRows((await fromStandard.employeeSchedule(teacherId)).entries));
    expect(ownRows(await fromLegacy.mySchedule(user.token))).toEqual(
      ownRows(await fromStandard.mySchedule(user.token)),
    );
    expect(await fromLegacy.myPlan(user.token)).toEqual(await fromStandard.myPlan(user.token));
    const lastName = expected.entries[0]?.teacher.lastName ?? '';
    const pick = (found: { id: number; lastName: string; firstName: string; teacher: boolean }[]) =>
      found.map(({ id, lastName: last, firstName, teacher }) => ({ id, last, firstName, teacher }));
    const standardFound = pick(await fromStandard.searchEmployees(lastName));
    expect(standardFound.length).toBeGreaterThan(0);
    expect(pick(await fromLegacy.searchEmployees(lastName))).toEqual(standardFound);
  });

  it('reads, through the client, a profile that is null in every field, the group id included', async () => {
    const [fromStandard, fromLegacy] = clients as [UniversityClient, UniversityClient];
    // The fields a legacy deployment leaves null, and only those: every value of the answer is null.
    const nulls = {
      photoPath: true,
      studentId: true,
      gender: true,
      group: { id: true, specialization: true, yearStart: true },
    } as const;
    const answer = await raw(legacy.url, '/users/@me', {
      method: 'POST',
      headers: { authorization: `Bearer ${user.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ select: nulls }),
    });
    const nullGroup = { id: null, specialization: null, yearStart: null };
    expect(answer.json).toEqual({ user: { photoPath: null, studentId: null, gender: null, group: nullGroup } });
    expect(await fromLegacy.me(user.token, nulls)).toEqual({
      photoPath: '',
      studentId: null,
      gender: '',
      group: { id: null, specialization: '', yearStart: null },
    });
    // The whole profile: the same as the standard dialect's but for the fields left null.
    const all = {
      id: true,
      username: true,
      firstName: true,
      lastName: true,
      middleName: true,
      gender: true,
      photoPath: true,
      studentId: true,
      group: true,
    } as const;
    const expected = await fromStandard.me(user.token, all);
    expect(expected.group?.id).toBeGreaterThan(0);
    expect(await fromLegacy.me(user.token, all)).toEqual({
      ...expected,
      gender: '',
      photoPath: '',
      studentId: null,
      group: { ...expected.group, id: null, specialization: '', yearStart: null },
    });
  });

  it('switches dialect at run time with PUT /_sim/dialect, and rejects an unknown one', async () => {
    expect((await call(standard.url, '/_sim/dialect')).body).toEqual({ dialect: 'standard' });
    const before = await raw(standard.url, `/groups/${groupId}/schedule`);
    expect(before.contentType).toBe('application/json; charset=utf-8');
    const put = await call(standard.url, '/_sim/dialect', { method: 'PUT', body: { dialect: 'legacy' } });
    expect(put).toMatchObject({ status: 200, body: { dialect: 'legacy' } });
    const after = await raw(standard.url, `/groups/${groupId}/schedule`);
    expect(after.contentType).toBe('application/json; charset=windows-1251');
    expect(after.json).not.toHaveProperty('success');
    expect((await call(standard.url, '/_sim/dialect', { method: 'PUT', body: { dialect: 'old' } })).status).toBe(400);
    await call(standard.url, '/_sim/reset', { method: 'POST' });
    expect((await call(standard.url, '/_sim/dialect')).body).toEqual({ dialect: 'standard' });
  });
});
