import type { Semester } from './dates.ts';

/** A study group (section 2.4 of the API doc) plus what the generator needs to know about it. */
export interface Group {
  id: number;
  name: string;
  instituteName: string;
  specialization: string;
  speciality: string;
  yearStart: number;
  yearEnd: number;
  /** Year of study, 1-based. */
  course: number;
  instituteCode: string;
}

/** An employee (section 2.2). */
export interface Employee {
  id: number;
  teacher: boolean;
  email: string;
  firstName: string;
  lastName: string;
  middleName: string;
  post: string;
  gender: 'MALE' | 'FEMALE';
  photoPath: string;
  workPhone: string;
  subDivision: string;
}

/** A user with a token (section 2.3 minus `group`, which is looked up by `groupId`). */
export interface User {
  id: number;
  username: string;
  firstName: string;
  lastName: string;
  middleName: string;
  gender: 'MALE' | 'FEMALE';
  photoPath: string;
  studentId: number;
  groupId: number;
  subgroup: 1 | 2;
  token: string;
}

/**
 * The fields of one timetable entry in canonical form: generated entries hold exactly section 2.1's fields with
 * dates as ISO strings; entries added through the control API may hold anything (that is the point).
 */
export type EntryFields = Record<string, unknown>;

/**
 * A stored timetable entry: its id, the groups whose timetables show it, and its wire fields. `userIds` makes it
 * an elective: shown in those users' personal timetables besides their group's, and in no group's timetable
 * unless `groupIds` names the group.
 */
export interface Entry {
  id: number;
  groupIds: number[];
  userIds?: number[];
  fields: EntryFields;
}

/** A plan subject (section 2.5). */
export interface PlanSubject {
  semester: number;
  type_id: number;
  type_name: string;
  gost_hours: number;
  laboratory_hours: number;
  total_laboratory_hours: number;
  lecture_hours: number;
  total_lecture_hours: number;
  practice_hours: number;
  total_practice_hours: number;
  seminar_hours: number;
  total_seminar_hours: number;
  independent_hours: number;
  total_independent_hours: number;
  is_exam: boolean;
  is_quiz: boolean;
  full_shifr: string;
  subject_id: number;
  subject_name: string;
}

/** Everything generated from one seed and reference date. */
export interface Dataset {
  semester: Semester;
  groups: Group[];
  employees: Employee[];
  entries: Entry[];
  users: User[];
}
