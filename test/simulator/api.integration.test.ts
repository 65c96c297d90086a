import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../../src/simulator/index.ts';
import { call, groupEntries, type SimUser, start, type WireEntry } from './helpers.ts';

interface SimEmployee {
  id: number;
  lastName: string;
  firstName: string;
  middleName: string;
}

interface Employee extends SimEmployee {
  teacher: boolean;
  email: string;
  post: string;
  gender: string;
  photoPath: string;
  workPhone: string;
  subDivision: string;
}

const fullName = (e: SimEmployee): string => `${e.lastName} ${e.firstName} ${e.middleName}`;

describe('simulator API', () => {
  let sim: RunningSimulator;
  let employees: SimEmployee[];
  let users: SimUser[];
  const auth = (user: SimUser): Record<string, string> => ({ Authorization: `Bearer ${user.token}` });

  beforeAll(async () => {
    sim = await start();
    employees = (await call<{ employees: SimEmployee[] }>(sim.url, '/_sim/employees')).body.employees;
    users = (await call<{ users: SimUser[] }>(sim.url, '/_sim/users')).body.users;
  });

  afterAll(async () => {
    await sim.close();
  });

  describe('group and employee timetables', () => {
    it('answers 404 with success:false for unknown ids and 400 for ids that are not positive integers', async () => {
      const group = await call(sim.url, '/groups/999999/schedule');
      expect(group).toMatchObject({ status: 404, body: { success: false, error: 'Группа 999999 не найдена' } });
      const employee = await call(sim.url, '/employees/999999/schedule');
      expect(employee).toMatchObject({ status: 404, body: { success: false, error: 'Сотрудник 999999 не найден' } });
      for (const bad of ['abc', '0', '-5', '1.5', '12abc']) {
        const answer = await call<{ success: boolean; error: string }>(sim.url, `/groups/${bad}/schedule`);
        expect(answer.status, bad).toBe(400);
        expect(answer.body.success).toBe(false);
        expect(answer.body.error).toEqual(expect.any(String));
      }
      expect((await call(sim.url, '/employees/x/schedule')).status).toBe(400);
    });

    it('sends JSON with charset and Content-Length, and 404 JSON for unknown paths', async () => {
      const response = await fetch(`${sim.url}/employees/${employees[0]?.id}/schedule`);
      expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
      const text = await response.text();
      expect(Number(response.headers.get('content-length'))).toBe(Buffer.byteLength(text));
      const unknown = await call<{ error: string }>(sim.url, '/no/such/path');
      expect(unknown.status).toBe(404);
      expect(Object.keys(unknown.body)).toEqual(['error']);
    });
  });

  it('answers its root with the endpoints there are to call, where a newcomer lands', async () => {
    const root = await call<{ api: string[]; control: string[] }>(sim.url, '/');
    expect(root.status).toBe(200);
    expect(root.body.api).toEqual([
      'GET /groups/{id}/schedule',
      'GET /employees/{id}/schedule',
      'GET /employees?q={name}',
      'POST /users/@me',
      'GET /users/@me/schedule',
      'GET /users/@me/plan',
    ]);
    expect(root.body.control).toContain('GET /_sim/groups');
    // Every listed control route without a parameter answers (none is a 404 of the control router).
    for (const line of root.body.control.filter((route) => route.startsWith('GET /') && !route.includes('{')))
      expect((await call(sim.url, line.slice(4))).status, line).toBe(200);
  });

  describe('employee search', () => {
    it('finds one employee by full name in any case and returns the object itself', async () => {
      const names = employees.map((e) => fullName(e).toLocaleLowerCase('ru'));
      const unique = employees.find(
        (e) => names.filter((n) => n.includes(fullName(e).toLocaleLowerCase('ru'))).length === 1,
      );
      expect(unique).toBeDefined();
      const q = fullName(unique as SimEmployee).toLocaleUpperCase('ru');
      const { status, body } = await call<{ success: boolean; users: Employee }>(
        sim.url,
        `/employees?q=${encodeURIComponent(q)}`,
      );
      expect(status).toBe(200);
      expect(body.success).toBe(true);
      expect(Array.isArray(body.users)).toBe(false);
      expect(body.users).toMatchObject({
        ...unique,
        teacher: expect.any(Boolean),
        gender: expect.stringMatching(/^(MALE|FEMALE)$/),
      });
      for (const field of ['email', 'post', 'photoPath', 'workPhone', 'subDivision']) {
        expect(typeof body.users[field as keyof Employee], field).toBe('string');
      }
    });

    it('returns an array sorted by last name (at most 50) for several matches and [] for none', async () => {
      const q = 'ОВ';
      const { body } = await call<{ success: boolean; users: Employee[] }>(
        sim.url,
        `/employees?q=${encodeURIComponent(q)}`,
      );
      const expected = employees.filter((e) => fullName(e).toLocaleLowerCase('ru').includes('ов'));
      expect(Array.isArray(body.users)).toBe(true);
      expect(body.users.length).toBe(Math.min(50, expected.length));
      const lastNames = body.users.map((e) => e.lastName);
      expect(lastNames).toEqual([...lastNames].sort((a, b) => a.localeCompare(b, 'ru')));
      const lowercase = await call<{ users: Employee[] }>(sim.url, `/employees?q=${encodeURIComponent('ский')}`);
      expect(lowercase.body.users.length).toBeGreaterThan(1);
      for (const e of lowercase.body.users) expect(fullName(e).toLocaleLowerCase('ru')).toContain('ский');
      const none = await call(sim.url, `/employees?q=${encodeURIComponent('Несуществующий')}`);
      expect(none).toMatchObject({ status: 200, body: { success: true, users: [] } });
    });

    it('answers 400 with a single error field when q is missing or blank', async () => {
      for (const path of ['/employees', '/employees?q=', '/employees?q=%20%20']) {
        const { status, body } = await call(sim.url, path);
        expect(status, path).toBe(400);
        expect(body, path).toEqual({ error: 'Параметр q обязателен' });
      }
    });
  });

  describe('the authorized user', () => {
    it('returns id, username, firstName, lastName by default', async () => {
      const user = users[0] as SimUser;
      const { status, body } = await call<{ success: boolean; user: Record<string, unknown> }>(sim.url, '/users/@me', {
        method: 'POST',
        headers: auth(user),
      });
      expect(status).toBe(200);
      expect(body.success).toBe(true);
      expect(Object.keys(body.user).sort()).toEqual(['firstName', 'id', 'lastName', 'username']);
      expect(body.user).toMatchObject({ id: user.id, username: user.username });
      const withEmptyBody = await call<{ user: object }>(sim.url, '/users/@me', {
        method: 'POST',
        headers: auth(user),
        body: {},
      });
      expect(withEmptyBody.body.user).toEqual(body.user);
    });

    it('rejects group:true, since the API takes a nested object for group', async () => {
      const user = users[1] as SimUser;
      const bare = await call<{ error: string }>(sim.url, '/users/@me', {
        method: 'POST',
        headers: auth(user),
        body: { select: { group: true } },
      });
      expect(bare.status).toBe(400);
      expect(bare.body.error).toContain('group');
    });

    it('returns exactly the selected fields, the whole group when every group key is selected, and a nested selection', async () => {
      const user = users[1] as SimUser;
      const allGroup = {
        id: true,
        name: true,
        instituteName: true,
        specialization: true,
        speciality: true,
        yearStart: true,
        yearEnd: true,
      };
      const select = { id: true, gender: true, studentId: true, middleName: true, photoPath: true, group: allGroup };
      const whole = await call<{ user: Record<string, unknown> & { group: Record<string, unknown> } }>(
        sim.url,
        '/users/@me',
        { method: 'POST', headers: auth(user), body: { select } },
      );
      expect(whole.status).toBe(200);
      expect(Object.keys(whole.body.user).sort()).toEqual([
        'gender',
        'group',
        'id',
        'middleName',
        'photoPath',
        'studentId',
      ]);
      expect(whole.body.user.group).toEqual({
        id: user.groupId,
        name: expect.stringMatching(/^\d{2}-\d{3}$/),
        instituteName: expect.any(String),
        specialization: expect.any(String),
        speciality: expect.any(String),
        yearStart: expect.any(Number),
        yearEnd: expect.any(Number),
      });
      expect(whole.body.user.gender).toMatch(/^(MALE|FEMALE)$/);
      const nested = await call<{ user: unknown }>(sim.url, '/users/@me', {
        method: 'POST',
        headers: auth(user),
        body: { select: { username: true, group: { name: true, yearStart: true } } },
      });
      expect(nested.body.user).toEqual({
        username: user.username,
        group: { name: whole.body.user.group.name, yearStart: whole.body.user.group.yearStart },
      });
    });

    it('rejects unknown select keys and unparseable bodies with 400 {error}', async () => {
      const user = users[0] as SimUser;
      for (const body of [
        { select: { password: true } },
        { select: { group: { dean: true } } },
        { select: { id: 'yes' } },
        '{not json',
      ]) {
        const answer = await call<{ error: string }>(sim.url, '/users/@me', {
          method: 'POST',
          headers: auth(user),
          body,
        });
        expect(answer.status, JSON.stringify(body)).toBe(400);
        expect(Object.keys(answer.body)).toEqual(['error']);
      }
    });

    it('answers 401 without a credential, with another scheme and with an unknown token', async () => {
      for (const path of ['/users/@me/schedule', '/users/@me/plan']) {
        expect(await call(sim.url, path)).toMatchObject({ status: 401, body: { error: 'Требуется авторизация' } });
        const wrongScheme = await call(sim.url, path, { headers: { Authorization: `Token ${users[0]?.token}` } });
        expect(wrongScheme.status).toBe(401);
        const unknown = await call(sim.url, path, { headers: { Authorization: 'Bearer sim-0000' } });
        expect(unknown).toMatchObject({ status: 401, body: { error: 'Недействительный токен' } });
      }
      expect((await call(sim.url, '/users/@me', { method: 'POST' })).status).toBe(401);
    });

    it('builds the personal timetable from the group’s entries minus the other subgroup’s', async () => {
      let checked = 0;
      for (const user of users) {
        const group = await groupEntries(sim.url, user.groupId);
        const other = `${3 - user.subgroup} подгруппа`;
        if (!group.some((entry) => entry.note_schedule === other)) continue;
        const { status, body } = await call<{ success: boolean; subjects: WireEntry[] }>(
          sim.url,
          '/users/@me/schedule',
          { headers: auth(user) },
        );
        expect(status).toBe(200);
        expect(body.success).toBe(true);
        const expected = group.filter((entry) => entry.note_schedule !== other);
        expect(body.subjects).toEqual(expected);
        expect(body.subjects.length).toBeLessThan(group.length);
        expect(body.subjects.some((entry) => entry.note_schedule === `${user.subgroup} подгруппа`)).toBe(true);
        checked += 1;
        if (checked === 5) break;
      }
      expect(checked).toBe(5);
    });

    it('returns a study plan with every field of section 2.5 over eight or ten semesters', async () => {
      const user = users[2] as SimUser;
      const { status, body } = await call<{ success: boolean; subjects: Record<string, unknown>[] }>(
        sim.url,
        '/users/@me/plan',
        { headers: auth(user) },
      );
      expect(status).toBe(200);
      expect(body.success).toBe(true);
      expect(body.subjects.length).toBeGreaterThan(40);
      const numbers = [
        'semester',
        'type_id',
        'gost_hours',
        'laboratory_hours',
        'total_laboratory_hours',
        'lecture_hours',
        'total_lecture_hours',
        'practice_hours',
        'total_practice_hours',
        'seminar_hours',
        'total_seminar_hours',
        'independent_hours',
        'total_independent_hours',
        'subject_id',
      ];
      for (const subject of body.subjects) {
        for (const field of numbers) {
          expect(Number.isInteger(subject[field]), field).toBe(true);
          expect(subject[field] as number).toBeGreaterThanOrEqual(0);
        }
        expect(typeof subject.is_exam).toBe('boolean');
        expect(typeof subject.is_quiz).toBe('boolean');
        expect(subject.full_shifr).toMatch(/^Б[12]\.[ОВ]\.(ДВ\.)?\d{2}/);
        expect(typeof subject.type_name).toBe('string');
        expect(typeof subject.subject_name).toBe('string');
        expect(subject.lecture_hours as number).toBeLessThanOrEqual(subject.total_lecture_hours as number);
      }
      const semesters = new Set(body.subjects.map((subject) => subject.semester));
      expect([8, 10]).toContain(semesters.size);
      expect(Math.min(...(semesters as Set<number>))).toBe(1);
      const timetable = await groupEntries(sim.url, user.groupId);
      const current = timetable[0]?.semester;
      const planned = new Set(body.subjects.filter((s) => s.semester === current).map((s) => s.subject_name));
      for (const entry of timetable) expect(planned, entry.subject_name).toContain(entry.subject_name);
    });
  });
});
