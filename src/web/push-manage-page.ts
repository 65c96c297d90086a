/**
 * The frame of a push target's pages, the same for every calendar kind: the manage page (the calendar's state,
 * what it follows and the options form to change that, its last push, the changes waiting, a copyable manage
 * link, Disconnect behind a ticked confirmation), the page after Disconnect, and the problem pages. A kind passes
 * in its own words and rows (google-manage-page.ts, caldav-manage-page.ts); the target arrives as a plain view
 * model, so that no page depends on how a kind stores its targets.
 */
import type { OptionField } from '../serving/errors.ts';
import { type Html, html } from './html.ts';
import { type Lang, messages } from './i18n.ts';
import { page } from './layout.ts';
import { type OptionsFormView, optionsForm } from './options-form.ts';
import { refusedOptionsList } from './push-options-line.ts';

/** What a target's status means to its page, whatever the kind calls it. */
export type PushState = 'active' | 'paused' | 'needs-credential' | 'calendar-deleted';

/** Changes not pushed yet, by kind of write. */
export interface PushCounts {
  insert: number;
  patch: number;
  delete: number;
}

/** A push target as its pages show it. */
export interface PushTargetModel {
  id: string;
  calendarName: string;
  calendarOwned: boolean;
  /** The status as stored (`needs-consent`, `needs-password`, …): kept in `data-status` for scripts and tests. */
  status: string;
  state: PushState;
  statusReason?: string | undefined;
  pausedUntil?: number | undefined;
  lastPush?: { at: number; inserted: number; patched: number; deleted: number } | undefined;
  /** The last error, shown while the target is not active; undefined where the kind does not show it. */
  lastError?: string | undefined;
}

/** What the manage page shows. */
export interface PushManageView {
  lang: Lang;
  /** The request's path, for the language switch. */
  url: string;
  target: PushTargetModel;
  /** Null before the timetable's first publication. */
  pendingChanges: PushCounts | null;
  pushQueued: boolean;
  /** The link that opens this page in another browser (it carries the manage token). */
  manageLink: string;
  /** Where "connect again" starts. */
  connectUrl: string;
  /** The timetable's page with the options the calendar follows (what it shows is what the calendar gets). */
  timetableUrl: string;
  /** The university's time zone (times are shown in it). */
  timeZone: string;
  /** What the calendar follows, and the form that changes it. */
  options: PushOptionsView;
  /** The Disconnect form was sent without its confirmation ticked. */
  disconnectUnconfirmed?: boolean | undefined;
}

/** The manage page's options: the line of what the calendar follows and the form (options-form.ts) to change it. */
export interface PushOptionsView {
  /**
   * What the calendar follows (push-options-line.ts): «Подгруппа 2, без лекций, …», or «Вся группа» (a teacher's
   * or a personal timetable: «Всё расписание»).
   */
  line: string;
  /** The options form, less its language and how it is sent (the frame posts it to `<base>/options`). */
  form: Omit<OptionsFormView, 'lang' | 'action' | 'post' | 'save' | 'previewPath'>;
  /** Just saved: what changed, one line per option («Подгруппа: 2 → 1»); none when nothing did. */
  saved?: { changes: readonly string[] } | undefined;
}

/** One row of the state's facts. */
export interface PushFact {
  term: string;
  value: string;
  /** Shown as a URL (wraps anywhere). */
  url?: boolean;
}

/** What a kind puts into its manage page, in the page's language. */
export interface PushKindPage {
  title: string;
  lead: string;
  /** The kind's rows after the calendar's name (a server, a login). */
  facts: readonly PushFact[];
  paused: (until: string) => string;
  pausedNoDate: string;
  needsCredential: string;
  calendarDeleted: string;
  /** The states that offer "connect again". */
  reconnect: readonly PushState[];
  /** The kind's own sections between the state and the manage link (a new password's form). */
  sections?: Html;
  disconnectLead: string;
  /** The label of "delete the calendar too", offered for a calendar the service made; none to always keep it. */
  deleteCalendar?: string | undefined;
}

