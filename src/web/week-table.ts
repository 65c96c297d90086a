/**
 * This week's classes from today on and next week's on a timetable's page: one section per week, labelled odd
 * or even, one list per day with time, subject, kind, place and the teacher or the groups; today is marked in
 * words and for screen readers (`aria-current="date"`), cancelled and moved classes in words (not by colour
 * alone). A list rather than a table, so that it reads on a 360 px screen.
 */
import { type Html, html } from './html.ts';
import { type Lang, messages } from './i18n.ts';
import type { ClassRow, WeekView } from './timetable-view.ts';

const words = messages({
  ru: {
    thisWeek: 'Эта неделя',
    nextWeek: 'Следующая неделя',
    odd: 'нечётная неделя',
    even: 'чётная неделя',
    none: 'Занятий нет.',
    noneLeft: 'На этой неделе занятий больше нет.',
    noneToday: 'Сегодня занятий нет.',
    today: 'Сегодня',
    cancelled: 'отменено',
    movedFrom: 'перенесено, было',
    teacher: 'Преподаватель',
    groups: 'Группы',
  },
  en: {
    thisWeek: 'This week',
    nextWeek: 'Next week',
    odd: 'odd week',
    even: 'even week',
    none: 'No classes.',
    noneLeft: 'No more classes this week.',
    noneToday: 'No classes today.',
    today: 'Today',
    cancelled: 'cancelled',
    movedFrom: 'moved, was',
    teacher: 'Teacher',
    groups: 'Groups',
  },
});

/** Which people a row names: a group's page names teachers, a teacher's page groups. */
export type RowPeople = 'teacher' | 'groups';

/** `8–14 сентября`, `29 сентября – 5 октября` (dates are calendar days, shown as such). */
export function weekRange(monday: string, sunday: string, lang: Lang): string {
  const locale = lang === 'ru' ? 'ru-RU' : 'en-GB';
  const format = new Intl.DateTimeFormat(locale, { day: 'numeric', month: 'long', timeZone: 'UTC' });
  return format.formatRange(new Date(`${monday}T00:00:00Z`), new Date(`${sunday}T00:00:00Z`));
}

/** `понедельник, 8 сентября`. */
export function dayTitle(date: string, lang: Lang): string {
  const locale = lang === 'ru' ? 'ru-RU' : 'en-GB';
  const text = new Intl.DateTimeFormat(locale, {
    weekday: 'long',
    day: 'numeric',
    month: 'long',
    timeZone: 'UTC',
  }).format(new Date(`${date}T00:00:00Z`));
  return text.charAt(0).toLocaleUpperCase(locale) + text.slice(1);
}

/** The parity label of a week: «нечётная неделя» / «чётная неделя». */
export function parityLabel(week: Pick<WeekView, 'odd'>, lang: Lang): string {
  const w = words(lang);
  return week.odd ? w.odd : w.even;
}

/** Both weeks. */
export function weekSections(weeks: readonly WeekView[], lang: Lang, people: RowPeople): Html {
  return weeks.map((week) => weekSection(week, lang, people)).join('');
}

function weekSection(week: WeekView, lang: Lang, people: RowPeople): Html {
  const w = words(lang);
  const days = week.days.map((day) => {
    const title = dayTitle(day.date, lang);
    const classes = html`<ol class="classes">!${day.classes.map((row) => classItem(row, lang, people))}</ol>`;
    return day.date === week.today
      ? html`<div class="day today" aria-current="date"><h4>${title} <span class="badge today-badge">${w.today}</span></h4>
!${classes}</div>`
      : html`<div class="day"><h4>${title}</h4>
!${classes}</div>`;
  });
  return html`<section class="week" data-week="${week.monday}" data-parity="${week.odd ? 'odd' : 'even'}">
<h3>${week.current ? w.thisWeek : w.nextWeek} <span class="muted">· ${weekRange(week.monday, week.sunday, lang)}</span> <span class="parity">${parityLabel(week, lang)}</span></h3>
!${days.length === 0 ? html`<p class="muted" data-week-empty>${emptyWeek(week, lang)}</p>` : html`!${freeToday(week, lang)}!${days}`}
</section>`;
}

/** What an empty week says: this week only shows its days from today on, so it has no more classes. */
function emptyWeek(week: WeekView, lang: Lang): string {
  const w = words(lang);
  return week.today === undefined || week.today === week.monday ? w.none : w.noneLeft;
}

/** This week's note that today has no classes (its first listed day is a later one); empty otherwise. */
function freeToday(week: WeekView, lang: Lang): Html {
  if (week.today === undefined || week.days[0]?.date === week.today) return '';
  return html`<p class="muted day-free" aria-current="date">${words(lang).noneToday}</p>`;
}

function classItem(row: ClassRow, lang: Lang, people: RowPeople): Html {
  const w = words(lang);
  const who =
    people === 'teacher'
      ? row.teacher === ''
        ? ''
        : html`<span class="who" title="${w.teacher}">${row.teacher}</span>`
      : row.groups.length === 0
        ? ''
        : html`<span class="who" title="${w.groups}">${row.groups.join(', ')}</span>`;
  const marks = [
    row.cancelled ? html`<span class="badge bad">${w.cancelled}</span>` : '',
    row.movedFrom
      ? html`<span class="badge">${w.movedFrom} ${dayTitle(row.movedFrom.date, lang)}, ${row.movedFrom.beginTime}</span>`
      : '',
  ].join('');
  return html`<li class="${row.cancelled ? 'class cancelled' : 'class'}">
<span class="time">${row.beginTime}–${row.endTime}</span>
<div class="what"><strong class="subject">${row.subject}</strong>!${row.kind === '' ? '' : html` <span class="kind">${row.kind}</span>`}!${marks}
<div class="details">!${row.location === '' ? '' : html`<span class="where">${row.location}</span>`}!${who}!${row.note === '' ? '' : html`<span class="note">${row.note}</span>`}</div></div>
</li>`;
}
