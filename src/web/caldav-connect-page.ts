/**
 * The page that connects a CalDAV calendar (Yandex Calendar, iCloud, Nextcloud, Fastmail, any CalDAV server) to
 * a timetable: the calendars as links (a chosen one opens its form, so the page works without script under the
 * strict CSP), then the form with the provider's own steps to make an app password. On an error the form comes
 * back with what was typed, except the password, and the reason at its top. A server that makes no calendar for
 * us answers with the account's calendars to pick from.
 *
 * The feed options chosen on the timetable's page (subgroup, hidden kinds, reminder, title) come along: said in
 * one line at the top with a link back to change them, carried by every provider's link and by the form's hidden
 * fields. Options that do not fit the timetable are said there instead, as an error, with that link focused.
 */
import type { OptionField } from '../serving/errors.ts';
import type { CalendarChoice } from '../subscriptions/errors.ts';
import { type Html, html } from './html.ts';
import { type Lang, messages } from './i18n.ts';
import { page } from './layout.ts';
import { refusedOptionsList } from './push-options-line.ts';

/** The providers the page knows, in the order it shows them. */
export const CALDAV_PRESETS = ['yandex', 'icloud', 'nextcloud', 'fastmail', 'other'] as const;
export type CalDavPreset = (typeof CALDAV_PRESETS)[number];

/** True for one of {@link CALDAV_PRESETS}. */
export function isCaldavPreset(value: unknown): value is CalDavPreset {
  return typeof value === 'string' && (CALDAV_PRESETS as readonly string[]).includes(value);
}

/** The server each fixed preset connects to; Nextcloud and other servers ask for theirs. */
export const PRESET_SERVERS: Readonly<Record<CalDavPreset, string | undefined>> = {
  yandex: 'https://caldav.yandex.ru',
  icloud: 'https://caldav.icloud.com',
  fastmail: 'https://caldav.fastmail.com/',
  nextcloud: undefined,
  other: undefined,
};

/**
 * The server URL of a Nextcloud address as people know it (`https://cloud.example.ru`, maybe with `/index.php`
 * or a path below): its DAV root `/remote.php/dav`.
 */
export function nextcloudDavUrl(address: string): string {
  const text = address.trim();
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `https://${text}`;
  const at = withScheme.indexOf('/remote.php/');
  if (at >= 0) return `${withScheme.slice(0, at)}/remote.php/dav`;
  const base = withScheme.replace(/\/index\.php(\/.*)?$/, '').replace(/\/+$/, '');
  return `${base}/remote.php/dav`;
}

