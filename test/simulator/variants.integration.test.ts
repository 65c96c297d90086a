import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../../src/simulator/index.ts';
import { call, type SimUser, start } from './helpers.ts';

describe('simulator deployment variants', () => {
  let plain: RunningSimulator;
  let variant: RunningSimulator;
  let groupId: number;
  let user: SimUser;

  beforeAll(async () => {
    const options = { groups: 60, employees: 120, users: 5 };
    [plain, variant] = await Promise.all([
      start(options),
      start({ ...options, dateFormat: 'YYYY-MM-DD', numericStrings: true, authHeader: 'X-Auth-Token', authScheme: '' }),
    ]);
    groupId = (await call<{ groups: { id: number }[] }>(variant.url, '/_sim/groups')).body.groups[0]?.id ?? 0;
    user = (await call<{ users: SimUser[] }>(variant.url, '/_sim/users')).body.users[0] as SimUser;
  });

  afterAll(async () => {
    await Promise.all([plain.close(), variant.close()]);
  });

  it('sends ISO dates and numbers as strings, with the same data otherwise', async () => {
    const a = (await call<{ subjects: Record<string, unknown>[] }>(plain.url, `/groups/${groupId}/schedule`)).body
      .subjects;
    const b = (await call<{ subjects: Record<string, unknown>[] }>(variant.url, `/groups/${groupId}/schedule`)).body
      .subjects;
    expect(b.length).toBe(a.length);
    const [x, y] = [a[0] as Record<string, unknown>, b[0] as Record<string, unknown>];
    expect(x.start_day_schedule).toBe('01.09.25');
    expect(y.start_day_schedule).toBe('2025-09-01');
    expect(y.finish_day_schedule).toBe('2025-12-28');
    for (const field of [
      'id',
      'semester',
      'year',
      'subject_id',
      'day_week_schedule',
      'type_week_schedule',
      'time_interval_id',
      'teacher_id',
      'building_id',
    ]) {
      expect(typeof x[field], field).toBe('number');
      expect(y[field], field).toBe(String(x[field]));
    }
    expect(y.subject_name).toBe(x.subject_name);
    const search = await call<{ users: { id: unknown; teacher: unknown }[] }>(
      variant.url,
      `/employees?q=${encodeURIComponent('ов')}`,
    );
    expect(typeof search.body.users[0]?.id).toBe('string');
    expect(typeof search.body.users[0]?.teacher).toBe('boolean');
  });

  it('keeps a valid date added in either format in the deployment’s format, and an impossible one as given', async () => {
    const created = await call<Record<string, unknown>>(variant.url, '/_sim/entries', {
      method: 'POST',
      body: { groupIds: [groupId], start_day_schedule: '15.10.25', finish_day_schedule: '31.02.25' },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      start_day_schedule: '2025-10-15',
      finish_day_schedule: '31.02.25',
      groupIds: [groupId],
    });
    expect(typeof created.body.id).toBe('string');
  });

  it('takes the bare token in a custom header', async () => {
    const ok = await call<{ user: Record<string, unknown> }>(variant.url, '/users/@me', {
      method: 'POST',
      headers: { 'X-Auth-Token': user.token },
      body: { select: { id: true, studentId: true, group: { id: true, yearStart: true } } },
    });
    expect(ok.status).toBe(200);
    expect(ok.body.user).toEqual({
      id: String(user.id),
      studentId: expect.stringMatching(/^\d+$/),
      group: { id: String(user.groupId), yearStart: expect.stringMatching(/^\d{4}$/) },
    });
    const plan = await call<{ subjects: Record<string, unknown>[] }>(variant.url, '/users/@me/plan', {
      headers: { 'X-Auth-Token': user.token },
    });
    expect(typeof plan.body.subjects[0]?.semester).toBe('string');
    expect(typeof plan.body.subjects[0]?.is_exam).toBe('boolean');
    const bearer = await call(variant.url, '/users/@me/schedule', {
      headers: { Authorization: `Bearer ${user.token}` },
    });
    expect(bearer.status).toBe(401);
    const wrong = await call(variant.url, '/users/@me/schedule', { headers: { 'X-Auth-Token': 'nope' } });
    expect(wrong).toMatchObject({ status: 401, body: { error: 'Недействительный токен' } });
  });
});
