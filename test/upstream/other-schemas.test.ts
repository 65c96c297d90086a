import { describe, expect, expectTypeOf, it } from 'vitest';
import { UpstreamProtocolError } from '../../src/upstream/errors.ts';
import {
  type Group,
  parseEmployeeSearchResponse,
  parsePlanResponse,
  parseUserResponse,
  type SelectedUser,
} from '../../src/upstream/schemas.ts';
import { rawEmployee, rawPlanSubject } from './fixtures.ts';

const FULL_USER = {
  id: 7,
  username: 'ivanov.i',
  firstName: 'Иван',
  lastName: 'Иванов',
  middleName: 'Иванович',
  gender: 'MALE',
  photoPath: 'photos/7.jpg',
  studentId: 70007,
  group: {
    id: 4242,
    name: 'ИВТ-21',
    instituteName: 'Институт ИТ',
    specialization: 'Программная инженерия',
    speciality: '09.03.04',
    yearStart: 2021,
    yearEnd: 2025,
  },
};

function reasonOf(run: () => unknown): string {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(UpstreamProtocolError);
    return (err as UpstreamProtocolError).reason;
  }
  throw new Error('expected an UpstreamProtocolError');
}

describe('parseEmployeeSearchResponse', () => {
  it('normalises a single users object to an array', () => {
    expect(parseEmployeeSearchResponse({ success: true, users: rawEmployee() })).toEqual([rawEmployee()]);
  });

  it('keeps an array and converts string ids', () => {
    const users = [rawEmployee(), rawEmployee({ id: '556', teacher: 'false', extra: 1 })];
    const found = parseEmployeeSearchResponse({ success: true, users });
    expect(found.map((e) => [e.id, e.teacher])).toEqual([
      [555, true],
      [556, false],
    ]);
    expect(found[1]).not.toHaveProperty('extra');
  });

  it.each([
    ['null', { users: null }],
    ['empty', { users: [] }],
    ['an empty object', { users: {} }],
    ['empty employees', { employees: [] }],
  ])('treats %s users as nothing found', (_name, body) => {
    expect(parseEmployeeSearchResponse({ success: true, ...body })).toEqual([]);
  });

  it('drops employees without a valid id and fills missing text', () => {
    const found = parseEmployeeSearchResponse({ success: true, users: [{ id: 'x' }, { id: 9, lastName: 'Петров' }] });
    expect(found).toEqual([
      expect.objectContaining({ id: 9, lastName: 'Петров', teacher: false, email: '', workPhone: '' }),
    ]);
  });

  it('turns { error } into unsuccessful, keeping the text', () => {
    try {
      parseEmployeeSearchResponse({ error: 'Параметр q обязателен' });
      expect.unreachable();
    } catch (err) {
      expect(err).toMatchObject({ reason: 'unsuccessful', upstreamMessage: 'Параметр q обязателен' });
    }
  });

  it('rejects a scalar users field', () => {
    expect(reasonOf(() => parseEmployeeSearchResponse({ success: true, users: 5 }))).toBe('wrong-shape');
  });
});

describe('parsePlanResponse', () => {
  it('normalises plan subjects, numbers as strings included', () => {
    const plan = parsePlanResponse({
      success: true,
      subjects: [
        rawPlanSubject(),
        rawPlanSubject({ semester: '2', lecture_hours: '36.5', is_exam: 0, subject_id: '78' }),
      ],
    });
    expect(plan[0]).toEqual({
      semester: 1,
      typeId: 2,
      typeName: 'Обязательная',
      gostHours: 144,
      laboratoryHours: 16,
      totalLaboratoryHours: 16,
      lectureHours: 32,
      totalLectureHours: 32,
      practiceHours: 16,
      totalPracticeHours: 16,
      seminarHours: 0,
      totalSeminarHours: 0,
      independentHours: 80,
      totalIndependentHours: 80,
      isExam: true,
      isQuiz: false,
      fullShifr: 'Б1.О.01',
      subjectId: 77,
      subjectName: 'Математический анализ',
    });
    expect(plan[1]).toMatchObject({ semester: 2, lectureHours: 36.5, isExam: false, subjectId: 78 });
  });

  it('drops a subject without subject_id and rejects a missing subjects array', () => {
    expect(parsePlanResponse({ success: true, subjects: [rawPlanSubject({ subject_id: null })] })).toEqual([]);
    expect(reasonOf(() => parsePlanResponse({ success: true }))).toBe('wrong-shape');
  });
});

describe('parseUserResponse', () => {
  it('returns the default fields when nothing was selected', () => {
    const user = parseUserResponse({ success: true, user: FULL_USER });
    expect(user).toEqual({ id: 7, username: 'ivanov.i', firstName: 'Иван', lastName: 'Иванов' });
    expectTypeOf(user).toEqualTypeOf<{ id: number | null; username: string; firstName: string; lastName: string }>();
  });

  it('returns exactly the selected fields, nested group included', () => {
    const select = { id: true, middleName: true, group: { name: true, yearEnd: true } } as const;
    const user = parseUserResponse({ success: true, user: FULL_USER }, select);
    expect(user).toEqual({ id: 7, middleName: 'Иванович', group: { name: 'ИВТ-21', yearEnd: 2025 } });
    expectTypeOf(user).toEqualTypeOf<{
      id: number | null;
      middleName: string;
      group: { name: string; yearEnd: number | null } | null;
    }>();
  });

  it('returns the whole group for group: true', () => {
    const user = parseUserResponse(
      { success: true, user: { ...FULL_USER, group: { ...FULL_USER.group, yearEnd: '2025' } } },
      {
        group: true,
      },
    );
    expect(user).toEqual({ group: FULL_USER.group });
    expectTypeOf<SelectedUser<{ group: true }>>().toEqualTypeOf<{ group: Group | null }>();
  });

  it('rejects a response without a selected field', () => {
    const { middleName: _dropped, ...withoutMiddle } = FULL_USER;
    expect(reasonOf(() => parseUserResponse({ success: true, user: withoutMiddle }, { middleName: true }))).toBe(
      'wrong-shape',
    );
    const noGroupName = { ...FULL_USER, group: { id: 1 } };
    expect(reasonOf(() => parseUserResponse({ success: true, user: noGroupName }, { group: { name: true } }))).toBe(
      'wrong-shape',
    );
    expect(reasonOf(() => parseUserResponse({ success: true, user: { ...FULL_USER, id: 'x' } }))).toBe('wrong-shape');
    expect(reasonOf(() => parseUserResponse({ success: true }))).toBe('wrong-shape');
  });

  it('turns { error } into unsuccessful', () => {
    expect(reasonOf(() => parseUserResponse({ error: 'Требуется авторизация' }))).toBe('unsuccessful');
  });
});
