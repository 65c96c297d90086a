/**
 * The pages of a Google Calendar connection for the browser that holds its manage token: where consent lands
 * (the calendar's state, a copyable manage link, Disconnect with or without deleting the calendar), what a
 * disconnection did, and the friendly form of what can go wrong on the way (a refused or expired consent, a
 * wrong manage link, a calendar already disconnected).
 */

import type { GoogleTarget } from '../google/google-targets.ts';
import type { PendingChanges } from '../google/pending-changes.ts';
import { type Html, html } from './html.ts';
import { type Lang, messages } from './i18n.ts';
import { page } from './layout.ts';

const words = messages({
  ru: {
    title: 'Google Календарь подключён',
    lead: (name: string) =>
      `Календарь «${name}» в вашем Google Календаре следует за расписанием: изменения приходят сами, обычно за несколько минут.`,
    state: 'Состояние',
    calendar: 'Календарь',
    status: 'Статус',
    active: 'Работает',
    paused: (until: string) => `Приостановлен: Google ограничил число запросов. Возобновится ${until}.`,
    pausedNoDate: 'Приостановлен: Google ограничил число запросов. Возобновится сам.',
    needsConsent: 'Нужно разрешение заново: Google больше не принимает выданный доступ. Подключите календарь ещё раз.',
    calendarDeleted: 'Календарь удалён в Google. Подключите ещё раз, чтобы создать новый.',
    why: 'Причина',
    lastPush: 'Последняя отправка',
    never: 'ещё не было',
    pushCounts: (i: number, p: number, d: number) => `добавлено ${i}, изменено ${p}, удалено ${d}`,
    pending: 'Ждут отправки',
    pendingCounts: (c: PendingChanges) => `добавить ${c.insert}, изменить ${c.patch}, удалить ${c.delete}`,
    nothingPending: 'ничего, календарь в актуальном состоянии',
    notPublished: 'расписание ещё загружается',
    queued: 'Отправка уже в очереди.',
    reconnect: 'Подключить заново',
    linkHeading: 'Ссылка для управления',
    linkLead:
      'Этот браузер помнит подключение. Чтобы управлять им с другого устройства, сохраните ссылку: она открывает эту страницу без входа, поэтому никому её не передавайте.',
    copy: 'Скопировать',
    copied: 'Скопировано',
    disconnectHeading: 'Отключить',
    disconnectLead:
      'Календарь перестанет обновляться. Занятия, уже внесённые в него, останутся, если не удалить календарь.',
    deleteToo: 'Удалить и сам календарь из Google',
    disconnect: 'Отключить',
    disconnectedTitle: 'Календарь отключён',
    disconnectedKept: (name: string) =>
      `Календарь «${name}» больше не обновляется. Он остался в вашем Google Календаре, его можно удалить там.`,
    disconnectedDeleted: (name: string) => `Календарь «${name}» отключён и удалён из вашего Google Календаря.`,
    deleteFailed: (name: string) =>
      `Календарь «${name}» отключён, но удалить его не удалось. Удалите его в Google Календаре вручную.`,
    home: 'На главную',
  },
  en: {
    title: 'Google Calendar connected',
    lead: (name: string) =>
      `The calendar “${name}” in your Google Calendar follows the timetable: changes arrive by themselves, usually within minutes.`,
    state: 'State',
    calendar: 'Calendar',
    status: 'Status',
    active: 'Working',
    paused: (until: string) => `Paused: Google limited the number of requests. It resumes ${until}.`,
    pausedNoDate: 'Paused: Google limited the number of requests. It resumes by itself.',
    needsConsent: 'Needs consent again: Google no longer accepts the access it gave. Connect the calendar again.',
    calendarDeleted: 'The calendar was deleted in Google. Connect again to create a new one.',
    why: 'Reason',
    lastPush: 'Last push',
    never: 'not yet',
    pushCounts: (i: number, p: number, d: number) => `${i} added, ${p} changed, ${d} deleted`,
    pending: 'Waiting to be pushed',
    pendingCounts: (c: PendingChanges) => `${c.insert} to add, ${c.patch} to change, ${c.delete} to delete`,
    nothingPending: 'nothing, the calendar is up to date',
    notPublished: 'the timetable is still loading',
    queued: 'A push is queued already.',
    reconnect: 'Connect again',
    linkHeading: 'Manage link',
    linkLead:
      'This browser remembers the connection. To manage it from another device, keep this link: it opens this page without signing in, so share it with nobody.',
    copy: 'Copy',
    copied: 'Copied',
    disconnectHeading: 'Disconnect',
    disconnectLead: 'The calendar stops being updated. The classes already in it stay unless you delete the calendar.',
    deleteToo: 'Delete the calendar from Google too',
    disconnect: 'Disconnect',
    disconnectedTitle: 'Calendar disconnected',
    disconnectedKept: (name: string) =>
      `The calendar “${name}” is no longer updated. It stays in your Google Calendar, where you can delete it.`,
    disconnectedDeleted: (name: string) =>
      `The calendar “${name}” is disconnected and deleted from your Google Calendar.`,
    deleteFailed: (name: string) =>
      `The calendar “${name}” is disconnected, but it could not be deleted. Delete it in Google Calendar by hand.`,
    home: 'Home',
  },
});

