/**
 * The way into a calendar on a timetable's page: one «Добавить в календарь» control (a `<details>` summary, so
 * that it opens without script and under the strict CSP) holding the feed URL with a copy button and the steps
 * of each calendar, each in its own `<details>`: the one that fits the reader's device (web/platform.ts) first
 * and open, the others one tap away. Each calendar says honestly how often it re-reads a subscribed feed, and
 * push to Google is offered as the fast way where this server has it. The QR code of the feed URL is only
 * shown where the page is not already on a phone.
 *
 * «Уведомления об изменениях» follows the calendar menu (notify-block.ts): MAX, Telegram and e-mail, each where
 * this deployment has it.
 *
 * The elements the options change carry `data-link` / `data-qr`, so that the script can rewrite them in place
 * from the preview endpoint's answer (a link may appear in several calendars' steps; all are rewritten). The push
 * links (Google, CalDAV) are among them: a calendar connected from here follows the options chosen, as a feed does.
 */
import type { FeedLinks } from './feed-links.ts';
import { type Html, html } from './html.ts';
import { type Lang, messages } from './i18n.ts';
import { type EmailFormView, notifyBlock } from './notify-block.ts';
import { isPhone, type Platform } from './platform.ts';

const words = messages({
  ru: {
    action: 'Добавить в календарь',
    intro: 'Подпишитесь один раз: дальше календарь сам забирает изменения расписания.',
    options: 'Подгруппа, напоминания и названия занятий — в настройках; адрес меняется вместе с ними.',
    feedUrl: 'Адрес календаря (ICS)',
    copy: 'Скопировать',
    copied: 'Скопировано',
    choose: 'Как добавить в ваш календарь:',
    copyFirst: 'Скопируйте адрес календаря выше.',
    refresh: 'Обновление:',
    appleTitle: 'iPhone, iPad и Mac (Календарь Apple)',
    appleOpen: 'Открыть в Календаре',
    appleSteps: [
      'Нажмите «Открыть в Календаре»: откроется приложение Календарь.',
      'Нажмите «Подписаться», затем «Добавить» (на Mac — «OK»).',
    ],
    appleRefresh:
      'так часто, как задано в настройках. На iPhone и iPad: Настройки → Приложения → Календарь → Учётные записи → Загрузка данных → «Выборка», вплоть до каждых 15 минут (в iOS 17 и раньше: Настройки → Календарь → Учётные записи). На Mac — в окне подписки, пункт «Автообновление», вплоть до каждых 5 минут.',
    androidTitle: 'Android',
    androidCannot: 'Приложение Google Календарь на телефоне не умеет добавлять календарь по адресу. Что работает:',
    androidPush: 'быстрее всего: изменения приходят в Google Календарь сразу и видны в приложении на телефоне.',
    androidComputer:
      'Откройте эту ссылку на компьютере, войдя в тот же аккаунт Google: календарь появится и в телефоне. Если его не видно, включите его в приложении: Настройки → название календаря → Синхронизация.',
    androidApp:
      'Или приложение ICSx⁵ (Google Play, F-Droid): оно подписывается на адрес календаря прямо в телефоне, и занятия видны в любом календаре на нём.',
    androidRefresh: 'через Google — раз в 12–24 часа; отправка в Google — сразу.',
    yandexTitle: 'Яндекс Календарь',
    yandexSteps: [
      'Откройте calendar.yandex.ru и слева нажмите «+ Новый календарь» → «Подписаться на календарь».',
      'Вставьте адрес календаря и подтвердите.',
    ],
    yandexOpen: 'Открыть Яндекс Календарь',
    yandexPhone:
      'На телефоне подписаться по адресу можно только в полной версии сайта: откройте calendar.yandex.ru в браузере и выберите в его меню «Версия для ПК» — или сделайте это на компьютере.',
    yandexPushFirst: 'На телефоне проще всего отправка сразу: календарь сделает сервис.',
    yandexRefresh: 'Яндекс перечитывает такие календари несколько раз в сутки.',
    googleTitle: 'Google Календарь',
    google: 'Добавить в Google Календарь',
    googleSteps: [
      'Откройте ссылку на компьютере и нажмите «Добавить». В приложении на телефоне по адресу добавить нельзя.',
    ],
    googleRefresh:
      'Google перечитывает календарь, добавленный по ссылке, раз в 12–24 часа: переносы появляются там с опозданием.',
    push: 'Отправлять в Google Календарь сразу',
    pushNote: 'Быстрее: отправка в Google Календарь записывает изменения сразу, как только они появились в расписании.',
    outlookTitle: 'Outlook',
    outlookSteps: [
      'На outlook.com откройте Календарь → «Добавить календарь» → «Подписаться из Интернета».',
      'Вставьте адрес, задайте имя календаря и нажмите «Импорт».',
    ],
    outlookRefresh: 'Outlook перечитывает такие календари раз в несколько часов.',
    thunderbirdTitle: 'Thunderbird',
    thunderbirdSteps: [
      'В Календаре нажмите «Новый календарь» → «В сети».',
      'Вставьте адрес в поле «Адрес», нажмите «Найти календари», затем «Подписаться».',
    ],
    thunderbirdRefresh: 'как задано в свойствах календаря в Thunderbird; по умолчанию каждые 30 минут.',
    qr: 'Наведите камеру телефона, чтобы открыть адрес календаря.',
    caldav: 'Отправлять в календарь сразу',
    caldavNote:
      'Быстрее: сервис сам записывает изменения в ваш календарь через несколько минут. Нужен пароль приложения.',
    caldavOther: 'Nextcloud, Fastmail или другой CalDAV-календарь:',
  },
  en: {
    action: 'Add to calendar',
    intro: 'Subscribe once: from then on your calendar fetches the timetable’s changes by itself.',
    options: 'Subgroup, reminders and class titles are in the settings; the address changes with them.',
    feedUrl: 'Calendar address (ICS)',
    copy: 'Copy',
    copied: 'Copied',
    choose: 'How to add it to your calendar:',
    copyFirst: 'Copy the calendar address above.',
    refresh: 'Updates:',
    appleTitle: 'iPhone, iPad and Mac (Apple Calendar)',
    appleOpen: 'Open in Calendar',
    appleSteps: ['Tap “Open in Calendar”: the Calendar app opens.', 'Tap “Subscribe”, then “Add” (on a Mac, “OK”).'],
    appleRefresh:
      'as often as set in Settings. On iPhone and iPad: Settings → Apps → Calendar → Accounts → Fetch New Data → “Fetch”, down to every 15 minutes (on iOS 17 and earlier: Settings → Calendar → Accounts). On a Mac, in the subscription window, “Auto-refresh”, down to every 5 minutes.',
    androidTitle: 'Android',
    androidCannot: 'The Google Calendar app on a phone cannot add a calendar by its address. What works:',
    androidPush: 'the fastest: changes reach Google Calendar at once and show in the app on the phone.',
    androidComputer:
      'Open this link on a computer, signed in to the same Google account: the calendar shows on the phone too. If it does not, turn it on in the app: Settings → the calendar’s name → Sync.',
    androidApp:
      'Or the ICSx⁵ app (Google Play, F-Droid): it subscribes to the calendar address on the phone itself, and the classes show in any calendar there.',
    androidRefresh: 'through Google, every 12–24 hours; pushing to Google, at once.',
    yandexTitle: 'Yandex Calendar',
    yandexSteps: [
      'Open calendar.yandex.ru and, on the left, choose “+ New calendar” → “Subscribe to calendar”.',
      'Paste the calendar address and confirm.',
    ],
    yandexOpen: 'Open Yandex Calendar',
    yandexPhone:
      'On a phone, subscribing by address works on the full site only: open calendar.yandex.ru in the browser and choose “Desktop site” in its menu, or do it on a computer.',
    yandexPushFirst: 'On a phone, pushing right away is the simplest: the service makes the calendar.',
    yandexRefresh: 'Yandex re-reads such calendars several times a day.',
    googleTitle: 'Google Calendar',
    google: 'Add to Google Calendar',
    googleSteps: ['Open the link on a computer and click “Add”. The phone app cannot add a calendar by address.'],
    googleRefresh: 'Google re-reads a calendar added by URL every 12–24 hours: moves reach it late.',
    push: 'Push to Google Calendar right away',
    pushNote: 'Faster: pushing to Google Calendar writes every change as soon as the timetable has it.',
    outlookTitle: 'Outlook',
    outlookSteps: [
      'On outlook.com open Calendar → “Add calendar” → “Subscribe from web”.',
      'Paste the address, name the calendar and click “Import”.',
    ],
    outlookRefresh: 'Outlook re-reads such calendars every few hours.',
    thunderbirdTitle: 'Thunderbird',
    thunderbirdSteps: [
      'In Calendar choose “New Calendar” → “On the Network”.',
      'Paste the address into “Location”, click “Find Calendars”, then “Subscribe”.',
    ],
    thunderbirdRefresh: 'as set in the calendar’s properties in Thunderbird; every 30 minutes by default.',
    qr: "Point your phone's camera here to open the calendar address.",
    caldav: 'Push to your calendar right away',
    caldavNote: 'Faster: the service writes every change into your calendar within minutes. It needs an app password.',
    caldavOther: 'Nextcloud, Fastmail or another CalDAV calendar:',
  },
});

