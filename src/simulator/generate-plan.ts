import { COMMON_SUBJECTS, domainSubjects, KIND, LAB_DOMAINS, SEMINAR_DOMAINS, subjectId } from './catalog.ts';
import type { Domain } from './institutes.ts';
import type { Group, PlanSubject } from './model.ts';
import { createRandom, type Random } from './random.ts';

const TYPES = [
  { id: 1, name: 'Обязательная часть', prefix: 'Б1.О' },
  { id: 2, name: 'Часть, формируемая участниками образовательных отношений', prefix: 'Б1.В' },
  { id: 3, name: 'Дисциплины по выбору', prefix: 'Б1.В.ДВ' },
] as const;

const PRACTICES = [
  { id: 9101, name: 'Учебная практика: ознакомительная практика' },
  { id: 9102, name: 'Производственная практика: научно-исследовательская работа' },
  { id: 9103, name: 'Производственная практика: преддипломная практика' },
];

interface Hours {
  lecture: number;
  practice: number;
  seminar: number;
  laboratory: number;
  independent: number;
}

function semesterHours(random: Random, domain: Domain, gost: number, exam: boolean): Hours {
  const lecture = random.pick([0, 16, 18, 18, 32, 34, 36]);
  const seminarDomain = SEMINAR_DOMAINS.has(domain);
  const classes = random.pick([16, 18, 32, 34, 36]);
  const laboratory = LAB_DOMAINS.has(domain) && random.chance(0.4) ? random.pick([16, 18, 32]) : 0;
  const practice = seminarDomain ? 0 : classes;
  const seminar = seminarDomain ? classes : 0;
  const contact = lecture + practice + seminar + laboratory + (exam ? 36 : 0);
  return { lecture, practice, seminar, laboratory, independent: Math.max(0, gost - contact) };
}

interface PlanCourse {
  name: string;
  semesters: number[];
  type: (typeof TYPES)[number];
  shifr: string;
}

type ClassHours = Exclude<keyof Hours, 'independent'>;

/** Academic hours a timetable gives one subject, by kind of class. */
type KindHours = Partial<Record<ClassHours, number>>;

/** Academic hours a timetable gives each subject (by name), by kind of class. */
export type ScheduledHours = Map<string, KindHours>;

const KIND_HOURS: Readonly<Record<string, ClassHours>> = {
  [KIND.lecture]: 'lecture',
  [KIND.practice]: 'practice',
  [KIND.seminar]: 'seminar',
  [KIND.lab]: 'laboratory',
};

const DAY_MS = 86_400_000;

/**
 * Adds a timetable entry's academic hours (45 minutes; one pair is 2) to `hours`: its weeks in the semester
 * (every week, or every other one) times its length. A subgroup's class counts for the first subgroup only,
 * since a student attends one of the pair.
 */
export function addScheduledHours(hours: ScheduledHours, fields: Record<string, unknown>): void {
  const kind = KIND_HOURS[String(fields.subject_kind_name)];
  if (kind === undefined || /^[2-9]\s*подгрупп/.test(String(fields.note_schedule ?? ''))) return;
  const days =
    (Date.parse(String(fields.finish_day_schedule)) - Date.parse(String(fields.start_day_schedule))) / DAY_MS;
  const everyWeek = Math.floor(days / 7) + 1;
  const weeks = Number(fields.type_week_schedule) === 0 ? everyWeek : Math.ceil(everyWeek / 2);
  const [bh = 0, bm = 0] = String(fields.begin_time_schedule).split(':').map(Number);
  const [eh = 0, em = 0] = String(fields.end_time_schedule).split(':').map(Number);
  const length = (eh * 60 + em - (bh * 60 + bm)) / 45;
  const subject = String(fields.subject_name);
  const byKind = hours.get(subject) ?? {};
  byKind[kind] = (byKind[kind] ?? 0) + Math.round(weeks * length);
  hours.set(subject, byKind);
}

/**
 * What the group studies now: its current semester number, the subjects of its timetable and the hours the
 * timetable gives them (the plan of the current semester is made from them, with a few differences).
 */
export interface CurrentStudies {
  semester: number;
  subjects: readonly string[];
  hours: ScheduledHours;
}

/**
 * The current semester's hours of a subject the timetable has: what it schedules, rounded to even hours, except
 * that about one subject in five differs in one kind of class (hours the timetable lacks, or far fewer than it
 * has), so that the comparison on the personal page has something to show.
 */
function plannedFromTimetable(random: Random, scheduled: KindHours, gost: number, exam: boolean): Hours {
  const hours = {
    lecture: 2 * Math.round((scheduled.lecture ?? 0) / 2),
    practice: 2 * Math.round((scheduled.practice ?? 0) / 2),
    seminar: 2 * Math.round((scheduled.seminar ?? 0) / 2),
    laboratory: 2 * Math.round((scheduled.laboratory ?? 0) / 2),
  };
  if (random.chance(0.2)) {
    const kind = random.pick(['lecture', 'practice', 'seminar', 'laboratory'] as const);
    hours[kind] = hours[kind] > 0 ? Math.max(0, hours[kind] - 16) : 18;
  }
  const contact = hours.lecture + hours.practice + hours.seminar + hours.laboratory + (exam ? 36 : 0);
  return { ...hours, independent: Math.max(0, gost - contact) };
}