const words = messages({
  ru: {
    state: 'Состояние',
    calendar: 'Календарь',
    status: 'Статус',
    active: 'Работает',
    why: 'Причина',
    lastPush: 'Последняя отправка',
    never: 'пока не было',
    pushCounts: (i: number, p: number, d: number) => `добавлено ${i}, изменено ${p}, удалено ${d}`,
    lastError: 'Последняя ошибка',
    pending: 'Ждут отправки',
    pendingCounts: (c: PushCounts) => `добавить ${c.insert}, изменить ${c.patch}, удалить ${c.delete}`,
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
    disconnect: 'Отключить',
    confirmDisconnect: 'Да, отключить этот календарь',
    confirmMissing: 'Чтобы отключить календарь, отметьте флажок подтверждения.',
    follows: 'В календаре',
    saveOptions: 'Сохранить настройки',
    optionsSaved: 'Настройки сохранены — календарь обновится в течение минуты.',
    optionsSame: 'Настройки не изменились.',
    timetable: 'К расписанию',
    disconnectedTitle: 'Календарь отключён',
    home: 'На главную',
  },
  en: {
    state: 'State',
    calendar: 'Calendar',
    status: 'Status',
    active: 'Working',
    why: 'Reason',
    lastPush: 'Last push',
    never: 'not yet',
    pushCounts: (i: number, p: number, d: number) => `${i} added, ${p} changed, ${d} deleted`,
    lastError: 'Last error',
    pending: 'Waiting to be pushed',
    pendingCounts: (c: PushCounts) => `${c.insert} to add, ${c.patch} to change, ${c.delete} to delete`,
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
    disconnect: 'Disconnect',
    confirmDisconnect: 'Yes, disconnect this calendar',
    confirmMissing: 'To disconnect the calendar, tick the confirmation box.',
    follows: 'In the calendar',
    saveOptions: 'Save options',
    optionsSaved: 'Options saved: the calendar is updated within a minute.',
    optionsSame: 'The options did not change.',
    timetable: 'Back to the timetable',
    disconnectedTitle: 'Calendar disconnected',
    home: 'Home',
  },
});

/** The manage page of one target, with its kind's words and rows; forms post under `base` (its page's path). */
export function pushManagePage(view: PushManageView, base: string, kind: PushKindPage): Html {
  const w = words(view.lang);
  const { target } = view;
  const stopped = target.state !== 'active';
  return page({
    lang: view.lang,
    url: view.url,
    title: target.calendarName,
    private: true,
    body: html`<h1>${kind.title}</h1>
<p>${kind.lead}</p>
<p><a href="${view.timetableUrl}" data-timetable-link>${w.timetable}</a></p>
<section class="card" aria-labelledby="state">
<h2 id="state">${w.state}</h2>
<dl class="facts">
<dt>${w.calendar}</dt><dd>${target.calendarName}</dd>
!${kind.facts.map((fact) => html`<dt>${fact.term}</dt><dd!${fact.url ? ' class="url"' : ''}>${fact.value}</dd>`).join('\n')}
<dt>${w.follows}</dt><dd data-options-line>${view.options.line}</dd>
<dt>${w.status}</dt><dd data-status="${target.status}">${statusText(view, kind)}</dd>
!${target.statusReason === undefined || !stopped ? '' : html`<dt>${w.why}</dt><dd>${target.statusReason}</dd>`}
<dt>${w.lastPush}</dt><dd data-last-push>${lastPushText(view)}</dd>
!${target.lastError === undefined || !stopped ? '' : html`<dt>${w.lastError}</dt><dd>${target.lastError}</dd>`}
<dt>${w.pending}</dt><dd data-pending>${pendingText(view)}</dd>
</dl>
!${kind.reconnect.includes(target.state) ? html`<p><a class="button" href="${view.connectUrl}">${w.reconnect}</a></p>` : ''}
</section>
!${optionsSection(view, base)}
!${kind.sections ?? ''}
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
<p class="muted">${kind.disconnectLead}</p>
<form method="post" action="${base}/disconnect">
!${view.disconnectUnconfirmed ? html`<p class="notice error" role="alert" id="disconnect-error">${w.confirmMissing}</p>` : ''}
!${target.calendarOwned && kind.deleteCalendar !== undefined ? html`<p><label class="check"><input type="checkbox" name="deleteCalendar" value="yes"> ${kind.deleteCalendar}</label></p>` : ''}
<p><label class="check"><input type="checkbox" name="confirm" value="yes" required!${view.disconnectUnconfirmed ? html` aria-invalid="true" aria-describedby="disconnect-error" autofocus` : ''}> ${w.confirmDisconnect}</label></p>
<button type="submit" class="danger">${w.disconnect}</button>
</form>
</section>`,
  });
}

/**
 * The options form, posted to `<base>/options`: after a save (the page the post redirects to) a notice says so,
 * what changed (only that) and what is waiting to be pushed, focused so that it opens in the first screen; after a
 * refusal (the post's own answer) each bad field says why, its value as typed, the first one focused. Neither the
 * action nor the redirect has `#options`: browsers skip `autofocus` on a page opened at a fragment.
 */
function optionsSection(view: PushManageView, base: string): Html {
  const w = words(view.lang);
  const saved = view.options.saved;
  const changes = saved?.changes ?? [];
  const notice =
    saved === undefined
      ? ''
      : html`<div class="notice ok" id="options-saved" role="status" tabindex="-1" autofocus data-options-saved-push>
!${
          changes.length === 0
            ? html`<p>${w.optionsSame}</p>`
            : html`<p>${w.optionsSaved}</p>
<ul>!${changes.map((line) => html`<li>${line}</li>`).join('')}</ul>`
        }
<p>${w.pending}: ${pendingText(view)}</p>
</div>`;
  return optionsForm({
    ...view.options.form,
    lang: view.lang,
    action: base,
    post: { action: `${base}/options`, label: w.saveOptions, notice },
  });
}

