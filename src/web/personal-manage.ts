/**
 * The owner's controls on the personal page: the live feed URLs, each with when and by what kind of client it
 * was last read, and a way to revoke one (a ticked box confirms it); a new feed URL (every old one stops, and
 * every other browser is signed out); how many browsers are signed in, signing out of this one or of every other
 * one; and deleting the subscription (a ticked box confirms it). Every form works without script. The feed
 * options the plain feed URL serves are saved from the page's one options form (options-form.ts). The forms post
 * to http/personal-routes.ts, which answers with a redirect back here and a `?done=` word that
 * {@link personalNotice} (or {@link optionsNotice}, in the options form) turns into a message.
 */
import type { FeedClient } from '../serving/token-use.ts';
import type { FeedUrlView, Subscription } from '../store/subscription-store.ts';
import { type Html, html } from './html.ts';
import { type Lang, messages } from './i18n.ts';
import { page } from './layout.ts';

/** Form paths, shared with the routes. */
export const PERSONAL_ACTIONS = {
  options: '/timetables/personal/options',
  rotate: '/timetables/personal/rotate',
  revokeUrl: '/timetables/personal/revoke-url',
  delete: '/timetables/personal/delete',
  signOut: '/timetables/personal/sign-out',
  signOutOthers: '/timetables/personal/sign-out-others',
} as const;

const words = messages({
  ru: {
    heading: 'Управление подпиской',
    rotateHeading: 'Новый адрес ленты',
    rotateLead:
      'Если адрес ленты попал к посторонним, получите новый: все прежние адреса перестанут работать сразу, и календари, подписанные на них, нужно будет подписать заново по новому адресу. Все другие браузеры выйдут из подписки; этот останется.',
    urlsHeading: 'Адреса ленты',
    urlsLead:
      'Эти адреса сейчас работают. Вход на странице не отнимает адрес у календаря: здесь видно, кто и когда читал каждый адрес. Отзовите тот, который больше не нужен или попал к посторонним.',
    pageUrl: 'Адрес, показанный выше',
    otherUrl: 'Другой адрес',
    readBy: 'Последнее чтение:',
    notRead: 'ещё не читали',
    revokeConfirm: 'Да, отозвать этот адрес',
    stopsCalendar: (client: string, page: boolean) =>
      `${client}, который читает этот адрес, перестанет обновляться: подпишите его заново по ${page ? 'новому адресу' : 'адресу, показанному выше'}.`,
    stopsOther: (page: boolean) =>
      `Программа, которая читает этот адрес, перестанет получать расписание: подпишите её заново по ${page ? 'новому адресу' : 'адресу, показанному выше'}.`,
    revoke: 'Отозвать',
    pageUrlNote: 'Вместо него на странице появится новый адрес.',
    rotate: 'Получить новый адрес',
    signOutHeading: 'Входы в браузерах',
    signOutLead: 'Подписка и её адрес продолжат работать; браузер просто забудет вход.',
    othersLead:
      'Если вы входили на чужом компьютере и не вышли, выйдите на всех других устройствах: останется только этот браузер.',
    signOut: 'Выйти на этом устройстве',
    signOutOthers: 'Выйти на всех других устройствах',
    deleteHeading: 'Удалить подписку',
    deleteLead:
      'Лента перестанет работать, университетские данные для входа будут удалены, а подключённые календари — Google и CalDAV (Яндекс, iCloud и другие) — перестанут обновляться (уже внесённые занятия в них останутся). Чаты Telegram, подписанные на это расписание, перестанут получать сообщения.',
    confirm: 'Да, удалить подписку навсегда',
    delete: 'Удалить подписку',
  },
  en: {
    heading: 'Manage the subscription',
    rotateHeading: 'New feed URL',
    rotateLead:
      'If the feed URL reached someone it should not have, get a new one: every earlier URL stops working at once, and calendars subscribed to them must be subscribed again with the new URL. Every other browser is signed out; this one stays signed in.',
    urlsHeading: 'Feed URLs',
    urlsLead:
      'These URLs work now. Signing in on the page never takes a URL from a calendar: here you see what read each URL and when. Revoke one you no longer need or that reached someone else.',
    pageUrl: 'The URL shown above',
    otherUrl: 'Another URL',
    readBy: 'Last read by',
    notRead: 'not read yet',
    revokeConfirm: 'Yes, revoke this URL',
    stopsCalendar: (client: string, page: boolean) =>
      `${client}, which reads this URL, stops being updated: subscribe it again with ${page ? 'the new URL' : 'the URL shown above'}.`,
    stopsOther: (page: boolean) =>
      `The app that reads this URL stops getting the timetable: subscribe it again with ${page ? 'the new URL' : 'the URL shown above'}.`,
    revoke: 'Revoke',
    pageUrlNote: 'The page then shows a new URL instead.',
    rotate: 'Get a new URL',
    signOutHeading: 'Signed-in browsers',
    signOutLead: 'The subscription and its URL keep working; this browser only forgets the sign-in.',
    othersLead:
      'If you signed in on someone else’s computer and did not sign out, sign out on every other device: only this browser stays signed in.',
    signOut: 'Sign out on this device',
    signOutOthers: 'Sign out on every other device',
    deleteHeading: 'Delete the subscription',
    deleteLead:
      'The feed stops working, your university credential is erased, and connected calendars — Google and CalDAV (Yandex, iCloud and others) — stop being updated (the classes already in them stay). Telegram chats subscribed to this timetable stop getting messages.',
    confirm: 'Yes, delete the subscription for good',
    delete: 'Delete the subscription',
  },
});

