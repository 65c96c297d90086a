/** `/`: find a group or a teacher by name, or sign in for a personal timetable. */
import { html } from './html.ts';
import { type Lang, messages } from './i18n.ts';
import { page } from './layout.ts';

const words = messages({
  ru: {
    title: 'Найти расписание',
    lead: 'Расписание группы или преподавателя — в вашем календаре. Все изменения приходят сами.',
    search: 'Группа или преподаватель',
    placeholder: 'Например, 09-351 или Иванов',
    find: 'Найти',
  },
  en: {
    title: 'Find a timetable',
    lead: "A group's or a teacher's timetable in your calendar. Every change arrives by itself.",
    search: 'Group or teacher',
    placeholder: 'For example 09-351 or Ivanov',
    find: 'Find',
  },
});

export interface HomeView {
  lang: Lang;
  url: string;
}

export function homePage(view: HomeView): string {
  const w = words(view.lang);
  return page({
    lang: view.lang,
    url: view.url,
    title: w.title,
    body: html`<h1>${w.title}</h1>
<p class="muted">${w.lead}</p>
<form class="search" method="get" action="/" role="search">
<label for="q" class="visually-hidden">${w.search}</label>
<input type="search" id="q" name="q" placeholder="${w.placeholder}" autocomplete="off" minlength="2" maxlength="64">
<button type="submit">${w.find}</button>
</form>`,
  });
}