/** What the manage page shows. */
export interface GoogleManageView {
  lang: Lang;
  /** The request's path, for the language switch. */
  url: string;
  target: GoogleTarget;
  /** Null before the timetable's first publication. */
  pendingChanges: PendingChanges | null;
  pushQueued: boolean;
  /** The link that opens this page in another browser (it carries the manage token). */
  manageLink: string;
  /** Where "connect again" starts a new consent. */
  connectUrl: string;
  /** The university's time zone (times are shown in it). */
  timeZone: string;
}

/** The manage page of one connection. */
export function googleManagePage(view: GoogleManageView): Html {
  const w = words(view.lang);
  const { target } = view;
  const action = `/google/targets/${target.id}/disconnect`;
  return page({
    lang: view.lang,
    url: view.url,
    title: target.calendarName,
    private: true,
    body: html`<h1>${w.title}</h1>
<p>${w.lead(target.calendarName)}</p>
<section class="card" aria-labelledby="state">
<h2 id="state">${w.state}</h2>
<dl class="facts">
<dt>${w.calendar}</dt><dd>${target.calendarName}</dd>
<dt>${w.status}</dt><dd data-status="${target.status}">${statusText(view)}</dd>
!${target.statusReason === undefined || target.status === 'active' ? '' : html`<dt>${w.why}</dt><dd>${target.statusReason}</dd>`}
<dt>${w.lastPush}</dt><dd>${lastPushText(view)}</dd>
<dt>${w.pending}</dt><dd>${pendingText(view)}</dd>
</dl>
!${target.status === 'needs-consent' || target.status === 'calendar-deleted' ? html`<p><a class="button" href="${view.connectUrl}">${w.reconnect}</a></p>` : ''}
</section>
<section class="card" aria-labelledby="manage-link">
<h2 id="manage-link">${w.linkHeading}</h2>
<p class="muted">${w.linkLead}</p>
<div class="row">
<input type="text" id="manage-link-url" class="url" readonly value="${view.manageLink}" aria-labelledby="manage-link">
<button type="button" class="secondary" data-copy="#manage-link-url" data-copied="${w.copied}" hidden>${w.copy}</button>
</div>
</section>
<section class="card" aria-labelledby="disconnect">
<h2 id="disconnect">${w.disconnectHeading}</h2>
<p class="muted">${w.disconnectLead}</p>
<form method="post" action="${action}">
!${target.calendarOwned ? html`<p><label class="check"><input type="checkbox" name="deleteCalendar" value="yes"> ${w.deleteToo}</label></p>` : ''}
<button type="submit" class="danger">${w.disconnect}</button>
</form>
</section>`,
  });
}

function statusText(view: GoogleManageView): string {
  const w = words(view.lang);
  const { target } = view;
  if (target.status === 'paused')
    return target.pausedUntil === undefined ? w.pausedNoDate : w.paused(when(view, target.pausedUntil));
  if (target.status === 'needs-consent') return w.needsConsent;
  if (target.status === 'calendar-deleted') return w.calendarDeleted;
  return w.active;
}

function lastPushText(view: GoogleManageView): string {
  const w = words(view.lang);
  const push = view.target.lastPush;
  if (push === undefined) return w.never;
  return `${when(view, push.at)}: ${w.pushCounts(push.inserted, push.patched, push.deleted)}`;
}