const notices = messages({
  ru: {
    rotated: 'Готово: у ленты новый адрес, прежние больше не работают. Подпишите календари заново по новому адресу.',
    'url-revoked': 'Адрес отозван: календарь, читавший его, больше не получит расписание.',
    'page-url-revoked': 'Адрес отозван; на странице теперь новый адрес. Подпишите календари заново по нему.',
    'confirm-revoke': 'Чтобы отозвать адрес, отметьте флажок подтверждения рядом с ним.',
    'url-gone': 'Этого адреса уже нет: его отозвали раньше.',
    options: 'Настройки сохранены: подписанные календари получат их при следующем обновлении.',
    'options-cleared': 'Настройки сброшены: лента снова полная.',
    'confirm-delete': 'Чтобы удалить подписку, отметьте флажок подтверждения.',
    deleted: 'Подписка удалена, данные для входа стёрты.',
    'signed-out': 'Вы вышли на этом устройстве.',
    'signed-out-others': 'Готово: все другие браузеры вышли, вход остался только здесь.',
    'signed-out-elsewhere':
      'Вход в этом браузере завершён с другого устройства (или истёк за давностью) — войдите снова ниже.',
  },
  en: {
    rotated:
      'Done: the feed has a new URL, and the earlier ones no longer work. Subscribe your calendars again with the new URL.',
    'url-revoked': 'URL revoked: the calendar that read it gets no more timetable from it.',
    'page-url-revoked': 'URL revoked; the page shows a new URL now. Subscribe your calendars again with it.',
    'confirm-revoke': 'To revoke a URL, tick the confirmation box beside it.',
    'url-gone': 'That URL is gone already: it was revoked before.',
    options: 'Options saved: subscribed calendars get them at their next update.',
    'options-cleared': 'Options reset: the feed is whole again.',
    'confirm-delete': 'To delete the subscription, tick the confirmation box.',
    deleted: 'The subscription is deleted and your credential erased.',
    'signed-out': 'You are signed out on this device.',
    'signed-out-others': 'Done: every other browser is signed out; only this one stays signed in.',
    'signed-out-elsewhere':
      'This browser was signed out from another device (or the sign-in expired): sign in again below.',
  },
});

/** The `?done=` words the personal routes redirect with. */
export type PersonalDone = keyof ReturnType<typeof notices>;

/** The `?done=` words of the options form, whose message it shows itself. */
const OPTIONS_DONE: ReadonlySet<string> = new Set(['options', 'options-cleared']);