type Words = ReturnType<typeof words>;

/** The calendars the block has steps for. */
export type CalendarId = 'apple' | 'android' | 'yandex' | 'google' | 'outlook' | 'thunderbird';

/** The calendars in the order a reader on each platform is likely to want them; the first one is opened. */
export const CALENDAR_ORDER: Record<Platform, readonly CalendarId[]> = {
  ios: ['apple', 'yandex', 'google', 'outlook', 'thunderbird', 'android'],
  android: ['android', 'yandex', 'google', 'outlook', 'thunderbird', 'apple'],
  mac: ['apple', 'google', 'yandex', 'outlook', 'thunderbird', 'android'],
  windows: ['google', 'yandex', 'outlook', 'thunderbird', 'apple', 'android'],
  linux: ['google', 'yandex', 'thunderbird', 'outlook', 'apple', 'android'],
  other: ['google', 'yandex', 'apple', 'outlook', 'thunderbird', 'android'],
};

/** What the block shows. */
export interface SubscribeView {
  lang: Lang;
  links: FeedLinks;
  /** The QR code of the feed URL (SVG made by the qrcode library from our own URL). */
  qrSvg: Html;
  /** Where the page is read: orders the calendars, and leaves the QR code out on a phone. */
  platform: Platform;
  /** The in-page link to the feed options, when the page has them. */
  optionsHref?: string | undefined;
  /** The e-mail form of the notifications, where e-mail is on. */
  email?: EmailFormView | undefined;
}

