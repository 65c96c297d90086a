/**
 * The study plan next to a timetable (pure): which semester is the current one, which plan subject a class
 * belongs to, and the lines its event description gets (how the subject ends, the planned hours of the class's
 * kind, the plan code). The publication records the notes it rendered with, so that variants, Google pushes
 * and later publications describe every class exactly as the feed did.
 */
import type { TimetableEntry } from '../upstream/schemas.ts';
import { dayNumber } from './dates.ts';

/** The kinds of class a plan gives hours for. */
export type PlanKind = 'lecture' | 'practice' | 'seminar' | 'laboratory';

/** Every {@link PlanKind}, in the order tables and descriptions list them. */
export const PLAN_KINDS: readonly PlanKind[] = ['lecture', 'practice', 'seminar', 'laboratory'];

/** One subject of one semester of the plan, as much of it as descriptions and the comparison use. */
export interface PlanNote {
  semester: number;
  subjectId: number;
  name: string;
  /** The plan code (`full_shifr`), e.g. `Б1.О.07`; may be empty. */
  code: string;
  exam: boolean;
  quiz: boolean;
  /** Planned academic hours of each kind in this semester. */
  hours: Record<PlanKind, number>;
}

/** The plan notes a timetable is described with. */
export interface StudyPlanNotes {
  /** The current semester (see {@link currentSemester}); null when the plan and the timetable share none. */
  semester: number | null;
  /**
   * True when the timetable numbers its semesters as the plan does: each class is then matched within its own
   * `semester`; otherwise every class within the current one.
   */
  ownSemesters: boolean;
  /** The subjects of the semesters the timetable's classes are matched within, sorted. */
  subjects: PlanNote[];
}

/**
 * The kind of plan hours a timetable kind (`subject_kind_name`) counts towards: `лекция` / `Лекции`, `практика` /
 * `практическое занятие`, `семинар` / `семинарское занятие`, `лабораторная работа` / `лаб. занятие`. Other kinds
 * (consultations, exams) count towards none.
 */
export function planKindOf(kind: string): PlanKind | undefined {
  const word = kind.trim().toLocaleLowerCase('ru');
  if (word.startsWith('лек')) return 'lecture';
  if (word.startsWith('лаб')) return 'laboratory';
  if (word.startsWith('сем')) return 'seminar';
  if (word.startsWith('практ') || word === 'пр' || word.startsWith('пр.')) return 'practice';
  return undefined;
}

/** A subject name as matching compares it: lower case, `ё` as `е`, letters and digits only, single spaces. */
export function normaliseSubjectName(name: string): string {
  return name
    .toLocaleLowerCase('ru')
    .replaceAll('ё', 'е')
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();
}

/** The most frequent of `values`, the highest of equals; undefined for none. */
function mostFrequent(values: readonly number[]): number | undefined {
  const counts = new Map<number, number>();
  for (const value of values) counts.set(value, (counts.get(value) ?? 0) + 1);
  let best: number | undefined;
  let bestCount = 0;
  for (const [value, count] of counts) {
    if (count > bestCount || (count === bestCount && best !== undefined && value > best)) {
      best = value;
      bestCount = count;
    }
  }
  return best;
}

/** Entries whose classes are not over by `today` (ISO date), or all of them when every one is. */
function currentEntries(entries: readonly TimetableEntry[], today: string): readonly TimetableEntry[] {
  const day = dayNumber(today);
  const coming = entries.filter((entry) => dayNumber(entry.finishDate) >= day);
  return coming.length > 0 ? coming : entries;
}

/**
 * The current semester of a timetable in its plan, and whether the timetable numbers semesters as the plan does:
 * 1. the `semester` most of the timetable's classes carry (counting those not over by `today`, or all when every
 *    one is; the highest of equals), when the plan has that semester and it shares at least as many subjects
 *    with those classes as the semester of 2. does;
 * 2. otherwise the plan semester that shares the most subjects with those classes (by id or name; the latest of
 *    equals);
 * 3. otherwise none.
 */
export function currentSemester(
  plan: readonly PlanNote[],
  entries: readonly TimetableEntry[],
  today: string,
): { semester: number | null; ownSemesters: boolean } {
  const current = currentEntries(entries, today);
  const ids = new Set(current.flatMap((entry) => (entry.subjectId === null ? [] : [entry.subjectId])));
  const names = new Set(current.map((entry) => normaliseSubjectName(entry.subjectName)));
  const shared = new Map<number, number>();
  for (const note of plan)
    if (ids.has(note.subjectId) || names.has(normaliseSubjectName(note.name)))
      shared.set(note.semester, (shared.get(note.semester) ?? 0) + 1);
  let best: number | null = null;
  let bestCount = 0;
  for (const [semester, count] of shared)
    if (count > bestCount || (count === bestCount && best !== null && semester > best)) {
      best = semester;
      bestCount = count;
    }
  const planned = new Set(plan.map((note) => note.semester));
  const carried = mostFrequent(current.flatMap((entry) => (entry.semester === null ? [] : [entry.semester])));
  // The timetable's own number is trusted only when its plan semester fits the classes as well as any other.
  if (carried !== undefined && planned.has(carried) && (shared.get(carried) ?? 0) >= bestCount)
    return { semester: carried, ownSemesters: true };
  return { semester: best, ownSemesters: false };
}

