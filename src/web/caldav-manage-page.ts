/**
 * CalDAV's words and rows in the push pages (push-manage-page.ts): the server and login beside the state, a form
 * for a new app password (the credential CalDAV replaces in place), what a disconnection did, and the one problem
 * only CalDAV has (a personal timetable connected by someone not signed in to it).
 */
import { type Html, html } from './html.ts';
import { messages } from './i18n.ts';
import { kindProblemPage, type PushManageView, pushManagePage } from './push-manage-page.ts';

const words = messages({
  ru: {
    title: 'Календарь подключён',
    lead: (name: string, host: string) =>
      `Календарь «${name}» на ${host} следует за расписанием: изменения записываются сами, обычно за несколько минут.`,
    server: 'Сервер',
    login: 'Логин',
    paused: (until: string) => `Приостановлено до ${until}: сервер календаря отказал. Возобновится само.`,
    pausedNoDate: 'Приостановлено: сервер календаря отказал. Возобновится само.',
    needsPassword:
      'Нужен новый пароль приложения: сервер больше не принимает сохранённый (его могли отозвать или сменить).',
    calendarDeleted: 'Календарь удалён на сервере. Подключите ещё раз с тем же логином, чтобы создать новый.',
    passwordHeading: 'Новый пароль приложения',
    passwordLead:
      'Если вы отозвали пароль или создали новый, введите его здесь. Мы проверим его на сервере, прежде чем сохранить.',
    password: 'Пароль приложения',
    savePassword: 'Сохранить пароль',
    passwordSaved: 'Пароль принят, отправка возобновлена.',
    disconnectOwned: (name: string) => `Календарь «${name}», созданный сервисом, будет удалён вместе с занятиями.`,
    disconnectGiven: (name: string) =>
      `Из календаря «${name}» будут удалены только занятия, записанные сервисом; ваши события останутся.`,
  },
  en: {
    title: 'Calendar connected',
    lead: (name: string, host: string) =>
      `The calendar “${name}” on ${host} follows the timetable: changes are written by themselves, usually within minutes.`,
    server: 'Server',
    login: 'Login',
    paused: (until: string) => `Paused until ${until}: the calendar server refused. It resumes by itself.`,
    pausedNoDate: 'Paused: the calendar server refused. It resumes by itself.',
    needsPassword:
      'A new app password is needed: the server no longer accepts the stored one (it was revoked or changed).',
    calendarDeleted: 'The calendar was deleted on the server. Connect again with the same login to make a new one.',
    passwordHeading: 'New app password',
    passwordLead:
      'If you revoked the password or made a new one, enter it here. We check it with the server before storing it.',
    password: 'App password',
    savePassword: 'Save password',
    passwordSaved: 'Password accepted; pushing resumed.',
    disconnectOwned: (name: string) => `The calendar “${name}”, made by the service, is deleted with its classes.`,
    disconnectGiven: (name: string) =>
      `Only the classes the service wrote are removed from the calendar “${name}”; your own events stay.`,
  },
});

/** What the password form answered: refused (with why), or saved. */
export type PasswordOutcome = { error: string } | { saved: true };

/** What the manage page of a CalDAV connection shows beyond every kind's. */
export interface CalDavManageView extends PushManageView {
  /** Host (and port) of the calendar's server. */
  host: string;
  username: string;
  password?: PasswordOutcome | undefined;
}

/** The manage page of one CalDAV connection. */
export function caldavManagePage(view: CalDavManageView): Html {
  const w = words(view.lang);
  const { target } = view;
  return pushManagePage(view, `/caldav/targets/${target.id}`, {
    title: w.title,
    lead: w.lead(target.calendarName, view.host),
    facts: [
      { term: w.server, value: view.host, url: true },
      { term: w.login, value: view.username },
    ],
    paused: w.paused,
    pausedNoDate: w.pausedNoDate,
    needsCredential: w.needsPassword,
    calendarDeleted: w.calendarDeleted,
    // A refused password has its own form below; only a deleted calendar needs a new connection.
    reconnect: ['calendar-deleted'],
    sections: passwordSection(view),
    disconnectLead: target.calendarOwned
      ? w.disconnectOwned(target.calendarName)
      : w.disconnectGiven(target.calendarName),
  });
}

/** The form for a new app password, urged (a primary button) while the server refuses the stored one. */
function passwordSection(view: CalDavManageView): Html {
  const w = words(view.lang);
  const needsPassword = view.target.state === 'needs-credential';
  const outcome = view.password;
  const notice =
    outcome === undefined
      ? ''
      : 'error' in outcome
        ? html`<p id="caldav-password-error" class="notice error" role="alert">${outcome.error}</p>`
        : html`<p class="notice ok" role="status">${w.passwordSaved}</p>`;
  const refused = outcome !== undefined && 'error' in outcome;
  return html`<section class="card" aria-labelledby="password"!${needsPassword ? ' data-needs-password' : ''}>
<h2 id="password">${w.passwordHeading}</h2>
<p class="muted">${w.passwordLead}</p>
!${notice}
<form method="post" action="/caldav/targets/${view.target.id}/password">
<div class="field">
<label for="caldav-new-password">${w.password}</label>
<input type="password" id="caldav-new-password" name="password" required maxlength="1024" autocomplete="off" spellcheck="false"!${refused ? html` aria-invalid="true" aria-describedby="caldav-password-error" autofocus` : ''}>
</div>
<button type="submit"!${needsPassword ? '' : ' class="secondary"'}>${w.savePassword}</button>
</form>
</section>`;
}

/** What a disconnection did to a CalDAV calendar: the service's own is deleted, one it was given is kept. */
export const caldavDisconnected = messages({
  ru: {
    deleted: (name: string) => `Календарь «${name}» отключён и удалён.`,
    kept: (name: string) =>
      `Календарь «${name}» больше не обновляется; занятия, записанные сервисом, удалены, ваши события остались.`,
    failed: (name: string) =>
      `Календарь «${name}» больше не обновляется, но удалить записанное сервисом не удалось. Удалите это в календаре вручную.`,
  },
  en: {
    deleted: (name: string) => `The calendar “${name}” is disconnected and deleted.`,
    kept: (name: string) =>
      `The calendar “${name}” is no longer updated; the classes the service wrote are removed, your own events stay.`,
    failed: (name: string) =>
      `The calendar “${name}” is no longer updated, but what the service wrote could not be removed. Delete it in the calendar by hand.`,
  },
});

const problems = messages({
  ru: {
    'sign-in': [
      'Нужно войти',
      'Личное расписание может подключить только его владелец: войдите на главной странице и откройте подключение со своей страницы.',
    ],
  },
  en: {
    'sign-in': [
      'Sign in first',
      'Only its owner can connect a personal timetable: sign in on the home page and connect from your own page.',
    ],
  },
});

/** What went wrong, as the problem page tells it. */
export type CalDavProblem = Parameters<typeof caldavProblemPage>[0]['problem'];

/** A friendly page for a problem of the CalDAV pages. */
export const caldavProblemPage = kindProblemPage(problems);
