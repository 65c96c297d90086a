/**
 * Google Calendar's words in the push pages (push-manage-page.ts): where consent lands (the calendar's state,
 * Disconnect with or without deleting the calendar), what a disconnection did, and what can go wrong on the way
 * that only Google has (a refused or expired consent, Google push not set up).
 */
import { type Html, html } from './html.ts';
import { type Lang, messages } from './i18n.ts';
import { page } from './layout.ts';
import { kindProblemPage, type PushManageView, pushManagePage } from './push-manage-page.ts';

const words = messages({
  ru: {
    title: 'Google Календарь подключён',
    lead: (name: string) =>
      `Календарь «${name}» в вашем Google Календаре следует за расписанием: изменения приходят сами, обычно за несколько минут.`,
    paused: (until: string) => `Приостановлен: Google ограничил число запросов. Возобновится ${until}.`,
    pausedNoDate: 'Приостановлен: Google ограничил число запросов. Возобновится сам.',
    needsConsent: 'Нужно разрешение заново: Google больше не принимает выданный доступ. Подключите календарь ещё раз.',
    calendarDeleted: 'Календарь удалён в Google. Подключите ещё раз, чтобы создать новый.',
    disconnectLead:
      'Календарь перестанет обновляться. Занятия, уже внесённые в него, останутся, если не удалить календарь.',
    deleteToo: 'Удалить и сам календарь из Google',
  },
  en: {
    title: 'Google Calendar connected',
    lead: (name: string) =>
      `The calendar “${name}” in your Google Calendar follows the timetable: changes arrive by themselves, usually within minutes.`,
    paused: (until: string) => `Paused: Google limited the number of requests. It resumes ${until}.`,
    pausedNoDate: 'Paused: Google limited the number of requests. It resumes by itself.',
    needsConsent: 'Needs consent again: Google no longer accepts the access it gave. Connect the calendar again.',
    calendarDeleted: 'The calendar was deleted in Google. Connect again to create a new one.',
    disconnectLead: 'The calendar stops being updated. The classes already in it stay unless you delete the calendar.',
    deleteToo: 'Delete the calendar from Google too',
  },
});

/** The manage page of one Google connection. */
export function googleManagePage(view: PushManageView): Html {
  const w = words(view.lang);
  return pushManagePage(view, `/google/targets/${view.target.id}`, {
    title: w.title,
    lead: w.lead(view.target.calendarName),
    facts: [],
    paused: w.paused,
    pausedNoDate: w.pausedNoDate,
    needsCredential: w.needsConsent,
    calendarDeleted: w.calendarDeleted,
    // A new consent is the only way to a new refresh token.
    reconnect: ['needs-credential', 'calendar-deleted'],
    disconnectLead: w.disconnectLead,
    deleteCalendar: w.deleteToo,
  });
}

/** What a disconnection did to a Google calendar. */
export const googleDisconnected = messages({
  ru: {
    kept: (name: string) =>
      `Календарь «${name}» больше не обновляется. Он остался в вашем Google Календаре, его можно удалить там.`,
    deleted: (name: string) => `Календарь «${name}» отключён и удалён из вашего Google Календаря.`,
    failed: (name: string) =>
      `Календарь «${name}» отключён, но удалить его не удалось. Удалите его в Google Календаре вручную.`,
  },
  en: {
    kept: (name: string) =>
      `The calendar “${name}” is no longer updated. It stays in your Google Calendar, where you can delete it.`,
    deleted: (name: string) => `The calendar “${name}” is disconnected and deleted from your Google Calendar.`,
    failed: (name: string) =>
      `The calendar “${name}” is disconnected, but it could not be deleted. Delete it in Google Calendar by hand.`,
  },
});

const problems = messages({
  ru: {
    'consent-refused': ['Подключение отменено', 'Вы не дали разрешение в Google, поэтому ничего не подключено.'],
    'consent-failed': [
      'Не удалось подключить',
      'Разрешение устарело, уже использовано, начато в другом браузере или выдано не полностью. Ничего не подключено; начните подключение заново со страницы расписания.',
    ],
    'google-off': [
      'Отправка в Google Календарь на этом сервере не включена',
      'Добавьте календарь по ссылке: на странице расписания нажмите «Добавить в календарь».',
    ],
  },
  en: {
    'consent-refused': ['Connection cancelled', 'You did not give Google’s permission, so nothing was connected.'],
    'consent-failed': [
      'Could not connect',
      'The consent expired, was used already, was started in another browser, or was not granted in full. Nothing was connected; start again from the timetable’s page.',
    ],
    'google-off': [
      'Pushing to Google Calendar is not turned on on this server',
      'Add the calendar by its link: on the timetable’s page, choose “Add to calendar”.',
    ],
  },
});

/** What went wrong, as the problem page tells it. */
export type GoogleProblem = Parameters<typeof googleProblemPage>[0]['problem'];

/** A friendly page for a problem of the Google pages; `detail` (the service's own words) may add why. */
export const googleProblemPage = kindProblemPage(problems);

const offWords = messages({
  ru: {
    title: 'Отправка в Google Календарь на этом сервере не включена',
    lead: 'Сразу записывать занятия в Google Календарь этот сервер не умеет. Расписание всё равно можно держать в Google Календаре: подпишитесь на него по ссылке.',
    how: 'На странице расписания нажмите «Добавить в календарь» и выберите Google Календарь. Google перечитывает такую ссылку раз в 12–24 часа, поэтому переносы появятся там с опозданием.',
    subscribe: 'Добавить в календарь по ссылке',
    home: 'На главную',
  },
  en: {
    title: 'Pushing to Google Calendar is not turned on on this server',
    lead: 'This server cannot write classes into Google Calendar right away. You can still keep the timetable in Google Calendar: subscribe to it by its link.',
    how: 'On the timetable’s page, choose “Add to calendar”, then Google Calendar. Google re-reads such a link every 12–24 hours, so moves reach it late.',
    subscribe: 'Add to calendar by link',
    home: 'Home',
  },
});

/**
 * The page a browser gets at `/google/connect` on a server without Google push: what to do instead (subscribe by
 * the feed's link, from the timetable's «Добавить в календарь»), with the way there; none when the link named no
 * timetable.
 */
export function googleOffPage(view: { lang: Lang; url: string; subscribeUrl?: string | undefined }): Html {
  const w = offWords(view.lang);
  return page({
    lang: view.lang,
    url: view.url,
    title: w.title,
    private: true,
    body: html`<h1>${w.title}</h1>
<p class="notice" role="status" data-google-off>${w.lead}</p>
<p>${w.how}</p>
<p>!${
      view.subscribeUrl === undefined
        ? html`<a class="button secondary" href="/">${w.home}</a>`
        : html`<a class="button" href="${view.subscribeUrl}" data-subscribe-link autofocus>${w.subscribe}</a>`
    }</p>`,
  });
}
