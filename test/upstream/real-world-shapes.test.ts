/**
 * Shapes that real deployments send, as public clients of this API (Go, Swift, Kotlin, C#, React; current and
 * older API) decode them: read, not rejected. Bodies here are spelled the way those deployments spell them.
 */
import { describe, expect, it } from 'vitest';
import { charsetOf, decodeBody } from '../../src/upstream/charset.ts';
import { UpstreamProtocolError } from '../../src/upstream/errors.ts';
import { parseEmployeeSearchResponse, parseScheduleResponse, parseUserResponse } from '../../src/upstream/schemas.ts';
import { clockTime, nameList, text } from '../../src/upstream/values.ts';
import { NORMALISED_ENTRY, rawEntry } from './fixtures.ts';

/** An entry as an older deployment sends it: every number a string, `HH.MM` times, `DD.MM.YYYY` dates. */
const LEGACY_ENTRY = {
  id: '101',
  semester: '1',
  year: '2025',
  subject_name: 'Математический анализ',
  subject_id: '77',
  start_day_schedule: '01.09.2025',
  finish_day_schedule: '28.12.2025',
  day_week_schedule: '1',
  type_week_schedule: '0',
  note_schedule: '1 подгруппа',
  time_interval_id: '2',
  total_time_schedule: '10.15-11.50',
  begin_time_schedule: '10.15',
  end_time_schedule: '11.50',
  teacher_id: '555',
  teacher_lastname: 'Иванов',
  teacher_firstname: 'Иван',
  teacher_middlename: 'Иванович',
  num_auditorium_schedule: '305',
  building_name: 'Главный корпус',
  building_id: '3',
  group_list: 'ИВТ-21; ИВТ-22',
  subject_kind_name: 'Лекция',
};

function protocolError(run: () => unknown): UpstreamProtocolError {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(UpstreamProtocolError);
    return err as UpstreamProtocolError;
  }
  throw new Error('expected an UpstreamProtocolError');
}

describe('timetables of older deployments', () => {
  it('reads an entry with string ids, HH.MM times, DD.MM.YYYY dates and ";" groups, without success', () => {
    expect(parseScheduleResponse({ subjects: [LEGACY_ENTRY] })).toEqual({ entries: [NORMALISED_ENTRY], problems: [] });
  });

  it.each([
    ['08.30', '08:30'],
    ['8.30', '08:30'],
    ['08:30', '08:30'],
    ['8:30', '08:30'],
    ['08:30:00', '08:30'],
    [' 23.59 ', '23:59'],
  ])('reads the time %j as %s', (input, expected) => {
    expect(clockTime(input)).toEqual({ ok: true, value: expected });
  });

  it.each(['24.00', '08.60', '08.3', '0830', '08.30.00', '08,30', ''])('rejects the time %j, naming it', (input) => {
    const parsed = clockTime(input);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.reason).toContain(JSON.stringify(input));
  });

  it('still skips, and reports by id, field and reason, an entry whose dates are empty or missing', () => {
    const missing: Record<string, unknown> = { ...LEGACY_ENTRY, id: '104' };
    delete missing.finish_day_schedule;
    const result = parseScheduleResponse({
      subjects: [missing, { ...LEGACY_ENTRY, id: '102', start_day_schedule: '' }, rawEntry({ id: 103 })],
    });
    expect(result.entries.map((entry) => entry.id)).toEqual([103]);
    expect(result.problems).toEqual([
      { entryId: 104, index: 0, field: 'finish_day_schedule', reason: expect.stringContaining('got nothing') },
      { entryId: 102, index: 1, field: 'start_day_schedule', reason: expect.stringContaining('got ""') },
    ]);
  });

  it('splits group_list on commas, semicolons and line breaks', () => {
    expect(nameList('09-351, 09-352;09-353\n09-354\r\n 09-355 ;; ')).toEqual({
      ok: true,
      value: ['09-351', '09-352', '09-353', '09-354', '09-355'],
    });
    expect(nameList(null)).toEqual({ ok: true, value: [] });
    expect(nameList(951)).toEqual({ ok: true, value: ['951'] });
  });

  it('drops control characters other than tab from every text field, line breaks becoming a space', () => {
    const entry = parseScheduleResponse({
      subjects: [
        {
          ...LEGACY_ENTRY,
          subject_name: 'Мат\u0000ем\u0007атический\u001b анализ\u007f\u0085',
          note_schedule: '1 подгруппа\r\nауд.\t305',
          teacher_lastname: 'Ива\u200bнов\u0008',
          group_list: 'ИВТ-21\u0001; ИВТ-22',
        },
      ],
    }).entries[0];
    expect(entry?.subjectName).toBe('Математический анализ');
    expect(entry?.note).toBe('1 подгруппа ауд.\t305');
    // Zero-width space is a format character, not a control: kept, as the upstream sent it.
    expect(entry?.teacher.lastName).toBe('Ива\u200bнов');
    expect(entry?.groups).toEqual(['ИВТ-21', 'ИВТ-22']);
    expect(text('\u0000')).toEqual({ ok: true, value: '' });
  });
});