/**
 * The subscribe section: closed on a phone (its summary is the page's first control, the classes follow it),
 * open elsewhere (beside the classes, with the QR code to scan).
 */
export function subscribeBlock(view: SubscribeView): Html {
  const w = words(view.lang);
  const phone = isPhone(view.platform);
  const ways = CALENDAR_ORDER[view.platform].map((id, index) => calendarWay(id, index === 0, view, w));
  const qr = phone
    ? ''
    : html`<figure class="qr"><div class="qr-code" data-qr>!${view.qrSvg}</div><figcaption class="muted">${w.qr}</figcaption></figure>`;
  const options =
    view.optionsHref === undefined ? '' : html`<p class="hint"><a href="${view.optionsHref}">${w.options}</a></p>`;
  return html`<section class="subscribe" aria-labelledby="calendar-action" data-platform="${view.platform}">
<details class="calendar-menu" data-calendar-menu!${phone ? '' : ' open'}>
<summary class="button" id="calendar-action" data-calendar-action>${w.action}</summary>
<div class="calendar-body card">
<p>${w.intro}</p>
<label for="feed-url">${w.feedUrl}</label>
<div class="copy-row"><input type="text" id="feed-url" class="url" readonly value="${view.links.feedUrl}" data-link="feedUrl"><button type="button" class="secondary" data-copy="#feed-url" data-copied="${w.copied}" hidden>${w.copy}</button></div>
!${options}
<p class="ways-heading">${w.choose}</p>
!${ways}
!${view.links.caldav === undefined ? '' : html`<p class="caldav-other">${w.caldavOther} <a href="${view.links.caldav}" data-caldav="any" data-link="caldav">${w.caldav}</a></p>`}
!${qr}
</div>
</details>
</section>
!${notifyBlock({ lang: view.lang, links: view.links, email: view.email, open: !phone })}`;
}

