/**
 * The study plan table of the personal page: the current semester's planned hours next to the hours the
 * timetable schedules, per subject and kind of class, with every difference named in words (colour only
 * repeats it), how each subject ends, and when the plan was fetched; or a note that the plan is unavailable.
 * Each subject is a row group of its own, and every cell names its column (`data-label`), so that a narrow
 * screen shows the same table as one card per subject (app.css).
 */
import type { StudyPlanView } from '../subscriptions/study-plan-view.ts';
import type { PlanDifference, PlanRow } from '../timetable/plan-compare.ts';
import { type Html, html } from './html.ts';
import { type Lang, messages } from './i18n.ts';

const words = messages({
  ru: {
    title: 'Учебный план',
    semester: (n: number) => `Учебный план: ${n}-й семестр`,
    asOf: (when: string) => `Данные на ${when}.`,
    hoursNote:
      'Часы академические (45 минут). «В расписании» — сколько часов занятий стоит в расписании на весь семестр.',
    refreshFailed: 'Обновить план не удалось: показан последний полученный.',
    notFetched: 'Учебный план недоступен: он ещё не загружен и появится после ближайшего обновления расписания.',
    failed: 'Учебный план недоступен: университет его не отдал. На расписание это не влияет, попробуем позже.',
    noSemester: 'В учебном плане нет семестра, который совпадал бы с расписанием.',
    empty: 'В текущем семестре плана нет предметов.',
    differences: (n: number) => `Расхождений с планом: ${n}.`,
    noDifferences: 'Расписание совпадает с планом.',
    subject: 'Предмет',
    kindColumn: 'Занятия',
    planned: 'По плану, ч',
    scheduled: 'В расписании, ч',
    difference: 'Расхождение',
    noClasses: 'без аудиторных занятий',
    notInPlanSubject: 'предмета нет в плане',
    exam: 'Экзамен',
    quiz: 'Зачёт',
    examAndQuiz: 'Экзамен и зачёт',
    kinds: { lecture: 'лекции', practice: 'практические', seminar: 'семинары', laboratory: 'лабораторные' },
    marks: {
      'none-scheduled': 'нет в расписании',
      'far-from-plan': 'далеко от плана',
      'not-in-plan': 'нет в плане',
    },
    ok: 'в пределах плана',
    locale: 'ru-RU',
  },
  en: {
    title: 'Study plan',
    semester: (n: number) => `Study plan: semester ${n}`,
    asOf: (when: string) => `Data as of ${when}.`,
    hoursNote:
      'Academic hours (45 minutes). "Scheduled" is how many hours of classes the timetable holds for the whole semester.',
    refreshFailed: 'The plan could not be updated: the last one received is shown.',
    notFetched:
      'The study plan is unavailable: it has not been loaded yet and appears after the next timetable update.',
    failed:
      'The study plan is unavailable: the university did not return it. The timetable is not affected; we will try again later.',
    noSemester: 'No semester of the study plan matches the timetable.',
    empty: 'The plan has no subjects in the current semester.',
    differences: (n: number) => `Differences from the plan: ${n}.`,
    noDifferences: 'The timetable matches the plan.',
    subject: 'Subject',
    kindColumn: 'Classes',
    planned: 'Planned, h',
    scheduled: 'Scheduled, h',
    difference: 'Difference',
    noClasses: 'no classroom hours',
    notInPlanSubject: 'subject not in the plan',
    exam: 'Exam',
    quiz: 'Pass/fail test',
    examAndQuiz: 'Exam and pass/fail test',
    kinds: { lecture: 'lectures', practice: 'practice', seminar: 'seminars', laboratory: 'labs' },
    marks: {
      'none-scheduled': 'not scheduled',
      'far-from-plan': 'far from the plan',
      'not-in-plan': 'not in the plan',
    },
    ok: 'within the plan',
    locale: 'en-GB',
  },
});

type Words = ReturnType<typeof words>;

/** One subject's rows, as the table groups them. */
interface SubjectRows {
  subject: string;
  code: string;
  ending: string;
  rows: PlanRow[];
}

function endingText(w: Words, exam: boolean, quiz: boolean): string {
  if (exam && quiz) return w.examAndQuiz;
  if (exam) return w.exam;
  return quiz ? w.quiz : '';
}

