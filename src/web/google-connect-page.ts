/**
 * The page before Google's consent when a connect link names feed options: what the calendar will get, in one
 * line, with «Продолжить в Google» (a link to the consent started for this browser) and «Изменить» (the
 * timetable's page with those options, at its options form). A link may carry any title or reminder, and Google's
 * consent page does not show them: said here first, a crafted link cannot put a text the person never saw into
 * every class of their calendar.
 */
import { type Html, html } from './html.ts';
import type { Lang } from './i18n.ts';
import { messages } from './i18n.ts';
import { page } from './layout.ts';

const words = messages({
  ru: {
    title: 'Подключить Google Календарь',
    lead: (name: string) =>
      `Календарь «${name}» появится в вашем Google Календаре и будет следовать за расписанием с этими настройками.`,
    follows: 'В календарь попадёт:',
    go: 'Продолжить в Google',
    change: 'Изменить',
  },
  en: {
    title: 'Connect Google Calendar',
    lead: (name: string) =>
      `The calendar “${name}” will appear in your Google Calendar and follow the timetable with these options.`,
    follows: 'The calendar gets:',
    go: 'Continue in Google',
    change: 'Change',
  },
});

/** What the confirmation shows and posts on. */
export interface GoogleConnectView {
  lang: Lang;
  url: string;
  /** The timetable's name. */
  name: string;
  /** What the calendar will follow, in one line («Подгруппа 2, без лекций»). */
  optionsLine: string;
  /** Google's consent page of the consent started for these options. */
  consentUrl: string;
  /** The timetable's page with these options, at its options form. */
  changeUrl: string;
}

/** The confirmation before Google's consent. */
export function googleConnectPage(view: GoogleConnectView): Html {
  const w = words(view.lang);
  return page({
    lang: view.lang,
    url: view.url,
    title: w.title,
    private: true,
    body: html`<h1>${w.title}</h1>
<p class="lead">${w.lead(view.name)}</p>
<p class="options-line" id="google-options"><strong>${w.follows}</strong> <span data-options-line>${view.optionsLine}</span>.</p>
<p><a class="button" href="${view.consentUrl}" data-google-consent autofocus>${w.go}</a></p>
<p><a class="button secondary" href="${view.changeUrl}">${w.change}</a></p>`,
  });
}
