/**
 * The pages of a CalDAV calendar connection for the browser that holds its manage token: its state (last push,
 * changes waiting, a new app password needed, paused and why), a form for a new app password, a copyable manage
 * link, Disconnect; what a disconnection did; and the friendly form of what can go wrong (a wrong manage link,
 * a connection already removed).
 */

import { type CalDavTarget, caldavDetails } from '../caldav/caldav-targets.ts';
import type { PendingChanges } from '../google/pending-changes.ts';
import { type Html, html } from './html.ts';
import { type Lang, messages } from './i18n.ts';
import { page } from './layout.ts';

const words = messages({
  ru: {
    title: 'Календарь подключён',
    lead: (name: string, host: string) =>
      `Календарь «${name}» на ${host} следует за расписанием: изменения записываются сами, обычно за несколько минут.`,
    state: 'Состояние',
    calendar: 'Календарь',
    server: 'Сервер',
    login: 'Логин',
    status: 'Статус',
    active: 'Работает',
    paused: (until: string) => `Приостановлено до ${until}: сервер календаря отказал. Возобновится само.`,
    pausedNoDate: 'Приостановлено: сервер календаря отказал. Возобновится само.',
    needsPassword:
      'Нужен новый пароль приложения: сервер больше не принимает сохранённый (его могли отозвать или сменить).',
    calendarDeleted: 'Календарь удалён на сервере. Подключите ещё раз с тем же логином, чтобы создать новый.',
    reconnect: 'Подключить заново',
    why: 'Причина',
    lastPush: 'Последняя отправка',
    never: 'ещё не было',
    pushCounts: (i: number, p: number, d: number) => `добавлено ${i}, изменено ${p}, удалено ${d}`,
    lastError: 'Последняя ошибка',
    pending: 'Ждут отправки',
    pendingCounts: (c: PendingChanges) => `добавить ${c.insert}, изменить ${c.patch}, удалить ${c.delete}`,
    nothingPending: 'ничего, календарь в актуальном состоянии',
    notPublished: 'расписание ещё загружается',
    queued: 'Отправка уже в очереди.',
    passwordHeading: 'Новый пароль приложения',
    passwordLead:
      'Если вы отозвали пароль или создали новый, введите его здесь. Мы проверим его на сервере, прежде чем сохранить.',
    password: 'Пароль приложения',
    savePassword: 'Сохранить пароль',
    passwordSaved: 'Пароль принят, отправка возобновлена.',
    linkHeading: 'Ссылка для управления',
    linkLead:
      'Этот браузер помнит подключение. Чтобы управлять им с другого устройства, сохраните ссылку: она открывает эту страницу без входа, поэтому никому её не передавайте.',
    copy: 'Скопировать',
    copied: 'Скопировано',
    disconnectHeading: 'Отключить',
    disconnectOwned: (name: string) => `Календарь «${name}», созданный сервисом, будет удалён вместе с занятиями.`,
    disconnectGiven: (name: string) =>
      `Из календаря «${name}» будут удалены только занятия, записанные сервисом; ваши события останутся.`,
    disconnect: 'Отключить',
    disconnectedTitle: 'Календарь отключён',
    disconnectedOwned: (name: string) => `Календарь «${name}» отключён и удалён.`,
    disconnectedGiven: (name: string) =>
      `Календарь «${name}» больше не обновляется; занятия, записанные сервисом, удалены, ваши события остались.`,
    cleanFailed: (name: string) =>
      `Календарь «${name}» больше не обновляется, но удалить записанное сервисом не удалось. Удалите это в календаре вручную.`,
    home: 'На главную',
  },
  en: {
    title: 'Calendar connected',
    lead: (name: string, host: string) =>
      `The calendar “${name}” on ${host} follows the timetable: changes are written by themselves, usually within minutes.`,
    state: 'State',
    calendar: 'Calendar',
    server: 'Server',
    login: 'Login',
    status: 'Status',
    active: 'Working',
    paused: (until: string) => `Paused until ${until}: the calendar server refused. It resumes by itself.`,
    pausedNoDate: 'Paused: the calendar server refused. It resumes by itself.',
    needsPassword:
      'A new app password is needed: the server no longer accepts the stored one (it was revoked or changed).',
    calendarDeleted: 'The calendar was deleted on the server. Connect again with the same login to make a new one.',
    reconnect: 'Connect again',
    why: 'Reason',
    lastPush: 'Last push',
    never: 'not yet',
    pushCounts: (i: number, p: number, d: number) => `${i} added, ${p} changed, ${d} deleted`,
    lastError: 'Last error',
    pending: 'Waiting to be pushed',
    pendingCounts: (c: PendingChanges) => `${c.insert} to add, ${c.patch} to change, ${c.delete} to delete`,
    nothingPending: 'nothing, the calendar is up to date',
    notPublished: 'the timetable is still loading',
    queued: 'A push is queued already.',
    passwordHeading: 'New app password',
    passwordLead:
      'If you revoked the password or made a new one, enter it here. We check it with the server before storing it.',
    password: 'App password',
    savePassword: 'Save password',
    passwordSaved: 'Password accepted; pushing resumed.',
    linkHeading: 'Manage link',
    linkLead:
      'This browser remembers the connection. To manage it from another device, keep this link: it opens this page without signing in, so share it with nobody.',
    copy: 'Copy',
    copied: 'Copied',
    disconnectHeading: 'Disconnect',
    disconnectOwned: (name: string) => `The calendar “${name}”, made by the service, is deleted with its classes.`,
    disconnectGiven: (name: string) =>
      `Only the classes the service wrote are removed from the calendar “${name}”; your own events stay.`,
    disconnect: 'Disconnect',
    disconnectedTitle: 'Calendar disconnected',
    disconnectedOwned: (name: string) => `The calendar “${name}” is disconnected and deleted.`,
    disconnectedGiven: (name: string) =>
      `The calendar “${name}” is no longer updated; the classes the service wrote are removed, your own events stay.`,
    cleanFailed: (name: string) =>
      `The calendar “${name}” is no longer updated, but what the service wrote could not be removed. Delete it in the calendar by hand.`,
    home: 'Home',
  },
});