/** The `?done=` word shown in the sign-out card, where its redirect's anchor opens the page. */
const SIGN_OUT_DONE = 'signed-out-others';

/**
 * The message of a `?done=` word in a redirect from the personal routes, other than the options form's and the
 * sign-out card's; empty for anything else.
 */
export function personalNotice(lang: Lang, done: unknown): Html {
  return typeof done === 'string' && (OPTIONS_DONE.has(done) || done === SIGN_OUT_DONE) ? '' : doneNotice(lang, done);
}

/** The message of the options form's `?done=` word (options saved or reset), shown in that form; else empty. */
export function optionsNotice(lang: Lang, done: unknown): Html {
  return typeof done === 'string' && OPTIONS_DONE.has(done) ? doneNotice(lang, done) : '';
}

function doneNotice(lang: Lang, done: unknown): Html {
  const all = notices(lang);
  if (typeof done !== 'string' || !Object.hasOwn(all, done)) return '';
  const error = done === 'confirm-delete' || done === 'confirm-revoke' || done === 'url-gone';
  // Signed out elsewhere is neither a success nor a mistake of this browser: a plain notice.
  const tone = error ? ' error' : done === 'signed-out-elsewhere' ? '' : ' ok';
  return html`<p class="notice${tone}" role="status">${all[done as PersonalDone]}</p>`;
}

export interface PersonalManageView {
  lang: Lang;
  subscription: Subscription;
  /** The live feed URLs, the page's own first (subscription-store.ts `feedUrls`). */
  urls?: readonly FeedUrlView[];
  /** The service's zone, for the times URLs were read. */
  timezone?: string;
  /** The request's `done` query parameter: the outcome of the last action, shown on top. */
  done?: unknown;
  /** How many browsers are signed in to the subscription, this one included. */
  browsers?: number;
}

/** The controls, one card each; every form works without script. */
export function personalManageSection(view: PersonalManageView): Html {
  const w = words(view.lang);
  return html`<section class="manage" aria-labelledby="manage-heading">
<h2 id="manage-heading">${w.heading}</h2>
!${personalNotice(view.lang, view.done)}
!${view.urls === undefined ? '' : feedUrlsCard(view, view.urls)}
<div class="card" id="rotate">
<h3>${w.rotateHeading}</h3>
<p class="muted">${w.rotateLead}</p>
<form method="post" action="${PERSONAL_ACTIONS.rotate}"><button type="submit" class="secondary">${w.rotate}</button></form>
</div>
<div class="card" id="sign-out">
<h3>${w.signOutHeading}</h3>
!${view.done === SIGN_OUT_DONE ? doneNotice(view.lang, view.done) : ''}
!${view.browsers === undefined ? '' : html`<p>${browsersText(view.lang, view.browsers)}</p>`}
<p class="muted">${w.signOutLead}</p>
<form method="post" action="${PERSONAL_ACTIONS.signOut}"><button type="submit" class="secondary">${w.signOut}</button></form>
<p class="muted">${w.othersLead}</p>
<form method="post" action="${PERSONAL_ACTIONS.signOutOthers}"><button type="submit" class="secondary">${w.signOutOthers}</button></form>
</div>
<div class="card" id="delete">
<h3>${w.deleteHeading}</h3>
<p class="muted">${w.deleteLead}</p>
<form method="post" action="${PERSONAL_ACTIONS.delete}">
<p><label class="check"><input type="checkbox" name="confirm" value="yes" required> ${w.confirm}</label></p>
<button type="submit" class="danger">${w.delete}</button>
</form>
</div>
</section>`;
}

/** «Вход выполнен в 3 браузерах» / "Signed in on 3 browsers", this one included. */
function browsersText(lang: Lang, count: number): string {
  if (count <= 1) return lang === 'ru' ? 'Вход выполнен только в этом браузере.' : 'Signed in on this browser only.';
  if (lang === 'en') return `Signed in on ${count} browsers, this one included.`;
  // The prepositional case: «в 21 браузере», «в 3 браузерах», «в 11 браузерах».
  const singular = count % 10 === 1 && count % 100 !== 11;
  return `Вход выполнен в ${count} ${singular ? 'браузере' : 'браузерах'}, считая этот.`;
}

