/**
 * One timetable's page (a group's, a teacher's or the signed-in person's own): its name, the way into a
 * calendar (first, so that a phone shows it on its first screen), this week's classes from today and next
 * week's, and the feed options with a preview. Also the pages shown instead: an unknown timetable (with the
 * search box), one still being fetched, and a client over its limits.
 */
import { type Html, html } from './html.ts';
import { type Lang, messages } from './i18n.ts';
import { page } from './layout.ts';
import { type OptionsFormView, optionsForm } from './options-form.ts';
import { searchForm } from './search-form.ts';
import { type SubscribeView, subscribeBlock } from './subscribe-block.ts';
import type { WeekView } from './timetable-view.ts';
import { type RowPeople, weekSections } from './week-table.ts';

const words = messages({
  ru: {
    group: 'Группа',
    employee: 'Преподаватель',
    personal: 'Моё расписание',
    classes: 'Занятия',
    stale: 'Университет сейчас не отвечает, поэтому показано последнее полученное расписание: данные на',
    unmarkedMoves: 'Переносов за две недели, не отмеченных здесь (журнал изменений сокращён):',
    weeksPending: 'Список занятий обновится после «Применить».',
    loading: 'Расписание загружается из университета. Обновите страницу через несколько секунд.',
    needsCredential:
      'Университет больше не принимает ваш ключ доступа, поэтому расписание не обновляется. Войдите заново на главной странице.',
    notFoundTitle: 'Расписание не найдено',
    notFoundGroup: 'В университете нет группы с таким номером.',
    notFoundEmployee: 'В университете нет преподавателя с таким номером.',
    notFoundHint: 'Найдите группу или преподавателя по названию:',
    loadingTitle: 'Расписание загружается',
    reload: 'Обновить страницу',
    busyTitle: 'Слишком много запросов',
    busy: 'С вашего адреса пришло слишком много запросов новых расписаний. Попробуйте снова через',
    seconds: 'с',
  },
  en: {
    group: 'Group',
    employee: 'Teacher',
    personal: 'My timetable',
    classes: 'Classes',
    stale: 'The university is not answering right now, so this is the last timetable received: data as of',
    unmarkedMoves: 'Moves of the last two weeks not marked here (the change log was shortened):',
    weeksPending: 'The list of classes changes once you choose “Apply”.',
    loading: 'The timetable is being loaded from the university. Reload the page in a few seconds.',
    needsCredential:
      'The university no longer accepts your access key, so the timetable is not updated. Sign in again on the home page.',
    notFoundTitle: 'Timetable not found',
    notFoundGroup: 'The university has no group with this number.',
    notFoundEmployee: 'The university has no teacher with this number.',
    notFoundHint: 'Find a group or a teacher by name:',
    loadingTitle: 'The timetable is loading',
    reload: 'Reload the page',
    busyTitle: 'Too many requests',
    busy: 'Too many requests for new timetables came from your address. Try again in',
    seconds: 's',
  },
});

/** Which timetable a page shows. */
export type PageKind = 'group' | 'employee' | 'personal';

/** `14 сентября 2025, 10:05` in the service's zone. */
export function dataAsOf(at: number, timezone: string, lang: Lang): string {
  return new Intl.DateTimeFormat(lang === 'ru' ? 'ru-RU' : 'en-GB', {
    dateStyle: 'long',
    timeStyle: 'short',
    timeZone: timezone,
  }).format(new Date(at));
}

/** Everything one timetable's page shows. */
export interface TimetablePageView {
  lang: Lang;
  url: string;
  kind: PageKind;
  name: string;
  timezone: string;
  /** Undefined while the timetable has never been fetched (a personal one just signed up). */
  weeks: WeekView[] | undefined;
  /** When the last good data came, if the university failed since. */
  staleAsOf?: number | undefined;
  /**
   * How many moves of the last two weeks the classes cannot be marked with: change records list fewer
   * occurrences than they count when a change was large (at most 50 of each kind, and fewer when the record
   * would pass its bytes, store/change-bounds.ts).
   */
  unmarkedMoves?: number | undefined;
  needsCredential?: boolean;
  options: Omit<OptionsFormView, 'lang'> | undefined;
  subscribe: Omit<SubscribeView, 'lang' | 'optionsHref'>;
  /** Shown under the heading (the personal page's group link). */
  lead?: Html;
  /** Shown at the end (the personal page's study plan and controls). */
  extra?: Html;
  private?: boolean;
}