/** What the manage page shows. */
export interface CalDavManageView {
  lang: Lang;
  /** The request's path, for the language switch. */
  url: string;
  target: CalDavTarget;
  /** Null before the timetable's first publication. */
  pendingChanges: PendingChanges | null;
  pushQueued: boolean;
  /** The link that opens this page in another browser (it carries the manage token). */
  manageLink: string;
  /** The university's time zone (times are shown in it). */
  timeZone: string;
  /** Where "connect again" starts (the connect page of the target's timetable). */
  connectUrl: string;
  /** The password form's outcome: refused (with why), or saved. */
  password?: { error: string } | { saved: true } | undefined;
}

/** The manage page of one connection. */
export function caldavManagePage(view: CalDavManageView): Html {
  const w = words(view.lang);
  const { target } = view;
  const host = new URL(target.calendarId).host;
  const needsPassword = target.status === 'needs-password';
  const outcome = view.password;
  const passwordNotice =
    outcome === undefined
      ? ''
      : 'error' in outcome
        ? html`<p id="caldav-password-error" class="notice error" role="alert">${outcome.error}</p>`
        : html`<p class="notice ok" role="status">${w.passwordSaved}</p>`;
  const refused = outcome !== undefined && 'error' in outcome;
  return page({
    lang: view.lang,
    url: view.url,
    title: target.calendarName,
    private: true,
    body: html`<h1>${w.title}</h1>
<p>${w.lead(target.calendarName, host)}</p>
<section class="card" aria-labelledby="state">
<h2 id="state">${w.state}</h2>
<dl class="facts">
<dt>${w.calendar}</dt><dd>${target.calendarName}</dd>
<dt>${w.server}</dt><dd class="url">${host}</dd>
<dt>${w.login}</dt><dd>${caldavDetails(target).username}</dd>
<dt>${w.status}</dt><dd data-status="${target.status}">${statusText(view)}</dd>
!${target.statusReason === undefined || target.status === 'active' ? '' : html`<dt>${w.why}</dt><dd>${target.statusReason}</dd>`}
<dt>${w.lastPush}</dt><dd data-last-push>${lastPushText(view)}</dd>
!${target.lastError === undefined || target.status === 'active' ? '' : html`<dt>${w.lastError}</dt><dd>${target.lastError}</dd>`}
<dt>${w.pending}</dt><dd data-pending>${pendingText(view)}</dd>
</dl>
!${target.status === 'calendar-deleted' ? html`<p><a class="button" href="${view.connectUrl}">${w.reconnect}</a></p>` : ''}
</section>
<section class="card" aria-labelledby="password"!${needsPassword ? ' data-needs-password' : ''}>
<h2 id="password">${w.passwordHeading}</h2>
<p class="muted">${w.passwordLead}</p>
!${passwordNotice}
<form method="post" action="/caldav/targets/${target.id}/password">
<div class="field">
<label for="caldav-new-password">${w.password}</label>
<input type="password" id="caldav-new-password" name="password" required maxlength="1024" autocomplete="off" spellcheck="false"!${refused ? html` aria-invalid="true" aria-describedby="caldav-password-error" autofocus` : ''}>
</div>
<button type="submit"!${needsPassword ? '' : ' class="secondary"'}>${w.savePassword}</button>
</form>
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
<p class="muted">${target.calendarOwned ? w.disconnectOwned(target.calendarName) : w.disconnectGiven(target.calendarName)}</p>
<form method="post" action="/caldav/targets/${target.id}/disconnect">
<button type="submit" class="danger">${w.disconnect}</button>
</form>
</section>`,
  });
}

