/**
 * A page address that does not exist (HTTP 404), as a page in the reader's language with the search box: a
 * person who followed a broken or mistyped link to a timetable gets a way on, not a JSON error.
 */
import { type Html, html } from './html.ts';
import { type Lang, messages } from './i18n.ts';
import { page } from './layout.ts';
import { searchForm } from './search-form.ts';

const words = messages({
  ru: {
    title: 'Страница не найдена',
    lead: 'Такой страницы здесь нет: возможно, ссылка устарела или в адресе опечатка.',
    hint: 'Найдите группу или преподавателя по названию:',
    home: 'На главную',
  },
  en: {
    title: 'Page not found',
    lead: 'There is no such page here: the link may be out of date, or the address mistyped.',
    hint: 'Find a group or a teacher by name:',
    home: 'Home page',
  },
});

/** The 404 page of an unknown page address. */
export function notFoundPage(view: { lang: Lang; url: string }): Html {
  const w = words(view.lang);
  return page({
    lang: view.lang,
    url: view.url,
    title: w.title,
    body: html`<h1>${w.title}</h1>
<p>${w.lead}</p>
<p>${w.hint}</p>
!${searchForm(view.lang)}
<p><a href="/">${w.home}</a></p>`,
  });
}