const words = messages({
  ru: {
    title: 'Отправлять в календарь сразу',
    lead: (name: string) =>
      `Сервис сам будет записывать занятия «${name}» в ваш календарь и менять их, как только меняется расписание: переносы видны через минуту-другую, а не когда календарь сам перечитает ссылку: Google — раз в 12–24 часа, iPhone — не чаще раза в 15 минут.`,
    how: 'Для этого нужен логин и отдельный пароль приложения (не основной пароль от аккаунта). Мы проверим его на сервере календаря и будем хранить зашифрованным; отключить можно в любой момент.',
    choose: 'Где ваш календарь?',
    presets: {
      yandex: 'Яндекс Календарь',
      icloud: 'iCloud (iPhone, Mac)',
      nextcloud: 'Nextcloud',
      fastmail: 'Fastmail',
      other: 'Другой CalDAV-сервер',
    },
    steps: {
      yandex: [
        'Откройте Яндекс ID → «Безопасность» → «Пароли приложений» (ссылка выше).',
        'Выберите «Календарь CalDAV», назовите пароль, например «Расписание», и нажмите «Создать».',
        'Скопируйте показанный пароль и вставьте его ниже. Логин — ваш логин Яндекса (например, ivan.petrov).',
      ],
      icloud: [
        'Откройте аккаунт Apple (ссылка выше) и войдите со своим Apple ID (нужна двухфакторная аутентификация).',
        'Перейдите в «Вход и безопасность» → «Пароли приложений» и создайте пароль, назвав его, например, «Расписание».',
        'Скопируйте пароль (вида xxxx-xxxx-xxxx-xxxx) и вставьте его ниже. Логин — адрес почты вашего Apple ID.',
      ],
      nextcloud: [
        'В Nextcloud откройте «Настройки» → «Безопасность».',
        'Внизу, в «Устройства и сеансы», введите название, например «Расписание», и нажмите «Создать новый пароль приложения».',
        'Скопируйте имя пользователя и пароль и вставьте их ниже, а адрес — тот, по которому вы открываете Nextcloud.',
      ],
      fastmail: [
        'В Fastmail откройте Settings → Privacy & Security → App passwords (Настройки → Конфиденциальность и безопасность → Пароли приложений).',
        'Нажмите «New app password», выберите доступ к календарям (CalDAV) и создайте пароль.',
        'Логин — ваш адрес Fastmail; пароль вставьте ниже.',
      ],
      other: [
        'Узнайте адрес CalDAV вашего сервера (например, https://dav.example.ru/) — у администратора или в справке сервиса.',
        'Если сервер умеет пароли приложений, создайте отдельный пароль для расписания.',
      ],
    },
    appPassword: 'Как получить пароль приложения',
    accountLink: {
      yandex: 'Открыть пароли приложений Яндекс ID',
      icloud: 'Открыть аккаунт Apple (account.apple.com)',
    } as Partial<Record<CalDavPreset, string>>,
    optionsFollow: 'В календарь попадёт:',
    optionsChange: 'Изменить',
    optionsRefused: 'Эти настройки календаря не подходят к расписанию:',
    optionsFix: 'Изменить настройки на странице расписания',
    server: 'Сервер',
    nextcloudAddress: 'Адрес вашего Nextcloud',
    nextcloudHint: 'Тот, что в адресной строке, например https://cloud.example.ru',
    otherAddress: 'Адрес CalDAV-сервера',
    otherHint: 'Адрес сервера или календаря, начиная с https://',
    username: {
      yandex: 'Логин Яндекса',
      icloud: 'Apple ID (адрес почты)',
      nextcloud: 'Имя пользователя',
      fastmail: 'Адрес почты Fastmail',
      other: 'Логин',
    },
    password: 'Пароль приложения',
    passwordHint: 'Пароль сохраним, только когда сервер календаря его примет.',
    passwordAgain: 'Введите пароль приложения ещё раз: после отказа поле очищается, пароль нигде не сохранён.',
    advanced: 'Записывать в календарь, который у меня уже есть',
    advancedHint:
      'Обычно сервис создаёт отдельный календарь с названием расписания. Чтобы писать в свой календарь, вставьте его адрес: ваши события в нём никто не тронет, а при отключении уйдут только занятия.',
    calendarUrl: 'Адрес календаря (необязательно)',
    pick: 'Выберите календарь',
    pickHint:
      'Сервер не разрешил создать отдельный календарь. Выберите, куда записывать занятия, и введите пароль приложения ещё раз: ваши события в этом календаре останутся нетронутыми.',
    noCalendars: 'На сервере не нашлось календарей для событий. Создайте календарь там и подключите снова.',
    submit: 'Подключить',
    back: 'К расписанию',
    unavailable: 'Отправка в CalDAV-календари на этом сервисе не настроена.',
  },
  en: {
    title: 'Push to your calendar right away',
    lead: (name: string) =>
      `The service will write the classes of “${name}” into your calendar itself and change them as soon as the timetable changes: moves show within a minute or two, not when the calendar re-reads a link by itself: Google every 12–24 hours, an iPhone every 15 minutes at most.`,
    how: 'This needs a login and a separate app password (not your account’s main password). We check it with the calendar server and keep it encrypted; you can disconnect at any time.',
    choose: 'Where is your calendar?',
    presets: {
      yandex: 'Yandex Calendar',
      icloud: 'iCloud (iPhone, Mac)',
      nextcloud: 'Nextcloud',
      fastmail: 'Fastmail',
      other: 'Another CalDAV server',
    },
    steps: {
      yandex: [
        'Open Yandex ID → “Security” → “App passwords” (the link above).',
        'Choose “Calendar CalDAV”, name the password, for example “Timetable”, and click “Create”.',
        'Copy the password shown and paste it below. The login is your Yandex login (for example, ivan.petrov).',
      ],
      icloud: [
        'Open your Apple Account (the link above) and sign in with your Apple ID (two-factor authentication is needed).',
        'Go to “Sign-In and Security” → “App-Specific Passwords” and create one, named for example “Timetable”.',
        'Copy the password (like xxxx-xxxx-xxxx-xxxx) and paste it below. The login is your Apple ID’s email address.',
      ],
      nextcloud: [
        'In Nextcloud open “Settings” → “Security”.',
        'At the bottom, under “Devices & sessions”, enter a name, for example “Timetable”, and click “Create new app password”.',
        'Copy the username and password below, and the address you open Nextcloud at.',
      ],
      fastmail: [
        'In Fastmail open Settings → Privacy & Security → App passwords.',
        'Click “New app password”, choose access to calendars (CalDAV) and create the password.',
        'The login is your Fastmail address; paste the password below.',
      ],
      other: [
        'Find your server’s CalDAV address (for example, https://dav.example.org/): ask its administrator or see its help.',
        'If the server offers app passwords, make a separate one for the timetable.',
      ],
    },
    appPassword: 'How to get an app password',
    accountLink: {
      yandex: 'Open Yandex ID’s app passwords',
      icloud: 'Open your Apple Account (account.apple.com)',
    } as Partial<Record<CalDavPreset, string>>,
    optionsFollow: 'The calendar gets:',
    optionsChange: 'Change',
    optionsRefused: 'These calendar options do not fit the timetable:',
    optionsFix: 'Change the options on the timetable’s page',
    server: 'Server',
    nextcloudAddress: 'Your Nextcloud address',
    nextcloudHint: 'The one in the address bar, for example https://cloud.example.org',
    otherAddress: 'CalDAV server address',
    otherHint: 'The address of the server or of a calendar, starting with https://',
    username: {
      yandex: 'Yandex login',
      icloud: 'Apple ID (email address)',
      nextcloud: 'Username',
      fastmail: 'Fastmail address',
      other: 'Login',
    },
    password: 'App password',
    passwordHint: 'We store the password only once the calendar server accepts it.',
    passwordAgain:
      'Enter the app password again: after a refusal the field is emptied, and the password is stored nowhere.',
    advanced: 'Write into a calendar I already have',
    advancedHint:
      'Usually the service makes a separate calendar named after the timetable. To write into a calendar of yours, paste its address: your own events in it are never touched, and disconnecting removes the classes only.',
    calendarUrl: 'Calendar address (optional)',
    pick: 'Pick a calendar',
    pickHint:
      'The server did not let us make a separate calendar. Choose where the classes go and enter the app password again: your own events in that calendar stay untouched.',
    noCalendars: 'The server has no calendar for events. Make one there and connect again.',
    submit: 'Connect',
    back: 'Back to the timetable',
    unavailable: 'Pushing to CalDAV calendars is not set up on this service.',
  },
});

