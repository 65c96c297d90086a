/** Raw upstream payloads for schema tests, shaped like the documented API (section 2.1). */

/** A valid raw timetable entry; override fields per test. */
export function rawEntry(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: 101,
    semester: 1,
    year: 2025,
    subject_name: 'Математический анализ',
    subject_id: 77,
    start_day_schedule: '01.09.25',
    finish_day_schedule: '28.12.25',
    day_week_schedule: 1,
    type_week_schedule: 0,
    note_schedule: '1 подгруппа',
    time_interval_id: 2,
    total_time_schedule: '10:15-11:50',
    begin_time_schedule: '10:15',
    end_time_schedule: '11:50',
    teacher_id: 555,
    teacher_lastname: 'Иванов',
    teacher_firstname: 'Иван',
    teacher_middlename: 'Иванович',
    num_auditorium_schedule: '305',
    building_name: 'Главный корпус',
    building_id: 3,
    group_list: 'ИВТ-21, ИВТ-22',
    subject_kind_name: 'Лекция',
    ...overrides,
  };
}

/**
 * A Tuesday lecture in September 2025 as the university sends it, for one group: what the `render` tests and
 * the row-merging tests (one row per group of a class) build on.
 */
export function rawTuesdayLecture(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: 1,
    semester: 1,
    year: 2025,
    subject_name: 'Физика',
    subject_id: 5,
    start_day_schedule: '01.09.25',
    finish_day_schedule: '30.09.25',
    day_week_schedule: 2,
    type_week_schedule: 0,
    note_schedule: '',
    time_interval_id: 1,
    total_time_schedule: '08:30-10:00',
    begin_time_schedule: '08:30',
    end_time_schedule: '10:00',
    teacher_id: 9,
    teacher_lastname: 'Петров',
    teacher_firstname: 'Пётр',
    teacher_middlename: 'Петрович',
    num_auditorium_schedule: '101',
    building_name: 'Главный корпус',
    building_id: 1,
    group_list: '09-351',
    subject_kind_name: 'лекция',
    ...overrides,
  };
}

/** A schedule response around the given raw entries. */
export function scheduleResponse(...subjects: unknown[]): Record<string, unknown> {
  return { success: true, subjects };
}

/** The normalised form of {@link rawEntry} without overrides. */
export const NORMALISED_ENTRY = {
  id: 101,
  semester: 1,
  year: 2025,
  subjectId: 77,
  subjectName: 'Математический анализ',
  kind: 'Лекция',
  startDate: '2025-09-01',
  finishDate: '2025-12-28',
  weekday: 1,
  weekType: 0,
  beginTime: '10:15',
  endTime: '11:50',
  timeIntervalId: 2,
  note: '1 подгруппа',
  teacher: { id: 555, lastName: 'Иванов', firstName: 'Иван', middleName: 'Иванович' },
  room: '305',
  building: { id: 3, name: 'Главный корпус' },
  groups: ['ИВТ-21', 'ИВТ-22'],
} as const;

/** A raw employee as returned by the search. */
export function rawEmployee(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: 555,
    teacher: true,
    email: 'ivanov@uni.example',
    firstName: 'Иван',
    lastName: 'Иванов',
    middleName: 'Иванович',
    post: 'Доцент',
    gender: 'MALE',
    photoPath: '/photos/555.jpg',
    workPhone: '+7 (495) 000-00-00, доб. 12',
    subDivision: 'Институт/Кафедра ВТ',
    ...overrides,
  };
}

/** A raw plan subject. */
export function rawPlanSubject(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    semester: 1,
    type_id: 2,
    type_name: 'Обязательная',
    gost_hours: 144,
    laboratory_hours: 16,
    total_laboratory_hours: 16,
    lecture_hours: 32,
    total_lecture_hours: 32,
    practice_hours: 16,
    total_practice_hours: 16,
    seminar_hours: 0,
    total_seminar_hours: 0,
    independent_hours: 80,
    total_independent_hours: 80,
    is_exam: true,
    is_quiz: false,
    full_shifr: 'Б1.О.01',
    subject_id: 77,
    subject_name: 'Математический анализ',
    ...overrides,
  };
}