describe('teacher search as current deployments answer it', () => {
  /** What the current API's clients decode: `employees`, snake_case, ids possibly strings. */
  const employeesAnswer = {
    success: true,
    employees: [
      {
        employee_id: '4242',
        lastname: 'Иванова',
        firstname: 'Мария',
        middlename: 'Петровна',
        is_teacher: true,
        post: 'Доцент',
        subdivision: 'Институт ВМ и ИТ/Кафедра системного анализа',
        email: 'm.ivanova@uni.example',
      },
      {
        employee_id: 17,
        lastname: 'Иванов',
        firstname: 'Пётр',
        middlename: null,
        is_teacher: '0',
        post: null,
        subdivision: 'Библиотека',
        email: null,
      },
    ],
  };

  it('reads the employees answer', () => {
    expect(parseEmployeeSearchResponse(employeesAnswer)).toEqual([
      {
        id: 4242,
        teacher: true,
        email: 'm.ivanova@uni.example',
        firstName: 'Мария',
        lastName: 'Иванова',
        middleName: 'Петровна',
        post: 'Доцент',
        gender: '',
        photoPath: '',
        workPhone: '',
        subDivision: 'Институт ВМ и ИТ/Кафедра системного анализа',
      },
      expect.objectContaining({ id: 17, teacher: false, lastName: 'Иванов', middleName: '', post: '', email: '' }),
    ]);
  });

  it('reads snake_case fields under users, one object or an array, and without success', () => {
    const [one] = employeesAnswer.employees;
    const expected = parseEmployeeSearchResponse(employeesAnswer);
    expect(parseEmployeeSearchResponse({ success: true, users: one })).toEqual([expected[0]]);
    expect(parseEmployeeSearchResponse({ users: employeesAnswer.employees })).toEqual(expected);
    expect(parseEmployeeSearchResponse({ employees: employeesAnswer.employees })).toEqual(expected);
  });

  it('answers an unknown shape with a wrong-shape error, never an empty list', () => {
    const unknownKey = protocolError(() => parseEmployeeSearchResponse({ success: true, staff: [{ id: 1 }] }));
    expect(unknownKey.reason).toBe('wrong-shape');
    expect(unknownKey.message).toContain('neither `users` nor `employees`');
    const noEmployee = protocolError(() =>
      parseEmployeeSearchResponse({ success: true, employees: [{ person_id: 1, surname: 'Иванов' }] }),
    );
    expect(noEmployee.reason).toBe('wrong-shape');
    expect(noEmployee.message).toContain('no element of `employees` is an employee');
    expect(noEmployee.message).toContain('id: expected a positive integer');
  });

  it('still fails on success: false or an error field', () => {
    expect(protocolError(() => parseEmployeeSearchResponse({ success: false, employees: [] })).reason).toBe(
      'unsuccessful',
    );
    expect(protocolError(() => parseEmployeeSearchResponse({ error: 'Параметр q обязателен' })).reason).toBe(
      'unsuccessful',
    );
  });
});