/** One calendar's steps, in a `<details>` of its own. */
function calendarWay(id: CalendarId, open: boolean, view: SubscribeView, w: Words): Html {
  const { title, body } = WAYS[id](view, w);
  return html`<details class="calendar-way" data-calendar="${id}"!${open ? ' open' : ''}>
<summary>${title}</summary>
<div class="way-body">!${body}</div>
</details>`;
}

const steps = (items: readonly string[]): Html =>
  html`<ol class="steps">!${items.map((item) => html`<li>${item}</li>`)}</ol>`;
const refresh = (w: Words, text: string): Html => html`<p class="refresh"><strong>${w.refresh}</strong> ${text}</p>`;
const googleLink = (view: SubscribeView, w: Words): Html =>
  html`<a class="button" href="${view.links.google}" data-link="google" target="_blank" rel="noopener noreferrer">${w.google}</a>`;
/** The CalDAV connect page with a provider chosen, at its form, after the subscription steps (push is faster). */
const caldavLink = (view: SubscribeView, w: Words, preset: 'yandex' | 'icloud'): Html => {
  const key = preset === 'yandex' ? 'caldavYandex' : 'caldavIcloud';
  const href = view.links[key];
  return href === undefined
    ? ''
    : html`<p>${w.caldavNote}</p><p><a class="button secondary" href="${href}" data-caldav="${preset}" data-link="${key}">${w.caldav}</a></p>`;
};
const pushLink = (pushUrl: string, w: Words): Html =>
  html`<a class="button secondary" href="${pushUrl}" data-link="push">${w.push}</a>`;

const WAYS: Record<CalendarId, (view: SubscribeView, w: Words) => { title: string; body: Html }> = {
  apple: (view, w) => ({
    title: w.appleTitle,
    body: html`<p><a class="button" href="${view.links.webcal}" data-link="webcal">${w.appleOpen}</a></p>
!${steps(w.appleSteps)}!${refresh(w, w.appleRefresh)}
!${caldavLink(view, w, 'icloud')}`,
  }),
  android: (view, w) => ({
    title: w.androidTitle,
    body: html`<p>${w.androidCannot}</p>
<ul class="options-list">
!${view.links.push === undefined ? '' : html`<li>!${pushLink(view.links.push, w)} — ${w.androidPush}</li>`}
<li>!${googleLink(view, w)} ${w.androidComputer}</li>
<li>${w.androidApp}</li>
</ul>
!${refresh(w, w.androidRefresh)}`,
  }),
  yandex: (view, w) => {
    const open = html`<p><a class="button secondary" href="https://calendar.yandex.ru/" target="_blank" rel="noopener noreferrer">${w.yandexOpen}</a></p>`;
    const subscribe = html`!${steps([w.copyFirst, ...w.yandexSteps])}!${refresh(w, w.yandexRefresh)}`;
    // Yandex's app and mobile site make no calendar by address: on a phone push leads, the full site follows.
    if (isPhone(view.platform))
      return {
        title: w.yandexTitle,
        body: html`!${view.links.caldavYandex === undefined ? '' : html`<p>${w.yandexPushFirst}</p>!${caldavLink(view, w, 'yandex')}`}
<p class="hint" data-yandex-phone>${w.yandexPhone}</p>
!${open}!${subscribe}`,
      };
    return {
      title: w.yandexTitle,
      body: html`!${open}!${subscribe}
!${caldavLink(view, w, 'yandex')}`,
    };
  },
  google: (view, w) => ({
    title: w.googleTitle,
    body: html`<p>!${googleLink(view, w)}</p>
!${steps(w.googleSteps)}!${refresh(w, w.googleRefresh)}
!${view.links.push === undefined ? '' : html`<p>${w.pushNote}</p><p>!${pushLink(view.links.push, w)}</p>`}`,
  }),
  outlook: (_view, w) => ({
    title: w.outlookTitle,
    body: html`!${steps([w.copyFirst, ...w.outlookSteps])}!${refresh(w, w.outlookRefresh)}`,
  }),
  thunderbird: (_view, w) => ({
    title: w.thunderbirdTitle,
    body: html`!${steps([w.copyFirst, ...w.thunderbirdSteps])}!${refresh(w, w.thunderbirdRefresh)}`,
  }),
};
