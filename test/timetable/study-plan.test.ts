/**
 * The study plan next to a timetable: the current semester, matching classes to plan subjects, the description
 * lines of planned classes (also through `expand`), and the plan-against-timetable comparison.
 */
import { describe, expect, it } from 'vitest';
import { expand } from '../../src/timetable/expand.ts';
import { comparePlan, differenceOf, type ScheduledClass } from '../../src/timetable/plan-compare.ts';
import {
  currentSemester,
  endingOf,
  normaliseSubjectName,
  PlanIndex,
  type PlanNote,
  planKindOf,
  planLines,
  studyPlanNotes,
} from '../../src/timetable/study-plan.ts';
import { entry } from './fixtures.ts';

function note(overrides: Partial<PlanNote> = {}): PlanNote {
  return {
    semester: 1,
    subjectId: 77,
    name: 'Математический анализ',
    code: 'Б1.О.07',
    exam: true,
    quiz: false,
    hours: { lecture: 36, practice: 34, seminar: 0, laboratory: 0 },
    ...overrides,
  };
}

const TODAY = '2025-10-01';

describe('current semester', () => {
  it('is the semester most current classes carry, when the plan has it', () => {
    const plan = [note({ semester: 1 }), note({ semester: 2 }), note({ semester: 3 })];
    const entries = [entry({ semester: 3 }), entry({ id: 2, semester: 3 }), entry({ id: 3, semester: 1 })];
    expect(currentSemester(plan, entries, TODAY)).toEqual({ semester: 3, ownSemesters: true });
  });

  it('counts only classes not over yet, unless all are', () => {
    const plan = [note({ semester: 1 }), note({ semester: 2 })];
    const entries = [
      entry({ id: 1, semester: 1, finishDate: '2025-06-30' }),
      entry({ id: 2, semester: 1, finishDate: '2025-06-30' }),
      entry({ id: 3, semester: 2, finishDate: '2025-12-28' }),
    ];
    expect(currentSemester(plan, entries, TODAY).semester).toBe(2);
    expect(currentSemester(plan, entries, '2026-02-01').semester).toBe(1);
  });

  it('falls back to the plan semester sharing most subjects when the timetable numbers semesters otherwise', () => {
    const plan = [
      note({ semester: 4, subjectId: 1, name: 'Физика' }),
      note({ semester: 5, subjectId: 77 }),
      note({ semester: 5, subjectId: 2, name: 'Химия' }),
    ];
    const entries = [entry({ semester: 1 }), entry({ id: 2, semester: null, subjectId: null, subjectName: 'химия' })];
    expect(currentSemester(plan, entries, TODAY)).toEqual({ semester: 5, ownSemesters: false });
    expect(currentSemester(plan, [entry({ subjectId: 9, subjectName: 'Рисунок' })], TODAY).semester).toBeNull();
  });

  it('distrusts the semester the timetable names when another plan semester shares more subjects', () => {
    const plan = [
      note({ semester: 1, subjectId: 1, name: 'Физика' }),
      note({ semester: 5, subjectId: 77 }),
      note({ semester: 5, subjectId: 2, name: 'Химия' }),
    ];
    const entries = [entry({ semester: 1 }), entry({ id: 2, semester: 1, subjectId: 2, subjectName: 'Химия' })];
    expect(currentSemester(plan, entries, TODAY)).toEqual({ semester: 5, ownSemesters: false });
    // As many shared subjects as the best: the timetable's own number stands.
    const tied = [...plan, note({ semester: 1, subjectId: 2, name: 'Химия' }), note({ semester: 1 })];
    expect(currentSemester(tied, entries, TODAY)).toEqual({ semester: 1, ownSemesters: true });
  });

  it('keeps only the semesters classes are matched within', () => {
    const plan = [
      note({ semester: 1, code: 'B' }),
      note({ semester: 2 }),
      note({ semester: 1, code: 'A', subjectId: 5 }),
    ];
    const notes = studyPlanNotes(plan, [entry({ semester: 1 })], TODAY);
    expect(notes.semester).toBe(1);
    expect(notes.subjects.map((subject) => subject.code)).toEqual(['A', 'B']);
  });
});