/** Plan order: semester, code, subject id. */
function comparePlanNotes(a: PlanNote, b: PlanNote): number {
  return a.semester - b.semester || (a.code < b.code ? -1 : a.code > b.code ? 1 : 0) || a.subjectId - b.subjectId;
}

/**
 * The notes a timetable is described with: its current semester, and the plan subjects of the semesters its
 * classes are matched within (only those, so that a publication records a few subjects, not the whole plan).
 */
export function studyPlanNotes(
  plan: readonly PlanNote[],
  entries: readonly TimetableEntry[],
  today: string,
): StudyPlanNotes {
  const { semester, ownSemesters } = currentSemester(plan, entries, today);
  const wanted = new Set<number>(semester === null ? [] : [semester]);
  if (ownSemesters) for (const entry of entries) if (entry.semester !== null) wanted.add(entry.semester);
  const subjects = plan.filter((note) => wanted.has(note.semester)).sort(comparePlanNotes);
  return { semester, ownSemesters, subjects };
}

/** Finds the plan subject of a class: by subject id within its semester, else by normalised name. */
export class PlanIndex {
  readonly #notes: StudyPlanNotes;
  readonly #byId = new Map<string, PlanNote>();
  readonly #byName = new Map<string, PlanNote>();

  constructor(notes: StudyPlanNotes) {
    this.#notes = notes;
    // The first of a semester's rows wins an id or name they share (rows are in plan order).
    for (const note of notes.subjects) {
      const id = `${note.semester}|${note.subjectId}`;
      const name = `${note.semester}|${normaliseSubjectName(note.name)}`;
      if (!this.#byId.has(id)) this.#byId.set(id, note);
      if (!this.#byName.has(name)) this.#byName.set(name, note);
    }
  }

  /** The semester a class is matched within; null when none is known. */
  semesterOf(entry: Pick<TimetableEntry, 'semester'>): number | null {
    return this.#notes.ownSemesters && entry.semester !== null ? entry.semester : this.#notes.semester;
  }

  /** The plan subject of a class, or undefined when the plan has none for it. */
  find(entry: Pick<TimetableEntry, 'semester' | 'subjectId' | 'subjectName'>): PlanNote | undefined {
    const semester = this.semesterOf(entry);
    if (semester === null) return undefined;
    const byId = entry.subjectId === null ? undefined : this.#byId.get(`${semester}|${entry.subjectId}`);
    return byId ?? this.#byName.get(`${semester}|${normaliseSubjectName(entry.subjectName)}`);
  }
}

/** How the university names each kind's planned hours in a description. */
const KIND_WORDS: Record<PlanKind, string> = {
  lecture: 'лекции',
  practice: 'практические занятия',
  seminar: 'семинары',
  laboratory: 'лабораторные работы',
};

/** Hours as people write them: `36`, `4,5`. */
export function formatHours(hours: number): string {
  return String(Math.round(hours * 10) / 10).replace('.', ',');
}

/** How a subject ends: `Экзамен`, `Зачёт`, `Экзамен и зачёт`, or nothing. */
export function endingOf(note: Pick<PlanNote, 'exam' | 'quiz'>): string {
  if (note.exam && note.quiz) return 'Экзамен и зачёт';
  if (note.exam) return 'Экзамен';
  if (note.quiz) return 'Зачёт';
  return '';
}

/**
 * The description lines of a class of a planned subject: how the subject ends, then the planned hours of the
 * class's kind with the plan code, e.g. `Экзамен` and `По плану (Б1.О.07): лекции 36 ч`. A kind the plan gives
 * no hours for (a consultation) gets the code alone: `Шифр по плану: Б1.О.07`. No plan subject: no lines.
 */
export function planLines(entry: TimetableEntry, index: PlanIndex | undefined): string[] {
  const note = index?.find(entry);
  if (note === undefined) return [];
  const kind = planKindOf(entry.kind);
  const code = note.code === '' ? '' : ` (${note.code})`;
  const hours =
    kind === undefined
      ? note.code === ''
        ? ''
        : `Шифр по плану: ${note.code}`
      : `По плану${code}: ${KIND_WORDS[kind]} ${formatHours(note.hours[kind])} ч`;
  return [endingOf(note), hours].filter((line) => line !== '');
}