function pendingText(view: GoogleManageView): string {
  const w = words(view.lang);
  const changes = view.pendingChanges;
  const queued = view.pushQueued ? ` ${w.queued}` : '';
  if (changes === null) return `${w.notPublished}.${queued}`;
  if (changes.insert + changes.patch + changes.delete === 0) return `${w.nothingPending}.${queued}`;
  return `${w.pendingCounts(changes)}.${queued}`;
}

/** A time in the university's time zone, as people there read it. */
function when(view: Pick<GoogleManageView, 'lang' | 'timeZone'>, at: number): string {
  return new Intl.DateTimeFormat(view.lang === 'ru' ? 'ru-RU' : 'en-GB', {
    dateStyle: 'medium',
    timeStyle: 'short',
    timeZone: view.timeZone,
  }).format(at);
}

/** What a disconnection did. */
export interface GoogleDisconnectedView {
  lang: Lang;
  url: string;
  calendarName: string;
  calendarDeleted: boolean;
  /** Set when deleting the calendar was asked for and failed. */
  deleteFailed: boolean;
}

/** The page after Disconnect. */
export function googleDisconnectedPage(view: GoogleDisconnectedView): Html {
  const w = words(view.lang);
  const text = view.deleteFailed
    ? w.deleteFailed(view.calendarName)
    : view.calendarDeleted
      ? w.disconnectedDeleted(view.calendarName)
      : w.disconnectedKept(view.calendarName);
  return page({
    lang: view.lang,
    url: view.url,
    title: w.disconnectedTitle,
    body: html`<h1>${w.disconnectedTitle}</h1>
<p class="notice${view.deleteFailed ? ' error' : ''}" role="status">${text}</p>
<p><a class="button secondary" href="/">${w.home}</a></p>`,
  });
}

const problems = messages({
  ru: {
    'consent-refused': ['Подключение отменено', 'Вы не дали разрешение в Google, поэтому ничего не подключено.'],
    'consent-failed': [
      'Не удалось подключить',
      'Разрешение устарело, уже использовано, начато в другом браузере или выдано не полностью. Ничего не подключено; начните подключение заново со страницы расписания.',
    ],
    'google-off': ['Google Календарь недоступен', 'Прямая отправка в Google Календарь на этом сервисе не настроена.'],
    'no-access': [
      'Нет доступа к подключению',
      'Этот браузер не может управлять этим календарём. Откройте ссылку для управления, которую вы сохранили после подключения.',
    ],
    'bad-link': [
      'Ссылка не подходит',
      'Ссылка для управления неверна или устарела (после нового подключения выдаётся новая).',
    ],
    unknown: ['Подключение не найдено', 'Такого подключения нет: возможно, календарь уже отключён.'],
  },
  en: {
    'consent-refused': ['Connection cancelled', 'You did not give Google’s permission, so nothing was connected.'],
    'consent-failed': [
      'Could not connect',
      'The consent expired, was used already, was started in another browser, or was not granted in full. Nothing was connected; start again from the timetable’s page.',
    ],
    'google-off': ['Google Calendar unavailable', 'Google Calendar push is not set up on this service.'],
    'no-access': [
      'No access to this connection',
      'This browser cannot manage this calendar. Open the manage link you kept after connecting.',
    ],
    'bad-link': ['Link does not fit', 'The manage link is wrong or outdated (a new connection gets a new one).'],
    unknown: ['Connection not found', 'There is no such connection: perhaps the calendar was disconnected already.'],
  },
});

/** What went wrong, as the problem page tells it. */
export type GoogleProblem = keyof ReturnType<typeof problems>;

/** A friendly page for a problem of the Google pages; `detail` (the service's own words) may add why. */
export function googleProblemPage(view: { lang: Lang; url: string; problem: GoogleProblem; detail?: string }): Html {
  const [title = '', text = ''] = problems(view.lang)[view.problem];
  const w = words(view.lang);
  return page({
    lang: view.lang,
    url: view.url,
    title,
    private: true,
    body: html`<h1>${title}</h1>
<p class="notice error" role="alert">${text}</p>
!${view.detail === undefined ? '' : html`<p class="muted">${view.detail}</p>`}
<p><a class="button secondary" href="/">${w.home}</a></p>`,
  });
}