function statusText(view: CalDavManageView): string {
  const w = words(view.lang);
  const { target } = view;
  if (target.status === 'paused')
    return target.pausedUntil === undefined ? w.pausedNoDate : w.paused(when(view, target.pausedUntil));
  if (target.status === 'needs-password') return w.needsPassword;
  if (target.status === 'calendar-deleted') return w.calendarDeleted;
  return w.active;
}

function lastPushText(view: CalDavManageView): string {
  const w = words(view.lang);
  const push = view.target.lastPush;
  if (push === undefined) return w.never;
  return `${when(view, push.at)}: ${w.pushCounts(push.inserted, push.patched, push.deleted)}`;
}

function pendingText(view: CalDavManageView): string {
  const w = words(view.lang);
  const changes = view.pendingChanges;
  const queued = view.pushQueued ? ` ${w.queued}` : '';
  if (changes === null) return `${w.notPublished}.${queued}`;
  if (changes.insert + changes.patch + changes.delete === 0) return `${w.nothingPending}.${queued}`;
  return `${w.pendingCounts(changes)}.${queued}`;
}

/** A time in the university's time zone, as people there read it. */
function when(view: Pick<CalDavManageView, 'lang' | 'timeZone'>, at: number): string {
  return new Intl.DateTimeFormat(view.lang === 'ru' ? 'ru-RU' : 'en-GB', {
    dateStyle: 'medium',
    timeStyle: 'short',
    timeZone: view.timeZone,
  }).format(at);
}

/** What a disconnection did. */
export interface CalDavDisconnectedView {
  lang: Lang;
  url: string;
  calendarName: string;
  calendarOwned: boolean;
  /** Set when what the service wrote could not all be removed. */
  failed: boolean;
}

/** The page after Disconnect. */
export function caldavDisconnectedPage(view: CalDavDisconnectedView): Html {
  const w = words(view.lang);
  const text = view.failed
    ? w.cleanFailed(view.calendarName)
    : view.calendarOwned
      ? w.disconnectedOwned(view.calendarName)
      : w.disconnectedGiven(view.calendarName);
  return page({
    lang: view.lang,
    url: view.url,
    title: w.disconnectedTitle,
    body: html`<h1>${w.disconnectedTitle}</h1>
<p class="notice${view.failed ? ' error' : ''}" role="status">${text}</p>
<p><a class="button secondary" href="/">${w.home}</a></p>`,
  });
}

const problems = messages({
  ru: {
    'no-access': [
      'Нет доступа к подключению',
      'Этот браузер не может управлять этим календарём. Откройте ссылку для управления, которую вы сохранили после подключения.',
    ],
    'bad-link': [
      'Ссылка не подходит',
      'Ссылка для управления неверна или устарела (после нового подключения выдаётся новая).',
    ],
    unknown: ['Подключение не найдено', 'Такого подключения нет: возможно, календарь уже отключён.'],
    'sign-in': [
      'Нужно войти',
      'Личное расписание может подключить только его владелец: войдите на главной странице и откройте подключение со своей страницы.',
    ],
  },
  en: {
    'no-access': [
      'No access to this connection',
      'This browser cannot manage this calendar. Open the manage link you kept after connecting.',
    ],
    'bad-link': ['Link does not fit', 'The manage link is wrong or outdated (a new connection gets a new one).'],
    unknown: ['Connection not found', 'There is no such connection: perhaps the calendar was disconnected already.'],
    'sign-in': [
      'Sign in first',
      'Only its owner can connect a personal timetable: sign in on the home page and connect from your own page.',
    ],
  },
});

/** What went wrong, as the problem page tells it. */
export type CalDavProblem = keyof ReturnType<typeof problems>;

/** A friendly page for a problem of the CalDAV pages. */
export function caldavProblemPage(view: { lang: Lang; url: string; problem: CalDavProblem }): Html {
  const [title = '', text = ''] = problems(view.lang)[view.problem];
  const w = words(view.lang);
  return page({
    lang: view.lang,
    url: view.url,
    title,
    private: true,
    body: html`<h1>${title}</h1>
<p class="notice error" role="alert">${text}</p>
<p><a class="button secondary" href="/">${w.home}</a></p>`,
  });
}
