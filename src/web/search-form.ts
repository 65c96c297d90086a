/** The search box of the pages shown instead of a timetable (an unknown timetable, an unknown page). */
import { type Html, html } from './html.ts';
import { type Lang, messages } from './i18n.ts';

const words = messages({
  ru: { search: 'Группа или преподаватель', find: 'Найти' },
  en: { search: 'Group or teacher', find: 'Find' },
});

/** A GET of `/?q=…`, the home page's search. */
export function searchForm(lang: Lang): Html {
  const w = words(lang);
  return html`<form class="search" method="get" action="/" role="search">
<label for="q" class="visually-hidden">${w.search}</label>
<input type="search" id="q" name="q" autocomplete="off" minlength="2" maxlength="64">
<button type="submit">${w.find}</button>
</form>`;
}