describe('matching and description lines', () => {
  it('maps the kinds the university sends to plan hours', () => {
    expect(planKindOf('лекция')).toBe('lecture');
    expect(planKindOf('Лекции')).toBe('lecture');
    expect(planKindOf('практика')).toBe('practice');
    expect(planKindOf('практическое занятие')).toBe('practice');
    expect(planKindOf('семинар')).toBe('seminar');
    expect(planKindOf('лабораторная работа')).toBe('laboratory');
    expect(planKindOf('консультация')).toBeUndefined();
  });

  it('matches by subject id, else by normalised name, within the semester', () => {
    const notes = studyPlanNotes(
      [note(), note({ subjectId: 2, name: 'Дифференциальные уравнения', code: 'Б1.О.09' }), note({ semester: 2 })],
      [entry()],
      TODAY,
    );
    const index = new PlanIndex(notes);
    expect(index.find(entry())?.code).toBe('Б1.О.07');
    expect(index.find(entry({ subjectId: 999, subjectName: 'дифференциальные  уравнения.' }))?.code).toBe('Б1.О.09');
    expect(index.find(entry({ subjectId: null, subjectName: 'Алгебра' }))).toBeUndefined();
    expect(index.find(entry({ semester: 2 }))).toBeUndefined();
    expect(normaliseSubjectName('Ёмкость  «тел»')).toBe('емкость тел');
  });

  it('says how the subject ends, its planned hours of the kind and the plan code', () => {
    const index = new PlanIndex(studyPlanNotes([note()], [entry()], TODAY));
    expect(planLines(entry(), index)).toEqual(['Экзамен', 'По плану (Б1.О.07): лекции 36 ч']);
    expect(planLines(entry({ kind: 'практика' }), index)).toEqual([
      'Экзамен',
      'По плану (Б1.О.07): практические занятия 34 ч',
    ]);
    expect(planLines(entry({ kind: 'семинар' }), index)[1]).toBe('По плану (Б1.О.07): семинары 0 ч');
    expect(planLines(entry({ kind: 'консультация' }), index)).toEqual(['Экзамен', 'Шифр по плану: Б1.О.07']);
    expect(planLines(entry({ subjectId: 5, subjectName: 'Рисунок' }), index)).toEqual([]);
    expect(planLines(entry(), undefined)).toEqual([]);
  });

  it('names both endings, one, or none', () => {
    expect(endingOf({ exam: true, quiz: true })).toBe('Экзамен и зачёт');
    expect(endingOf({ exam: false, quiz: true })).toBe('Зачёт');
    expect(endingOf({ exam: false, quiz: false })).toBe('');
    const index = new PlanIndex(studyPlanNotes([note({ exam: false, quiz: false, code: '' })], [entry()], TODAY));
    expect(planLines(entry(), index)).toEqual(['По плану: лекции 36 ч']);
  });

  it('ends every planned class description in expansion, and nothing else changes without a plan', () => {
    const entries = [entry(), entry({ id: 102, subjectId: 5, subjectName: 'Рисунок', weekday: 2 })];
    const studyPlan = studyPlanNotes([note({ exam: false, quiz: true })], entries, TODAY);
    const withPlan = expand(entries, { timezone: 'Europe/Moscow', studyPlan }).occurrences;
    const without = expand(entries, { timezone: 'Europe/Moscow' }).occurrences;
    const planned = withPlan.find((occurrence) => occurrence.entryId === 101);
    expect(planned?.description.split('\n').slice(-2)).toEqual(['Зачёт', 'По плану (Б1.О.07): лекции 36 ч']);
    expect(withPlan.find((occurrence) => occurrence.entryId === 102)?.description).toBe(
      without.find((occurrence) => occurrence.entryId === 102)?.description,
    );
    // What a calendar shows changed: the digest (hence SEQUENCE) follows.
    expect(planned?.hash).not.toBe(without.find((occurrence) => occurrence.entryId === 101)?.hash);
  });
});

describe('comparison', () => {
  const pair = (overrides: Parameters<typeof entry>[0] = {}): ScheduledClass => ({
    entry: entry(overrides),
    minutes: 90,
  });
  const times = (count: number, overrides: Parameters<typeof entry>[0] = {}) =>
    Array.from({ length: count }, () => pair(overrides));

  it('marks none scheduled, far from plan and not in plan, with a tolerance of 4 hours or a quarter', () => {
    expect(differenceOf(36, 0)).toBe('none-scheduled');
    expect(differenceOf(0, 2)).toBe('not-in-plan');
    expect(differenceOf(36, 32)).toBeUndefined();
    expect(differenceOf(36, 28)).toBeUndefined();
    expect(differenceOf(36, 26)).toBe('far-from-plan');
    expect(differenceOf(8, 4)).toBeUndefined();
    expect(differenceOf(8, 14)).toBe('far-from-plan');
  });

  it('compares planned hours with academic hours scheduled in the current semester', () => {
    const plan = [
      note(),
      note({ subjectId: 2, name: 'Физика', code: 'Б1.О.09', exam: false, quiz: true, hours: zero({ laboratory: 16 }) }),
      note({ subjectId: 3, name: 'Учебная практика', code: 'Б2.О.01(П)', hours: zero({}) }),
      note({ semester: 2, subjectId: 4, name: 'Химия' }),
    ];
    const scheduled = [
      ...times(18),
      ...times(8, { kind: 'практика' }),
      ...times(3, { kind: 'семинар' }),
      ...times(2, { kind: 'консультация' }),
      ...times(5, { semester: 2 }),
      ...times(4, { subjectId: 9, subjectName: 'Рисунок', kind: 'практика' }),
    ];
    const comparison = comparePlan(studyPlanNotes(plan, [entry()], TODAY), scheduled);
    expect(comparison.semester).toBe(1);
    expect(comparison.ends.map((end) => end.code)).toEqual(['Б1.О.07', 'Б1.О.09', 'Б2.О.01(П)']);
    expect(comparison.rows).toEqual([
      { subject: 'Математический анализ', code: 'Б1.О.07', kind: 'lecture', plannedHours: 36, scheduledHours: 36 },
      {
        subject: 'Математический анализ',
        code: 'Б1.О.07',
        kind: 'practice',
        plannedHours: 34,
        scheduledHours: 16,
        difference: 'far-from-plan',
      },
      {
        subject: 'Математический анализ',
        code: 'Б1.О.07',
        kind: 'seminar',
        plannedHours: 0,
        scheduledHours: 6,
        difference: 'not-in-plan',
      },
      {
        subject: 'Физика',
        code: 'Б1.О.09',
        kind: 'laboratory',
        plannedHours: 16,
        scheduledHours: 0,
        difference: 'none-scheduled',
      },
      { subject: 'Рисунок', code: '', kind: 'practice', plannedHours: 0, scheduledHours: 8, difference: 'not-in-plan' },
    ]);
  });

  it('compares nothing without a current semester', () => {
    expect(comparePlan(studyPlanNotes([], [entry()], TODAY), times(3))).toEqual({ semester: null, ends: [], rows: [] });
  });
});

function zero(hours: Partial<PlanNote['hours']>): PlanNote['hours'] {
  return { lecture: 0, practice: 0, seminar: 0, laboratory: 0, ...hours };
}
