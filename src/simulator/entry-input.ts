import { BUILDINGS, KIND, subjectId, TIME_SLOTS } from './catalog.ts';
import type { Semester } from './dates.ts';
import type { Employee, EntryFields, Group } from './model.ts';

/** What filling in an entry needs to look up. */
export interface EntryLookups {
  semester: Semester;
  employees: ReadonlyMap<number, Employee>;
  defaultTeacher: Employee | undefined;
}

/** Reads a positive integer from a number or a numeric string; undefined otherwise. */
export function positiveInt(value: unknown): number | undefined {
  const number = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
  return typeof number === 'number' && Number.isSafeInteger(number) && number > 0 ? number : undefined;
}

/**
 * A complete, valid entry for `groups`, used as the base of a class added through the control API: the given
 * fields override it. Monday, first slot, every week, the whole current semester.
 */
export function defaultFields(lookups: EntryLookups, groups: readonly Group[]): EntryFields {
  const { semester, defaultTeacher } = lookups;
  const course = groups[0]?.course ?? 1;
  const building = BUILDINGS[0];
  return {
    semester: semester.season === 'autumn' ? course * 2 - 1 : course * 2,
    year: semester.academicYear,
    subject_name: 'Консультация',
    start_day_schedule: semester.start,
    finish_day_schedule: semester.finish,
    day_week_schedule: 1,
    type_week_schedule: 0,
    note_schedule: '',
    time_interval_id: 1,
    teacher_id: defaultTeacher?.id ?? 0,
    num_auditorium_schedule: '101',
    building_id: building?.id ?? 0,
    group_list: groups.map((group) => group.name).join(', '),
    subject_kind_name: KIND.practice,
  };
}

/**
 * Fills the fields that follow from others, unless `given` sets them itself: teacher names from `teacher_id`,
 * slot times from `time_interval_id`, the building name from `building_id`. So moving a class is a PATCH of
 * day and slot, and changing its teacher a PATCH of `teacher_id`.
 */
export function deriveFields(fields: EntryFields, given: EntryFields, lookups: EntryLookups): EntryFields {
  const out = { ...fields };
  const teacher = 'teacher_id' in given ? lookups.employees.get(positiveInt(given.teacher_id) ?? -1) : undefined;
  if (teacher) {
    out.teacher_lastname = given.teacher_lastname ?? teacher.lastName;
    out.teacher_firstname = given.teacher_firstname ?? teacher.firstName;
    out.teacher_middlename = given.teacher_middlename ?? teacher.middleName;
  }
  const slot =
    'time_interval_id' in given ? TIME_SLOTS.find((s) => s.id === positiveInt(given.time_interval_id)) : undefined;
  if (slot) {
    out.total_time_schedule = given.total_time_schedule ?? `${slot.begin}-${slot.end}`;
    out.begin_time_schedule = given.begin_time_schedule ?? slot.begin;
    out.end_time_schedule = given.end_time_schedule ?? slot.end;
  }
  const building = 'building_id' in given ? BUILDINGS.find((b) => b.id === positiveInt(given.building_id)) : undefined;
  if (building) out.building_name = given.building_name ?? building.name;
  if ('subject_name' in given && !('subject_id' in given) && typeof given.subject_name === 'string') {
    out.subject_id = subjectId(given.subject_name);
  }
  return out;
}

// Wire field order of section 2.1, so added entries look like generated ones.
const FIELD_ORDER = [
  'id',
  'semester',
  'year',
  'subject_name',
  'subject_id',
  'start_day_schedule',
  'finish_day_schedule',
  'day_week_schedule',
  'type_week_schedule',
  'note_schedule',
  'time_interval_id',
  'total_time_schedule',
  'begin_time_schedule',
  'end_time_schedule',
  'teacher_id',
  'teacher_lastname',
  'teacher_firstname',
  'teacher_middlename',
  'num_auditorium_schedule',
  'building_name',
  'building_id',
  'group_list',
  'subject_kind_name',
];

/** The fields in the documented order, unknown extra fields last. */
export function ordered(fields: EntryFields): EntryFields {
  const out: EntryFields = {};
  for (const key of FIELD_ORDER) if (key in fields) out[key] = fields[key];
  for (const [key, value] of Object.entries(fields)) if (!(key in out)) out[key] = value;
  return out;
}