/** What the form had when it comes back. Never the password. */
export interface CalDavFormValues {
  address?: string | undefined;
  username?: string | undefined;
  calendarUrl?: string | undefined;
}

/** What the connect page shows. */
export interface CalDavConnectView {
  lang: Lang;
  /** The request's path and query, for the language switch. */
  url: string;
  source: string;
  /** The timetable's name. */
  name: string;
  /** The timetable's page with the options chosen, to go back to. */
  backUrl: string;
  preset: CalDavPreset | undefined;
  values?: CalDavFormValues | undefined;
  /** Why the last attempt failed, in the page's language. */
  error?: string | undefined;
  /** The field the error is about, to mark it. */
  errorField?: 'address' | 'username' | 'password' | 'calendarUrl' | undefined;
  /** The account's calendars, when the server made none for us. */
  calendars?: readonly CalendarChoice[] | undefined;
  /** The feed options chosen, as typed: the form's hidden fields and every link of the page carry them. */
  optionFields: Readonly<Record<string, string | readonly string[]>>;
  /** What the calendar will follow, in one line («Подгруппа 2, без лекций»). */
  optionsLine: string;
  /** Why each refused option does not fit, by field; the options line is not shown then. */
  optionsRefused?: Partial<Record<OptionField, string>> | undefined;
  /** The timetable's page with these options, at its options form: where they are changed. */
  optionsUrl: string;
  /** False without a `SECRET_KEY`: the page only says so. */
  available: boolean;
}