const clientNames = messages<Record<FeedClient, string>>({
  ru: {
    google: 'Google Календарь',
    apple: 'Календарь Apple',
    outlook: 'Outlook',
    thunderbird: 'Thunderbird',
    yandex: 'Яндекс Календарь',
    davx5: 'DAVx⁵ / ICSx⁵',
    browser: 'браузер',
    other: 'другая программа',
  },
  en: {
    google: 'Google Calendar',
    apple: 'Apple Calendar',
    outlook: 'Outlook',
    thunderbird: 'Thunderbird',
    yandex: 'Yandex Calendar',
    davx5: 'DAVx⁵ / ICSx⁵',
    browser: 'a browser',
    other: 'another app',
  },
});

/** The list of live feed URLs: which is the page's, when and by what each was last read, and a revoke form each. */
function feedUrlsCard(view: PersonalManageView, urls: readonly FeedUrlView[]): Html {
  const w = words(view.lang);
  const names = clientNames(view.lang);
  const when = (at: number) =>
    new Intl.DateTimeFormat(view.lang === 'ru' ? 'ru-RU' : 'en-GB', {
      dateStyle: 'medium',
      timeStyle: 'short',
      timeZone: view.timezone ?? 'UTC',
    }).format(new Date(at));
  const items = urls.map((url) => {
    const client = url.read && Object.hasOwn(names, url.read.client) ? names[url.read.client as FeedClient] : '';
    const read = url.read ? html`${w.readBy} ${client}, ${when(url.read.at)}` : html`${w.notRead}`;
    return html`<li class="feed-url" data-url-key="${url.key}">
<p><strong>${url.shown ? w.pageUrl : w.otherUrl}</strong>&nbsp;<code class="url-id">…${url.key.slice(0, 6)}</code><br><span class="muted">!${read}</span></p>
<form method="post" action="${PERSONAL_ACTIONS.revokeUrl}">
<input type="hidden" name="url" value="${url.key}">
!${revokeWarning(view, url)}
<label class="check"><input type="checkbox" name="confirm" value="yes" required> ${w.revokeConfirm}</label>
!${url.page && url.shown ? html`<span class="muted">${w.pageUrlNote}</span>` : ''}
<button type="submit" class="secondary">${w.revoke}</button>
</form>
</li>`;
  });
  return html`<div class="card" id="feed-urls">
<h3>${w.urlsHeading}</h3>
<p class="muted">${w.urlsLead}</p>
<ul class="feed-urls">!${items.join('')}</ul>
</div>`;
}

/**
 * What revoking `url` stops, said before its confirmation: a calendar (or another app) that has read it stops
 * being updated and must be subscribed again. A URL nobody read, or only a browser, needs no warning.
 */
function revokeWarning(view: PersonalManageView, url: FeedUrlView): Html {
  const client = url.read?.client;
  if (client === undefined || client === 'browser') return '';
  const w = words(view.lang);
  const names = clientNames(view.lang);
  const text =
    client !== 'other' && Object.hasOwn(names, client)
      ? w.stopsCalendar(names[client as FeedClient], url.page)
      : w.stopsOther(url.page);
  return html`<p class="notice" data-revoke-warning>${text}</p>`;
}

const refused = messages({
  ru: { title: 'Настройки не сохранены', back: 'Вернуться к настройкам' },
  en: { title: 'Options not saved', back: 'Back to the options' },
});

/**
 * The answer to options that fail validation: why (in the page's language), and the way back to the form,
 * `back` keeping the values typed so that the form shows them again with the reason beside the field.
 */
export function optionsRefusedPage(view: { lang: Lang; url: string; reasons: readonly string[]; back: string }): Html {
  const w = refused(view.lang);
  return page({
    lang: view.lang,
    url: view.url,
    title: w.title,
    body: html`<h1>${w.title}</h1>
!${view.reasons.map((reason) => html`<p class="notice error" role="alert">${reason}</p>`)}
<p><a class="button secondary" href="${view.back}">${w.back}</a></p>`,
  });
}
