/** Builders for normalised timetable entries, as `parseScheduleResponse` hands them to the engine. */
import type { TimetableEntry } from '../../src/timetable/types.ts';

/** A valid normalised entry (Mondays, every week, autumn 2025); override fields per test. */
export function entry(overrides: Partial<TimetableEntry> = {}): TimetableEntry {
  return {
    id: 101,
    semester: 1,
    year: 2025,
    subjectId: 77,
    subjectName: 'Математический анализ',
    kind: 'лекция',
    startDate: '2025-09-01',
    finishDate: '2025-12-28',
    weekday: 1,
    weekType: 0,
    beginTime: '10:10',
    endTime: '11:40',
    timeIntervalId: 2,
    note: '',
    teacher: { id: 555, lastName: 'Иванов', firstName: 'Иван', middleName: 'Иванович' },
    room: '305',
    building: { id: 3, name: 'Главный корпус' },
    groups: ['ИВТ-21'],
    ...overrides,
  };
}

/** ISO date of a UTC epoch-millisecond instant. */
export function isoOf(millis: number): string {
  return new Date(millis).toISOString().slice(0, 10);
}