const PEOPLE: Record<PageKind, RowPeople> = { group: 'teacher', employee: 'groups', personal: 'teacher' };

/** The page of one timetable. */
export function timetablePage(view: TimetablePageView): Html {
  const w = words(view.lang);
  const notes = [
    view.staleAsOf === undefined
      ? ''
      : html`<p class="notice" data-stale>${w.stale} ${dataAsOf(view.staleAsOf, view.timezone, view.lang)}.</p>`,
    view.needsCredential ? html`<p class="notice error">${w.needsCredential}</p>` : '',
  ].join('');
  const classes =
    view.weeks === undefined
      ? html`<p class="notice" data-loading>${w.loading}</p>`
      : html`!${view.options?.previewPath === undefined ? '' : html`<p class="notice" data-weeks-pending hidden>${w.weeksPending}</p>`}!${weekSections(view.weeks, view.lang, PEOPLE[view.kind])}!${unmarked(view, w.unmarkedMoves)}`;
  // The way into a calendar comes first in the source (the first thing on a phone, under the heading); on a
  // wide screen the grid puts it beside the classes, above the options.
  const subscribe = subscribeBlock({
    lang: view.lang,
    ...view.subscribe,
    optionsHref: view.options === undefined ? undefined : '#feed-options',
  });
  const label = w[view.kind] === view.name ? '' : html`<p class="kind-label muted">${w[view.kind]}</p>`;
  const body = html`!${label}
<h1>${view.name}</h1>
!${view.lead ?? ''}!${notes}
<div class="timetable-layout">
<div class="calendar-side">!${subscribe}</div>
<section class="weeks" aria-label="${w.classes}">!${classes}</section>
!${view.options === undefined ? '' : html`<div class="side" id="feed-options">!${optionsForm({ lang: view.lang, ...view.options })}</div>`}
</div>
!${view.extra ?? ''}`;
  return page({ lang: view.lang, url: view.url, title: view.name, body, private: view.private ?? false });
}

/** The note that some moves are not marked ("and N more"); empty when every one is. */
function unmarked(view: TimetablePageView, words: string): Html {
  const count = view.unmarkedMoves ?? 0;
  return count === 0 ? '' : html`<p class="muted" data-unmarked-moves>${words} ${count}.</p>`;
}

/** An unknown group or teacher (HTTP 404), with the search box. */
export function notFoundPage(view: { lang: Lang; url: string; kind: 'group' | 'employee' }): Html {
  const w = words(view.lang);
  return page({
    lang: view.lang,
    url: view.url,
    title: w.notFoundTitle,
    body: html`<h1>${w.notFoundTitle}</h1>
<p>${view.kind === 'group' ? w.notFoundGroup : w.notFoundEmployee}</p>
<p>${w.notFoundHint}</p>
!${searchForm(view.lang)}`,
  });
}

/** A timetable never fetched whose first fetch takes longer than a page waits (HTTP 503, Retry-After). */
export function loadingPage(view: { lang: Lang; url: string; retryAfterSeconds: number }): Html {
  const w = words(view.lang);
  return page({
    lang: view.lang,
    url: view.url,
    title: w.loadingTitle,
    body: html`<h1>${w.loadingTitle}</h1>
<p data-reload-after="${String(view.retryAfterSeconds)}">${w.loading}</p>
<p><a class="button" href="${view.url}">${w.reload}</a></p>`,
  });
}

/** A client over its limit of new timetables (HTTP 429, Retry-After). */
export function rateLimitedPage(view: { lang: Lang; url: string; retryAfterSeconds: number }): Html {
  const w = words(view.lang);
  return page({
    lang: view.lang,
    url: view.url,
    title: w.busyTitle,
    body: html`<h1>${w.busyTitle}</h1>
<p>${w.busy} ${String(view.retryAfterSeconds)} ${w.seconds}.</p>
<p><a class="button" href="${view.url}">${w.reload}</a></p>`,
  });
}
