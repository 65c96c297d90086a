/**
 * Employee search and study plan responses. Elements without their identifying fields (an employee without a
 * positive `id`, a plan subject without `subject_id` or `semester`) are dropped: these lists are lookups,
 * and one odd record should not hide the others.
 */
import { z } from 'zod';
import { openEnvelope, wrongShape } from './envelope.ts';
import type { EndpointName } from './errors.ts';
import { amount, field, flag, isAbsent, optionalId, positiveInt, text } from './values.ts';

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

const employeeSchema = z
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

/**
 * Validates an employee search response. `users` may be one object or an array; missing, null or empty
 * means nothing was found and gives `[]`. A bare `{ error }` is an 'unsuccessful' protocol error.
 */
export function parseEmployeeSearchResponse(json: unknown, endpoint: EndpointName = 'employeeSearch'): Employee[] {
  const body = openEnvelope(json, endpoint);
  const users = body.users;
  if (isAbsent(users)) return [];
  if (Array.isArray(users)) return keepValid(users, employeeSchema);
  if (typeof users === 'object') return keepValid([users], employeeSchema);
  return wrongShape(endpoint, '`users` is neither an object nor an array');
}

/** Validates a study plan response (`{ success: true, subjects: [...] }`). */
export function parsePlanResponse(json: unknown, endpoint: EndpointName = 'myPlan'): PlanSubject[] {
  const body = openEnvelope(json, endpoint);
  const subjects = body.subjects;
  if (!Array.isArray(subjects)) return wrongShape(endpoint, '`subjects` is not an array');
  return keepValid(subjects, planSubjectSchema);
}