function statusText(view: PushManageView, kind: PushKindPage): string {
  const { target } = view;
  if (target.state === 'paused')
    return target.pausedUntil === undefined ? kind.pausedNoDate : kind.paused(when(view, target.pausedUntil));
  if (target.state === 'needs-credential') return kind.needsCredential;
  if (target.state === 'calendar-deleted') return kind.calendarDeleted;
  return words(view.lang).active;
}

function lastPushText(view: PushManageView): string {
  const w = words(view.lang);
  const push = view.target.lastPush;
  if (push === undefined) return w.never;
  return `${when(view, push.at)}: ${w.pushCounts(push.inserted, push.patched, push.deleted)}`;
}

function pendingText(view: PushManageView): string {
  const w = words(view.lang);
  const changes = view.pendingChanges;
  const queued = view.pushQueued ? ` ${w.queued}` : '';
  if (changes === null) return `${w.notPublished}.${queued}`;
  if (changes.insert + changes.patch + changes.delete === 0) return `${w.nothingPending}.${queued}`;
  return `${w.pendingCounts(changes)}.${queued}`;
}

/** A time in the university's time zone, as people there read it. */
function when(view: Pick<PushManageView, 'lang' | 'timeZone'>, at: number): string {
  return new Intl.DateTimeFormat(view.lang === 'ru' ? 'ru-RU' : 'en-GB', {
    dateStyle: 'medium',
    timeStyle: 'short',
    timeZone: view.timeZone,
  }).format(at);
}

/** What a disconnection did to the calendar: deleted it (or all the service wrote in it), kept it, or failed. */
export type DisconnectOutcome = 'deleted' | 'kept' | 'failed';

/** What the page after Disconnect shows. */
export interface PushDisconnectedView {
  lang: Lang;
  url: string;
  calendarName: string;
  outcome: DisconnectOutcome;
}

/** A kind's words for each outcome of a disconnection, given the calendar's name, in each language. */
export type DisconnectedWords = (lang: Lang) => Record<DisconnectOutcome, (calendarName: string) => string>;

/** The page after Disconnect: what it did, in the kind's words. */
export function pushDisconnectedPage(view: PushDisconnectedView, kindWords: DisconnectedWords): Html {
  const w = words(view.lang);
  const failed = view.outcome === 'failed';
  return page({
    lang: view.lang,
    url: view.url,
    title: w.disconnectedTitle,
    body: html`<h1>${w.disconnectedTitle}</h1>
<p class="notice${failed ? ' error' : ''}" role="status">${kindWords(view.lang)[view.outcome](view.calendarName)}</p>
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
  },
  en: {
    'no-access': [
      'No access to this connection',
      'This browser cannot manage this calendar. Open the manage link you kept after connecting.',
    ],
    'bad-link': ['Link does not fit', 'The manage link is wrong or outdated (a new connection gets a new one).'],
    unknown: ['Connection not found', 'There is no such connection: perhaps the calendar was disconnected already.'],
  },
});

/** What can go wrong on the manage pages of every kind. */
export type PushProblem = keyof ReturnType<typeof problems>;

/** A problem's title and text. */
export type ProblemWords = readonly string[];

/** A kind's problem page: its own problems (`own`, in each language) and those every kind shares. */
export function kindProblemPage<P extends string>(
  own: (lang: Lang) => Record<P, ProblemWords>,
): (view: { lang: Lang; url: string; problem: P | PushProblem; detail?: string | undefined }) => Html {
  return ({ lang, url, problem, detail }) => {
    const all: Record<P | PushProblem, ProblemWords> = { ...problems(lang), ...own(lang) };
    return pushProblemPage({ lang, url, words: all[problem], ...(detail ? { detail } : {}) });
  };
}

const refusedWords = messages({
  ru: {
    title: 'Настройки не подходят',
    lead: 'Календарь не подключён: эти настройки не подходят к расписанию.',
    back: 'Изменить настройки на странице расписания',
  },
  en: {
    title: 'Options do not fit',
    lead: 'The calendar is not connected: these options do not fit the timetable.',
    back: 'Change the options on the timetable’s page',
  },
});

/** The page for push options that do not fit: each refused field with why, and the way back to change them. */
export function pushOptionsRefusedPage(view: {
  lang: Lang;
  url: string;
  refused: readonly { field: OptionField; why: string }[];
  backUrl: string;
}): Html {
  const w = refusedWords(view.lang);
  return page({
    lang: view.lang,
    url: view.url,
    title: w.title,
    private: true,
    body: html`<h1>${w.title}</h1>
<div class="notice error" role="alert" data-options-refused>
<p>${w.lead}</p>
!${refusedOptionsList(view.refused, view.lang)}
</div>
<p><a class="button" href="${view.backUrl}" autofocus>${w.back}</a></p>`,
  });
}

/** A friendly page for a problem; `detail` (the service's own words) may add why. */
export function pushProblemPage(view: { lang: Lang; url: string; words: ProblemWords; detail?: string }): Html {
  const [title = '', text = ''] = view.words;
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
