/**
 * Employee search and study plan responses. Elements without their identifying fields (an employee without a
 * positive id, a plan subject without `subject_id` or `semester`) are dropped: these lists are lookups, and
 * one odd record should not hide the others. A search answer in a shape we cannot read is an error, though,
 * never "nothing found": that silence is how a deployment's teacher search went empty unnoticed.
 */
import { z } from 'zod';
import { openEnvelope, wrongShape } from './envelope.ts';
import type { EndpointName } from './errors.ts';
import { amount, field, flag, isAbsent, isRecord, optionalId, positiveInt, text } from './values.ts';

/** One employee found by the search, normalised. */
export interface Employee {
  id: number;
  teacher: boolean;
  email: string;
  firstName: string;
  lastName: string;
  middleName: string;
  post: string;
  gender: string;
  photoPath: string;
  /** Free text: any phone format, may contain words. */
  workPhone: string;
  /** Organisational unit, a path-like string. */
  subDivision: string;
}

/** One subject of the authorised user's study plan, normalised. */
export interface PlanSubject {
  semester: number;
  typeId: number | null;
  typeName: string;
  gostHours: number;
  laboratoryHours: number;
  totalLaboratoryHours: number;
  lectureHours: number;
  totalLectureHours: number;
  practiceHours: number;
  totalPracticeHours: number;
  seminarHours: number;
  totalSeminarHours: number;
  independentHours: number;
  totalIndependentHours: number;
  isExam: boolean;
  isQuiz: boolean;
  /** Code of the subject in the plan. */
  fullShifr: string;
  subjectId: number;
  subjectName: string;
}

/**
 * The names each employee field goes by: the documented camelCase (`users`), and the snake_case of the
 * `employees` answer that the current API's clients decode (`employee_id`, `lastname`, `is_teacher`, …).
 */
const EMPLOYEE_ALIASES: Readonly<Record<keyof Employee, readonly string[]>> = {
  id: ['id', 'employee_id'],
  teacher: ['teacher', 'is_teacher'],
  email: ['email'],
  firstName: ['firstName', 'firstname', 'first_name'],
  lastName: ['lastName', 'lastname', 'last_name'],
  middleName: ['middleName', 'middlename', 'middle_name'],
  post: ['post'],
  gender: ['gender'],
  photoPath: ['photoPath', 'photo_path'],
  workPhone: ['workPhone', 'work_phone'],
  subDivision: ['subDivision', 'subdivision', 'sub_division'],
};

/** An employee record with every field under its camelCase name (the first alias that has a value wins). */
function camelCaseEmployee(input: unknown): unknown {
  if (!isRecord(input)) return input;
  const out: Record<string, unknown> = {};
  for (const [name, aliases] of Object.entries(EMPLOYEE_ALIASES)) {
    const alias = aliases.find((key) => input[key] !== undefined && input[key] !== null);
    out[name] = alias === undefined ? input[aliases[0] as string] : input[alias];
  }
  return out;
}

const employeeFields = z
  .object({
    id: field(positiveInt),
    teacher: field(flag).catch(false),
    email: field(text),
    firstName: field(text),
    lastName: field(text),
    middleName: field(text),
    post: field(text),
    gender: field(text),
    photoPath: field(text),
    workPhone: field(text),
    subDivision: field(text),
  })
  .transform((e): Employee => e);

const employeeSchema = z.preprocess(camelCaseEmployee, employeeFields);

const hours = () => field(amount).catch(0);

const planSubjectSchema = z
  .object({
    semester: field(positiveInt),
    type_id: field(optionalId),
    type_name: field(text),
    gost_hours: hours(),
    laboratory_hours: hours(),
    total_laboratory_hours: hours(),
    lecture_hours: hours(),
    total_lecture_hours: hours(),
    practice_hours: hours(),
    total_practice_hours: hours(),
    seminar_hours: hours(),
    total_seminar_hours: hours(),
    independent_hours: hours(),
    total_independent_hours: hours(),
    is_exam: field(flag).catch(false),
    is_quiz: field(flag).catch(false),
    full_shifr: field(text),
    subject_id: field(positiveInt),
    subject_name: field(text),
  })
  .transform(
    (p): PlanSubject => ({
      semester: p.semester,
      typeId: p.type_id,
      typeName: p.type_name,
      gostHours: p.gost_hours,
      laboratoryHours: p.laboratory_hours,
      totalLaboratoryHours: p.total_laboratory_hours,
      lectureHours: p.lecture_hours,
      totalLectureHours: p.total_lecture_hours,
      practiceHours: p.practice_hours,
      totalPracticeHours: p.total_practice_hours,
      seminarHours: p.seminar_hours,
      totalSeminarHours: p.total_seminar_hours,
      independentHours: p.independent_hours,
      totalIndependentHours: p.total_independent_hours,
      isExam: p.is_exam,
      isQuiz: p.is_quiz,
      fullShifr: p.full_shifr,
      subjectId: p.subject_id,
      subjectName: p.subject_name,
    }),
  );

function keepValid<T>(items: readonly unknown[], schema: z.ZodType<T>): T[] {
  return items.flatMap((item) => {
    const result = schema.safeParse(item);
    return result.success ? [result.data] : [];
  });
}

/** The keys a search answer carries its employees under, in the order they are looked for. */
const SEARCH_KEYS = ['users', 'employees'] as const;

/** The employees of a non-empty list; a list none of whose elements is an employee is a 'wrong-shape' error. */
function foundEmployees(items: readonly unknown[], key: string, endpoint: EndpointName): Employee[] {
  const found = keepValid(items, employeeSchema);
  if (found.length > 0 || items.length === 0) return found;
  const issue = employeeSchema.safeParse(items[0]).error?.issues[0];
  const why = issue ? `${issue.path.join('.') || 'element'}: ${issue.message}` : 'not an object';
  return wrongShape(endpoint, `no element of \`${key}\` is an employee (the first: ${why})`);
}

/**
 * Validates an employee search response: `users` (one object or an array, camelCase or snake_case fields) or
 * `employees` (an array, snake_case). Null, empty or `{}` means nothing was found and gives `[]`; an answer with
 * neither key, or whose list holds no employee at all, is 'wrong-shape'. A bare `{ error }` is 'unsuccessful'.
 */
export function parseEmployeeSearchResponse(json: unknown, endpoint: EndpointName = 'employeeSearch'): Employee[] {
  const body = openEnvelope(json, endpoint, SEARCH_KEYS);
  const key = SEARCH_KEYS.find((name) => !isAbsent(body[name])) ?? SEARCH_KEYS.find((name) => body[name] !== undefined);
  if (key === undefined) return wrongShape(endpoint, 'neither `users` nor `employees`');
  const list = body[key];
  if (isAbsent(list) || (isRecord(list) && Object.keys(list).length === 0)) return [];
  if (Array.isArray(list)) return foundEmployees(list, key, endpoint);
  if (isRecord(list)) return foundEmployees([list], key, endpoint);
  return wrongShape(endpoint, `\`${key}\` is neither an object nor an array`);
}

/** Validates a study plan response (`{ success: true, subjects: [...] }`). */
export function parsePlanResponse(json: unknown, endpoint: EndpointName = 'myPlan'): PlanSubject[] {
  const body = openEnvelope(json, endpoint, ['subjects']);
  const subjects = body.subjects;
  if (!Array.isArray(subjects)) return wrongShape(endpoint, '`subjects` is not an array');
  return keepValid(subjects, planSubjectSchema);
}