function planCourses(random: Random, domain: Domain, current: CurrentStudies, total: number): PlanCourse[] {
  const counters = new Map<string, number>();
  const courses: PlanCourse[] = [];
  let carried = new Set<string>();
  for (let semester = 1; semester <= total; semester++) {
    const names =
      semester === current.semester ? [...new Set(current.subjects)].filter((name) => !carried.has(name)) : [];
    const pool = random
      .shuffle([...domainSubjects(domain), ...COMMON_SUBJECTS])
      .filter((name) => !names.includes(name) && !carried.has(name));
    const next = new Set<string>();
    names.push(...pool.slice(0, Math.max(0, random.int(6, 8) - names.length)));
    for (const name of names) {
      const type = random.pick([TYPES[0], TYPES[0], TYPES[1], TYPES[2]]);
      const number = (counters.get(type.prefix) ?? 0) + 1;
      counters.set(type.prefix, number);
      const code = String(number).padStart(2, '0');
      const shifr = type.id === 3 ? `${type.prefix}.${code}.${random.int(1, 2)}` : `${type.prefix}.${code}`;
      const twoSemesters = semester < total && random.chance(0.2);
      if (twoSemesters) next.add(name);
      courses.push({ name, semesters: twoSemesters ? [semester, semester + 1] : [semester], type, shifr });
    }
    carried = next;
  }
  return courses;
}

function courseRows(random: Random, domain: Domain, course: PlanCourse, current: CurrentStudies): PlanSubject[] {
  const parts = course.semesters.map((semester, index) => {
    const exam = index === course.semesters.length - 1 && random.chance(0.5);
    const gost = 36 * random.int(2, 6);
    const scheduled = semester === current.semester ? current.hours.get(course.name) : undefined;
    const hours =
      scheduled === undefined
        ? semesterHours(random, domain, gost, exam)
        : plannedFromTimetable(random, scheduled, gost, exam);
    return { semester, exam, gost, hours };
  });
  const sum = (key: keyof Hours): number => parts.reduce((total, part) => total + part.hours[key], 0);
  return parts.map(({ semester, exam, gost, hours }) => ({
    semester,
    type_id: course.type.id,
    type_name: course.type.name,
    gost_hours: gost,
    laboratory_hours: hours.laboratory,
    total_laboratory_hours: sum('laboratory'),
    lecture_hours: hours.lecture,
    total_lecture_hours: sum('lecture'),
    practice_hours: hours.practice,
    total_practice_hours: sum('practice'),
    seminar_hours: hours.seminar,
    total_seminar_hours: sum('seminar'),
    independent_hours: hours.independent,
    total_independent_hours: sum('independent'),
    is_exam: exam,
    is_quiz: !exam,
    full_shifr: course.shifr,
    subject_id: subjectId(course.name),
    subject_name: course.name,
  }));
}

function practiceRow(semester: number, index: number, practice: (typeof PRACTICES)[number]): PlanSubject {
  const gost = 108;
  return {
    semester,
    type_id: 4,
    type_name: 'Практика',
    gost_hours: gost,
    laboratory_hours: 0,
    total_laboratory_hours: 0,
    lecture_hours: 0,
    total_lecture_hours: 0,
    practice_hours: 0,
    total_practice_hours: 0,
    seminar_hours: 0,
    total_seminar_hours: 0,
    independent_hours: gost,
    total_independent_hours: gost,
    is_exam: false,
    is_quiz: true,
    full_shifr: `Б2.О.${String(index).padStart(2, '0')}(П)`,
    subject_id: practice.id,
    subject_name: practice.name,
  };
}

/**
 * The study plan of a group over all its semesters (8 for a bachelor, 10 for a specialist), derived from the
 * seed, the group id and its initial timetable only, so it is generated on first request. The subjects of the
 * group's timetable (`current`) appear in the current semester, with about the hours the timetable gives them.
 */
export function generatePlan(
  seed: number | string,
  group: Group,
  domain: Domain,
  current: CurrentStudies,
): PlanSubject[] {
  const random = createRandom(seed, 'plan', group.id);
  const total = (group.yearEnd - group.yearStart) * 2;
  const rows = planCourses(random, domain, current, total).flatMap((course) =>
    courseRows(random, domain, course, current),
  );
  PRACTICES.forEach((practice, index) => {
    const semester = index === 2 ? total : Math.min(total, (index + 1) * 2);
    rows.push(practiceRow(semester, index + 1, practice));
  });
  return rows.sort((a, b) => a.semester - b.semester || a.full_shifr.localeCompare(b.full_shifr));
}