/** The connect page. */
export function caldavConnectPage(view: CalDavConnectView): Html {
  const w = words(view.lang);
  const body = !view.available
    ? html`<p class="notice error" role="alert">${w.unavailable}</p>`
    : html`<p>${w.how}</p>
<section class="card" aria-labelledby="caldav-choose">
<h2 id="caldav-choose">${w.choose}</h2>
<ul class="caldav-presets">
!${CALDAV_PRESETS.map((preset) => {
        const current = preset === view.preset;
        return html`<li><a class="button${current ? '' : ' secondary'}" href="${presetHref(view, preset)}" data-preset="${preset}"!${current ? ' aria-current="true"' : ''}>${w.presets[preset]}</a></li>`;
      })}
</ul>
</section>
!${view.preset === undefined ? '' : connectForm(view, view.preset)}`;
  return page({
    lang: view.lang,
    url: view.url,
    title: w.title,
    private: true,
    body: html`<h1>${w.title}</h1>
<p class="lead">${w.lead(view.name)}</p>
!${optionsBlock(view)}
!${body}
<p><a href="${view.backUrl}" data-timetable-link>${w.back}</a></p>`,
  });
}

function presetHref(view: CalDavConnectView, preset: CalDavPreset): string {
  const query = new URLSearchParams({ source: view.source, preset });
  for (const [name, value] of Object.entries(view.optionFields))
    for (const item of typeof value === 'string' ? [value] : value) query.append(name, item);
  if (view.lang === 'en') query.set('lang', 'en');
  return `/caldav/connect?${query.toString()}#caldav-form`;
}

/**
 * What the calendar will follow, with the way to change it; refused options instead, as an alert whose link is
 * focused (a form sent back with them opens there, in the first screen).
 */
function optionsBlock(view: CalDavConnectView): Html {
  const w = words(view.lang);
  const refused = (Object.entries(view.optionsRefused ?? {}) as [OptionField, string][]).map(([field, why]) => ({
    field,
    why,
  }));
  if (refused.length === 0)
    return html`<p class="options-line" id="caldav-options"><strong>${w.optionsFollow}</strong> <span data-options-line>${view.optionsLine}</span>. <a href="${view.optionsUrl}">${w.optionsChange}</a></p>`;
  return html`<div class="notice error" id="caldav-options-error" role="alert" data-options-refused>
<p>${w.optionsRefused}</p>
!${refusedOptionsList(refused, view.lang)}
<p><a href="${view.optionsUrl}" autofocus>${w.optionsFix}</a></p>
</div>`;
}

/** The options as the form's hidden fields (a repeated field once per value). */
function optionInputs(view: CalDavConnectView): Html {
  return Object.entries(view.optionFields)
    .flatMap(([name, value]) => (typeof value === 'string' ? [value] : value).map((item) => [name, item] as const))
    .map(([name, item]) => html`<input type="hidden" name="${name}" value="${item}">`)
    .join('\n');
}

/** The provider's page where its app passwords are made, opened in a new tab. */
const ACCOUNT_PAGES: Partial<Record<CalDavPreset, string>> = {
  yandex: 'https://id.yandex.ru/security/app-passwords',
  icloud: 'https://account.apple.com/',
};

