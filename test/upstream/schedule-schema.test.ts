import { describe, expect, it } from 'vitest';
import { UpstreamProtocolError } from '../../src/upstream/errors.ts';
import { parseScheduleResponse } from '../../src/upstream/schemas.ts';
import { NORMALISED_ENTRY, rawEntry, scheduleResponse } from './fixtures.ts';

function parseOne(overrides: Record<string, unknown>) {
  return parseScheduleResponse(scheduleResponse(rawEntry(overrides)));
}

function protocolError(run: () => unknown): UpstreamProtocolError {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(UpstreamProtocolError);
    return err as UpstreamProtocolError;
  }
  throw new Error('expected an UpstreamProtocolError');
}

describe('parseScheduleResponse: normalisation', () => {
  it('normalises a documented entry', () => {
    expect(parseScheduleResponse(scheduleResponse(rawEntry()))).toEqual({ entries: [NORMALISED_ENTRY], problems: [] });
  });

  it('accepts numbers sent as strings', () => {
    const stringly = rawEntry({
      id: '101',
      semester: '1',
      year: '2025',
      subject_id: '77',
      day_week_schedule: '1',
      type_week_schedule: '0',
      time_interval_id: '2',
      teacher_id: '555',
      building_id: '3',
      num_auditorium_schedule: 305,
    });
    expect(parseScheduleResponse(scheduleResponse(stringly)).entries).toEqual([NORMALISED_ENTRY]);
  });

  it('accepts ISO dates and H:MM / HH:MM:SS times', () => {
    const variant = rawEntry({
      start_day_schedule: '2025-09-01',
      finish_day_schedule: '2025-12-28',
      begin_time_schedule: '10:15:00',
      end_time_schedule: '11:50:00',
    });
    expect(parseScheduleResponse(scheduleResponse(variant)).entries).toEqual([NORMALISED_ENTRY]);
    expect(parseOne({ begin_time_schedule: '8:30', end_time_schedule: '9:05' }).entries[0]).toMatchObject({
      beginTime: '08:30',
      endTime: '09:05',
    });
  });

  it('fills missing optional fields and ignores unknown ones', () => {
    const sparse = rawEntry({ surprise: { nested: true } });
    for (const key of ['semester', 'year', 'subject_id', 'note_schedule', 'teacher_id', 'teacher_middlename']) {
      delete sparse[key];
    }
    sparse.building_id = null;
    sparse.time_interval_id = '';
    const entry = parseScheduleResponse(scheduleResponse(sparse)).entries[0];
    expect(entry).toMatchObject({ semester: null, year: null, subjectId: null, note: '', timeIntervalId: null });
    expect(entry?.teacher).toEqual({ id: null, lastName: 'Иванов', firstName: 'Иван', middleName: '' });
    expect(entry?.building).toEqual({ id: null, name: 'Главный корпус' });
    expect(entry).not.toHaveProperty('surprise');
  });

  it('splits group_list on commas, trims and drops empty names', () => {
    expect(parseOne({ group_list: ' А-1 ,Б-2,, ,В-3 ' }).entries[0]?.groups).toEqual(['А-1', 'Б-2', 'В-3']);
    expect(parseOne({ group_list: undefined }).entries[0]?.groups).toEqual([]);
  });

  it('accepts 29 February in a leap year', () => {
    expect(parseOne({ start_day_schedule: '29.02.24' }).entries[0]?.startDate).toBe('2024-02-29');
  });
});

