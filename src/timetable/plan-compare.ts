/**
 * The study plan of the current semester against what the timetable schedules (pure), per subject and kind of
 * class. Scheduled hours are academic hours of 45 minutes: each dated class counts its length (end − begin)
 * divided by 45, so a 90-minute pair is 2 hours; only classes of the current semester and of the four planned
 * kinds count (a consultation or an exam is no lecture). Differences worth a look:
 * - `none-scheduled`: the plan has hours of that kind, the timetable none;
 * - `not-in-plan`: the timetable has classes of a kind the plan gives no hours for, or of a subject it lacks;
 * - `far-from-plan`: both have hours, more than {@link FAR_HOURS} apart and more than {@link FAR_SHARE} of the
 *   planned ones (a term's timetable rarely lands on the plan to the hour: a holiday takes a pair away).
 */
import {
  normaliseSubjectName,
  PLAN_KINDS,
  PlanIndex,
  type PlanKind,
  planKindOf,
  type StudyPlanNotes,
} from './study-plan.ts';
import type { TimetableEntry } from './types.ts';

/** Hours apart that are always within tolerance: two pairs. */
export const FAR_HOURS = 4;

/** Share of the planned hours that is within tolerance. */
export const FAR_SHARE = 0.25;

/** Minutes in an academic hour. */
export const ACADEMIC_HOUR_MINUTES = 45;

/** Why a row deserves a look. */
export type PlanDifference = 'none-scheduled' | 'far-from-plan' | 'not-in-plan';

/** One subject and kind of class: planned hours against scheduled ones. */
export interface PlanRow {
  subject: string;
  /** The plan code; empty for a subject the plan lacks. */
  code: string;
  kind: PlanKind;
  plannedHours: number;
  scheduledHours: number;
  /** Set when the difference deserves a look. */
  difference?: PlanDifference;
}

/** How a subject of the current semester ends. */
export interface PlanEnding {
  subject: string;
  code: string;
  exam: boolean;
  quiz: boolean;
}

/** The comparison of one semester. */
export interface PlanComparison {
  /** The current semester; null when the plan and the timetable share none (then nothing is compared). */
  semester: number | null;
  /** Every plan subject of the semester, in plan order. */
  ends: PlanEnding[];
  /** Plan subjects' rows in plan order and kind order, then subjects the plan lacks by name. */
  rows: PlanRow[];
}

/** One dated class of the timetable: its entry, and its length in minutes. */
export interface ScheduledClass {
  entry: Pick<TimetableEntry, 'semester' | 'subjectId' | 'subjectName' | 'kind'>;
  minutes: number;
}

/** The difference between planned and scheduled hours, if it deserves a look. */
export function differenceOf(planned: number, scheduled: number): PlanDifference | undefined {
  if (planned > 0 && scheduled === 0) return 'none-scheduled';
  if (planned === 0 && scheduled > 0) return 'not-in-plan';
  const apart = Math.abs(scheduled - planned);
  return apart > FAR_HOURS && apart > planned * FAR_SHARE ? 'far-from-plan' : undefined;
}

function row(subject: string, code: string, kind: PlanKind, planned: number, minutes: number): PlanRow {
  const scheduledHours = Math.round((minutes / ACADEMIC_HOUR_MINUTES) * 10) / 10;
  const difference = differenceOf(planned, scheduledHours);
  return { subject, code, kind, plannedHours: planned, scheduledHours, ...(difference ? { difference } : {}) };
}

/** Compares the plan of `notes`' current semester with the classes the timetable schedules. */
export function comparePlan(notes: StudyPlanNotes, scheduled: readonly ScheduledClass[]): PlanComparison {
  const { semester } = notes;
  if (semester === null) return { semester, ends: [], rows: [] };
  const index = new PlanIndex(notes);
  const planned = notes.subjects.filter((note) => note.semester === semester);
  // Minutes by plan subject (its position in `planned`) or by the name of a subject the plan lacks, then kind.
  const minutes = new Map<string, Map<PlanKind, number>>();
  const unplannedNames = new Map<string, string>();
  for (const { entry, minutes: length } of scheduled) {
    const kind = planKindOf(entry.kind);
    if (kind === undefined || index.semesterOf(entry) !== semester) continue;
    const note = index.find(entry);
    let key: string;
    if (note === undefined) {
      key = `name:${normaliseSubjectName(entry.subjectName)}`;
      if (!unplannedNames.has(key)) unplannedNames.set(key, entry.subjectName);
    } else key = `plan:${planned.indexOf(note)}`;
    const byKind = minutes.get(key) ?? new Map<PlanKind, number>();
    byKind.set(kind, (byKind.get(kind) ?? 0) + length);
    minutes.set(key, byKind);
  }
  const rows: PlanRow[] = [];
  planned.forEach((note, position) => {
    const byKind = minutes.get(`plan:${position}`);
    for (const kind of PLAN_KINDS) {
      const length = byKind?.get(kind) ?? 0;
      if (note.hours[kind] > 0 || length > 0) rows.push(row(note.name, note.code, kind, note.hours[kind], length));
    }
  });
  const unplanned = [...unplannedNames].sort(([, a], [, b]) => a.localeCompare(b, 'ru'));
  for (const [key, name] of unplanned)
    for (const kind of PLAN_KINDS) {
      const length = minutes.get(key)?.get(kind) ?? 0;
      if (length > 0) rows.push(row(name, '', kind, 0, length));
    }
  const ends = planned.map((note) => ({ subject: note.name, code: note.code, exam: note.exam, quiz: note.quiz }));
  return { semester, ends, rows };
}