describe('profiles with null in any field', () => {
  const NULL_PROFILE = {
    id: '7',
    username: null,
    firstName: 'Мария',
    lastName: 'Иванова',
    middleName: null,
    gender: null,
    photoPath: null,
    studentId: null,
    group: {
      id: null,
      name: '09-351',
      instituteName: null,
      specialization: null,
      speciality: null,
      yearStart: null,
      yearEnd: '2029',
    },
  };

  it('reads every field, the group id included, as empty text or null', () => {
    const user = parseUserResponse(
      { user: NULL_PROFILE },
      {
        id: true,
        username: true,
        middleName: true,
        gender: true,
        photoPath: true,
        studentId: true,
        group: true,
      },
    );
    expect(user).toEqual({
      id: 7,
      username: '',
      middleName: '',
      gender: '',
      photoPath: '',
      studentId: null,
      group: {
        id: null,
        name: '09-351',
        instituteName: '',
        specialization: '',
        speciality: '',
        yearStart: null,
        yearEnd: 2029,
      },
    });
  });

  it('reads a null group and a null user id as null', () => {
    expect(parseUserResponse({ success: true, user: { ...NULL_PROFILE, group: null } }, { group: true })).toEqual({
      group: null,
    });
    expect(parseUserResponse({ success: true, user: { ...NULL_PROFILE, id: null } }, { id: true })).toEqual({
      id: null,
    });
  });

  it('still rejects a selected field that is missing or not an id, naming it', () => {
    const { group: _group, ...withoutGroup } = NULL_PROFILE;
    expect(protocolError(() => parseUserResponse({ user: withoutGroup }, { group: true })).message).toContain(
      'user.group',
    );
    const badId = { ...NULL_PROFILE, group: { ...NULL_PROFILE.group, id: 'x' } };
    expect(protocolError(() => parseUserResponse({ user: badId }, { group: { id: true } })).message).toContain(
      'user.group.id: expected a positive integer, got "x"',
    );
  });
});

describe('bodies in the charset they are written in', () => {
  const cyrillic = 'Расписание: Иванова Мария (09-351)';
  const cp1251 = Buffer.from(new Uint8Array([...cyrillic].map(cp1251Byte)));

  it('finds the charset of a Content-Type', () => {
    expect(charsetOf('application/json; charset=windows-1251')).toBe('windows-1251');
    expect(charsetOf('application/json;Charset="CP1251"')).toBe('cp1251');
    expect(charsetOf(['text/plain; charset=utf-8'])).toBe('utf-8');
    expect(charsetOf('application/json')).toBeUndefined();
    expect(charsetOf(undefined)).toBeUndefined();
  });

  it('decodes the named charset without a warning', () => {
    expect(decodeBody(cp1251, 'windows-1251')).toEqual({ text: cyrillic });
    expect(decodeBody(cp1251, 'cp1251')).toEqual({ text: cyrillic });
    expect(decodeBody(Buffer.from(cyrillic), 'utf-8')).toEqual({ text: cyrillic });
  });

  it('reads UTF-8 without a charset, a byte order mark dropped', () => {
    expect(decodeBody(Buffer.from(`\ufeff${cyrillic}`), undefined)).toEqual({ text: cyrillic });
  });

  it('reads bytes that are not UTF-8 as windows-1251, and says why', () => {
    expect(decodeBody(cp1251, undefined)).toEqual({ text: cyrillic, fallback: 'not valid UTF-8 and no charset named' });
    expect(decodeBody(cp1251, 'utf-8').fallback).toBe('labelled utf-8 but not valid UTF-8');
    expect(decodeBody(cp1251, 'x-unknown')).toEqual({
      text: cyrillic,
      fallback: 'unknown charset "x-unknown" and not valid UTF-8',
    });
  });
});

/** windows-1251 byte of a character (ASCII, А–я, Ё, ё): enough for the test's text, independent of our code. */
function cp1251Byte(char: string): number {
  const code = char.codePointAt(0) ?? 0;
  if (code < 0x80) return code;
  if (code === 0x401) return 0xa8;
  if (code === 0x451) return 0xb8;
  if (code >= 0x410 && code <= 0x44f) return code - 0x410 + 0xc0;
  throw new Error(`no windows-1251 byte for ${char} in this test`);
}