/** The form of one provider. */
function connectForm(view: CalDavConnectView, preset: CalDavPreset): Html {
  const w = words(view.lang);
  const values = view.values ?? {};
  const refusedField = (field: CalDavConnectView['errorField']) =>
    view.error !== undefined && view.errorField === field;
  const invalid = (field: CalDavConnectView['errorField']) =>
    refusedField(field) ? html` aria-invalid="true" aria-describedby="caldav-error" autofocus` : '';
  // A form sent back never holds the password (it is not kept anywhere): its hint says to type it again.
  const cameBack = view.error !== undefined || view.optionsRefused !== undefined || view.values !== undefined;
  const server = PRESET_SERVERS[preset];
  const address =
    server !== undefined
      ? html`<p class="field"><strong>${w.server}:</strong> <span class="url">${server}</span></p>`
      : html`<div class="field">
<label for="caldav-address">${preset === 'nextcloud' ? w.nextcloudAddress : w.otherAddress}</label>
<input type="url" id="caldav-address" name="address" required maxlength="2048" autocomplete="url" spellcheck="false" inputmode="url" value="${values.address ?? ''}" aria-describedby="caldav-address-hint"!${invalid('address')}>
<p id="caldav-address-hint" class="muted">${preset === 'nextcloud' ? w.nextcloudHint : w.otherHint}</p>
</div>`;
  const picking = view.calendars !== undefined;
  const calendarChoice = picking
    ? calendarPicker(view, values.calendarUrl)
    : html`<details class="caldav-advanced"!${values.calendarUrl ? ' open' : ''}>
<summary>${w.advanced}</summary>
<p class="muted">${w.advancedHint}</p>
<div class="field">
<label for="caldav-calendar-url">${w.calendarUrl}</label>
<input type="url" id="caldav-calendar-url" name="calendarUrl" maxlength="2048" spellcheck="false" inputmode="url" value="${values.calendarUrl ?? ''}"!${invalid('calendarUrl')}>
</div>
</details>`;
  return html`<section class="card" id="caldav-form" aria-labelledby="caldav-form-title">
<h2 id="caldav-form-title">${w.presets[preset]}</h2>
<details class="caldav-steps"!${view.error === undefined || !picking ? ' open' : ''}>
<summary>${w.appPassword}</summary>
!${accountLink(view, preset)}
<ol class="steps">!${w.steps[preset].map((step) => html`<li>${step}</li>`)}</ol>
</details>
<form method="post" action="/caldav/connect" class="caldav-connect">
<input type="hidden" name="source" value="${view.source}">
<input type="hidden" name="preset" value="${preset}">
!${optionInputs(view)}
!${view.error === undefined ? '' : html`<p id="caldav-error" class="notice error" role="alert">${view.error}</p>`}
!${address}
<div class="field">
<label for="caldav-username">${w.username[preset]}</label>
<input type="text" id="caldav-username" name="username" required maxlength="320" autocomplete="username" autocapitalize="none" spellcheck="false" value="${values.username ?? ''}"!${invalid('username')}>
</div>
<div class="field">
<label for="caldav-password">${w.password}</label>
<input type="password" id="caldav-password" name="password" required maxlength="1024" autocomplete="off" spellcheck="false" aria-describedby="!${refusedField('password') ? 'caldav-error ' : ''}caldav-password-hint"!${refusedField('password') ? ' aria-invalid="true" autofocus' : ''}>
<p id="caldav-password-hint" class="muted"!${cameBack ? ' data-password-again' : ''}>${cameBack ? w.passwordAgain : w.passwordHint}</p>
</div>
!${calendarChoice}
<p><button type="submit">${w.submit}</button></p>
</form>
</section>`;
}

/** The link to the provider's page of app passwords, where it has one. */
function accountLink(view: CalDavConnectView, preset: CalDavPreset): Html {
  const href = ACCOUNT_PAGES[preset];
  const label = words(view.lang).accountLink[preset];
  if (href === undefined || label === undefined) return '';
  return html`<p><a class="button secondary" href="${href}" target="_blank" rel="noopener noreferrer" data-account-link>${label}</a></p>`;
}

/** The account's calendars as radio buttons, when the server made none for us. */
function calendarPicker(view: CalDavConnectView, chosen: string | undefined): Html {
  const w = words(view.lang);
  const calendars = view.calendars ?? [];
  if (calendars.length === 0) return html`<p class="notice">${w.noCalendars}</p>`;
  return html`<fieldset class="field">
<legend>${w.pick}</legend>
<p class="muted">${w.pickHint}</p>
!${calendars.map(
    (calendar, index) =>
      html`<label class="check"><input type="radio" name="calendarUrl" value="${calendar.url}" required!${(chosen === undefined ? index === 0 : chosen === calendar.url) ? ' checked' : ''}> ${calendar.displayName || calendar.url}</label>`,
  )}
</fieldset>`;
}