/** The subjects in plan order (each with its rows), then the subjects the plan lacks. */
function bySubject(view: Extract<StudyPlanView, { state: 'ready' }>, w: Words): SubjectRows[] {
  const key = (subject: string, code: string) => `${code}\u0000${subject}`;
  const groups = new Map<string, SubjectRows>();
  for (const end of view.ends)
    groups.set(key(end.subject, end.code), {
      subject: end.subject,
      code: end.code,
      ending: endingText(w, end.exam, end.quiz),
      rows: [],
    });
  for (const row of view.rows) {
    const k = key(row.subject, row.code);
    let group = groups.get(k);
    if (group === undefined) {
      group = { subject: row.subject, code: row.code, ending: '', rows: [] };
      groups.set(k, group);
    }
    group.rows.push(row);
  }
  return [...groups.values()];
}

function subjectCell(group: SubjectRows, w: Words, span: number): Html {
  const details = [group.code === '' ? w.notInPlanSubject : group.code, group.ending].filter((part) => part !== '');
  return html`<th scope="rowgroup" rowspan="${span}">${group.subject}<br><span class="muted">${details.join(' · ')}</span></th>`;
}

function markCell(w: Words, difference: PlanDifference | undefined): Html {
  if (difference === undefined) return html`<td class="plan-ok" data-label="${w.difference}">${w.ok}</td>`;
  return html`<td data-label="${w.difference}"><strong class="plan-mark">⚠ ${w.marks[difference]}</strong></td>`;
}

function subjectRows(group: SubjectRows, w: Words): Html {
  if (group.rows.length === 0)
    return html`<tbody class="plan-subject"><tr>!${subjectCell(group, w, 1)}<td colspan="4" class="muted">${w.noClasses}</td></tr></tbody>`;
  const rows = group.rows
    .map(
      (row, index) =>
        html`<tr class="${row.difference ? 'plan-differs' : ''}">!${index === 0 ? subjectCell(group, w, group.rows.length) : ''}<td class="plan-kind">${w.kinds[row.kind]}</td><td class="num" data-label="${w.planned}">${hours(row.plannedHours, w)}</td><td class="num" data-label="${w.scheduled}">${hours(row.scheduledHours, w)}</td>!${markCell(w, row.difference)}</tr>`,
    )
    .join('');
  return html`<tbody class="plan-subject">!${rows}</tbody>`;
}

function hours(value: number, w: Words): string {
  return new Intl.NumberFormat(w.locale, { maximumFractionDigits: 1 }).format(value);
}

function formatTime(epochMs: number, timezone: string, w: Words): string {
  return new Intl.DateTimeFormat(w.locale, { dateStyle: 'long', timeStyle: 'short', timeZone: timezone }).format(
    new Date(epochMs),
  );
}

/** The plan section of the personal page. */
export function planSection(view: StudyPlanView, lang: Lang): Html {
  const w = words(lang);
  if (view.state === 'unavailable')
    return html`<section class="plan" aria-labelledby="plan-title"><h2 id="plan-title">${w.title}</h2>
<p class="notice" role="status">${view.reason === 'failed' ? w.failed : w.notFetched}</p></section>`;
  const asOf = w.asOf(formatTime(view.fetchedAt, view.timezone, w));
  const failed = view.refreshFailedAt === null ? '' : html`<p class="notice">${w.refreshFailed}</p>`;
  const title = view.semester === null ? w.title : w.semester(view.semester);
  const head = html`<h2 id="plan-title">${title}</h2><p class="muted">${asOf} ${w.hoursNote}</p>!${failed}`;
  if (view.semester === null || view.ends.length + view.rows.length === 0) {
    const note = view.semester === null ? w.noSemester : w.empty;
    return html`<section class="plan" aria-labelledby="plan-title">!${head}<p>${note}</p></section>`;
  }
  const differing = view.rows.filter((row) => row.difference !== undefined).length;
  const summary = differing === 0 ? w.noDifferences : w.differences(differing);
  const body = bySubject(view, w)
    .map((group) => subjectRows(group, w))
    .join('');
  return html`<section class="plan" aria-labelledby="plan-title">!${head}
<p><strong>${summary}</strong></p>
<div class="table-wrap"><table>
<thead><tr><th scope="col">${w.subject}</th><th scope="col">${w.kindColumn}</th><th scope="col" class="num">${w.planned}</th><th scope="col" class="num">${w.scheduled}</th><th scope="col">${w.difference}</th></tr></thead>
!${body}
</table></div></section>`;
}