describe('parseScheduleResponse: invalid entries become problems', () => {
  const cases: [string, Record<string, unknown>, string, string][] = [
    ['impossible date', { start_day_schedule: '31.02.25' }, 'start_day_schedule', '31.02.25'],
    ['29 February of a common year', { finish_day_schedule: '29.02.25' }, 'finish_day_schedule', '29.02.25'],
    ['unreadable date', { start_day_schedule: 'tomorrow' }, 'start_day_schedule', 'tomorrow'],
    ['weekday 0', { day_week_schedule: 0 }, 'day_week_schedule', '0'],
    ['weekday 8', { day_week_schedule: 8 }, 'day_week_schedule', '8'],
    ['weekday "Пн"', { day_week_schedule: 'Пн' }, 'day_week_schedule', 'Пн'],
    ['week type 3', { type_week_schedule: 3 }, 'type_week_schedule', '3'],
    ['week type 1.5', { type_week_schedule: 1.5 }, 'type_week_schedule', '1.5'],
    ['bad time', { begin_time_schedule: '25:00' }, 'begin_time_schedule', '25:00'],
    ['end equal to begin', { end_time_schedule: '10:15' }, 'end_time_schedule', '10:15'],
    ['end before begin', { end_time_schedule: '09:00' }, 'end_time_schedule', '09:00'],
  ];

  it.each(cases)('%s', (_name, overrides, fieldName, badValue) => {
    const result = parseScheduleResponse(scheduleResponse(rawEntry({ id: 1 }), rawEntry({ id: 2, ...overrides })));
    expect(result.entries.map((e) => e.id)).toEqual([1]);
    expect(result.problems).toHaveLength(1);
    expect(result.problems[0]).toMatchObject({ entryId: 2, index: 1, field: fieldName });
    expect(result.problems[0]?.reason).toContain(badValue);
  });

  it('reports one problem per bad field', () => {
    const result = parseOne({ day_week_schedule: 9, type_week_schedule: -1, start_day_schedule: undefined });
    expect(result.entries).toEqual([]);
    expect(result.problems.map((p) => p.field).sort()).toEqual([
      'day_week_schedule',
      'start_day_schedule',
      'type_week_schedule',
    ]);
    expect(result.problems.every((p) => p.entryId === 101 && p.index === 0)).toBe(true);
  });

  it('reports a bad id with the raw value as entryId', () => {
    expect(parseOne({ id: 'abc' }).problems).toEqual([
      expect.objectContaining({ entryId: 'abc', field: 'id', index: 0 }),
    ]);
    expect(parseOne({ id: 0 }).problems[0]).toMatchObject({ entryId: 0, field: 'id' });
    expect(parseOne({ id: undefined }).problems[0]).toMatchObject({ entryId: null, field: 'id' });
  });

  it('reports an entry that is not an object', () => {
    const result = parseScheduleResponse(scheduleResponse(null, rawEntry()));
    expect(result.entries).toHaveLength(1);
    expect(result.problems).toEqual([expect.objectContaining({ entryId: null, index: 0 })]);
  });
});

describe('parseScheduleResponse: the envelope is strict', () => {
  it('turns success:false into an unsuccessful error carrying the upstream text', () => {
    const err = protocolError(() =>
      parseScheduleResponse({ success: false, error: 'Группа 9 не найдена' }, 'mySchedule'),
    );
    expect(err.reason).toBe('unsuccessful');
    expect(err.upstreamMessage).toBe('Группа 9 не найдена');
    expect(err.endpoint).toBe('mySchedule');
    expect(err.message).toContain('Группа 9 не найдена');
    expect(err.message).toContain('mySchedule');
  });

  it('treats a bare { error } as unsuccessful', () => {
    expect(protocolError(() => parseScheduleResponse({ error: 'Сбой' })).reason).toBe('unsuccessful');
  });

  it.each([
    ['null', null],
    ['an array', []],
    ['a string', 'ok'],
    ['neither success nor subjects', { subject: [] }],
    ['success as text', { success: 'true', subjects: [] }],
    ['no subjects', { success: true }],
    ['subjects not an array', { success: true, subjects: { 0: rawEntry() } }],
  ])('rejects %s as wrong-shape', (_name, json) => {
    expect(protocolError(() => parseScheduleResponse(json)).reason).toBe('wrong-shape');
  });

  it('accepts a body without success that carries its subjects (several deployments leave it out)', () => {
    expect(parseScheduleResponse({ subjects: [rawEntry()] }).entries).toEqual([NORMALISED_ENTRY]);
    const noPayload = protocolError(() => parseScheduleResponse({ subject: [] }));
    expect(noPayload.message).toContain('neither `success` nor `subjects`');
  });

  it('still fails on success: false or an error field, with or without subjects', () => {
    for (const json of [{ success: false, subjects: [] }, { error: 'Сбой', subjects: [] }, { success: false }]) {
      expect(protocolError(() => parseScheduleResponse(json)).reason).toBe('unsuccessful');
    }
  });

  it('reads a message beside the payload, without success, as information rather than a failure', () => {
    const informed = { message: 'Расписание на осенний семестр', subjects: [rawEntry()] };
    expect(parseScheduleResponse(informed).entries).toEqual([NORMALISED_ENTRY]);
    expect(parseScheduleResponse({ ...informed, success: true }).entries).toEqual([NORMALISED_ENTRY]);
  });

  it('takes a message as the failure text when success is false or there is no payload; error always fails', () => {
    const cases = [
      [{ success: false, message: 'Сервис недоступен', subjects: [] }, 'Сервис недоступен'],
      [{ success: false, message: 'Сервис недоступен' }, 'Сервис недоступен'],
      [{ message: 'Сервис недоступен' }, 'Сервис недоступен'],
      [{ error: 'Сбой', message: 'Расписание на осенний семестр', subjects: [] }, 'Сбой'],
    ] as const;
    for (const [json, text] of cases) {
      const err = protocolError(() => parseScheduleResponse(json));
      expect(err.reason).toBe('unsuccessful');
      expect(err.upstreamMessage).toBe(text);
    }
  });

  it('accepts an empty timetable', () => {
    expect(parseScheduleResponse({ success: true, subjects: [] })).toEqual({ entries: [], problems: [] });
  });
});
