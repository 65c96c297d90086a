/**
 * The owner's controls on the personal page: the feed options the plain feed URL serves (saved on the
 * subscription), a new feed URL (every old one stops, other devices are signed out), signing out of this browser, and deleting the
 * subscription (a ticked box confirms it, no script needed). The forms post to http/personal-routes.ts, which
 * answers with a redirect back here and a `?done=` word that {@link personalNotice} turns into a message.
 */
import type { Subscription } from '../store/subscription-store.ts';
import type { OptionValues } from '../timetable/event-text.ts';
import { type Html, html } from './html.ts';
import { type Lang, messages } from './i18n.ts';
import { page } from './layout.ts';
import { alarmChoices, alarmText } from './options-form.ts';

/** Form paths, shared with the routes. */
export const PERSONAL_ACTIONS = {
  options: '/timetables/personal/options',
  rotate: '/timetables/personal/rotate',
  delete: '/timetables/personal/delete',
  signOut: '/timetables/personal/sign-out',
} as const;

const words = messages({
  ru: {
    heading: 'Управление подпиской',
    optionsHeading: 'Настройки ленты',
    optionsLead:
      'Сохранённые настройки действуют на адрес ленты без параметров: календари, уже подписанные на него, получат их сами, переподписываться не нужно. Параметры в самом адресе важнее сохранённых. В Google Календарь (прямая отправка) всегда уходит полное расписание.',
    subgroup: 'Подгруппа',
    allSubgroups: 'Все подгруппы',
    hideKinds: 'Скрыть виды занятий',
    alarm: 'Напоминание',
    noAlarm: 'Без напоминания',
    title: 'Название события',
    titleHint: 'Например: {subject} ({kind}), {room}. Пусто — как обычно.',
    save: 'Сохранить настройки',
    clear: 'Сбросить',
    rotateHeading: 'Новый адрес ленты',
    rotateLead:
      'Если адрес ленты попал к посторонним, получите новый: все прежние адреса перестанут работать сразу, календари, подписанные на них, нужно будет подписать заново по новому адресу, а на других устройствах придётся войти снова.',
    rotate: 'Получить новый адрес',
    signOutHeading: 'Выйти на этом устройстве',
    signOutLead: 'Подписка и её адрес продолжат работать; браузер просто забудет вход.',
    signOut: 'Выйти',
    deleteHeading: 'Удалить подписку',
    deleteLead:
      'Лента перестанет работать, университетские данные для входа будут удалены, а подключённые календари Google перестанут обновляться (уже внесённые занятия в них останутся).',
    confirm: 'Да, удалить подписку навсегда',
    delete: 'Удалить подписку',
  },
  en: {
    heading: 'Manage the subscription',
    optionsHeading: 'Feed options',
    optionsLead:
      'Saved options apply to the feed URL without parameters: calendars subscribed to it already get them by themselves, with no need to subscribe again. Parameters in the URL itself win over saved ones. Google Calendar push always gets the whole timetable.',
    subgroup: 'Subgroup',
    allSubgroups: 'All subgroups',
    hideKinds: 'Hide kinds of class',
    alarm: 'Reminder',
    noAlarm: 'No reminder',
    title: 'Event title',
    titleHint: 'For example: {subject} ({kind}), {room}. Empty: as usual.',
    save: 'Save options',
    clear: 'Reset',
    rotateHeading: 'New feed URL',
    rotateLead:
      'If the feed URL reached someone it should not have, get a new one: every earlier URL stops working at once, calendars subscribed to them must be subscribed again with the new URL, and other devices must sign in again.',
    rotate: 'Get a new URL',
    signOutHeading: 'Sign out on this device',
    signOutLead: 'The subscription and its URL keep working; this browser only forgets the sign-in.',
    signOut: 'Sign out',
    deleteHeading: 'Delete the subscription',
    deleteLead:
      'The feed stops working, your university credential is erased, and connected Google calendars stop being updated (the classes already in them stay).',
    confirm: 'Yes, delete the subscription for good',
    delete: 'Delete the subscription',
  },
});

const notices = messages({
  ru: {
    rotated:
      'Готово: у ленты новый адрес, прежние больше не работают. Подпишите календари заново по новому адресу; на других устройствах войдите снова.',
    options: 'Настройки сохранены: подписанные календари получат их при следующем обновлении.',
    'options-cleared': 'Настройки сброшены: лента снова полная.',
    'confirm-delete': 'Чтобы удалить подписку, отметьте флажок подтверждения.',
    deleted: 'Подписка удалена, данные для входа стёрты.',
    'signed-out': 'Вы вышли на этом устройстве.',
  },
  en: {
    rotated:
      'Done: the feed has a new URL, and the earlier ones no longer work. Subscribe your calendars again with the new URL, and sign in again on other devices.',
    options: 'Options saved: subscribed calendars get them at their next update.',
    'options-cleared': 'Options reset: the feed is whole again.',
    'confirm-delete': 'To delete the subscription, tick the confirmation box.',
    deleted: 'The subscription is deleted and your credential erased.',
    'signed-out': 'You are signed out on this device.',
  },
});

/** The `?done=` words the personal routes redirect with. */
export type PersonalDone = keyof ReturnType<typeof notices>;

/** The message of a `?done=` word in a redirect from the personal routes; empty for anything else. */
export function personalNotice(lang: Lang, done: unknown): Html {
  const all = notices(lang);
  if (typeof done !== 'string' || !Object.hasOwn(all, done)) return '';
  const error = done === 'confirm-delete';
  return html`<p class="notice${error ? ' error' : ' ok'}" role="status">${all[done as PersonalDone]}</p>`;
}

export interface PersonalManageView {
  lang: Lang;
  subscription: Subscription;
  /**
   * The subgroups and kinds of class this timetable has (`ctx.snapshots.optionValues(source)`), offered as
   * choices; without them the subgroup and kinds are typed in.
   */
  optionValues?: OptionValues | undefined;
  /** The request's `done` query parameter: the outcome of the last action, shown on top. */
  done?: unknown;
}

/** The controls, one card each; every form works without script. */
export function personalManageSection(view: PersonalManageView): Html {
  const w = words(view.lang);
  const saved = view.subscription.feedOptions ?? {};
  return html`<section class="manage" aria-labelledby="manage-heading">
<h2 id="manage-heading">${w.heading}</h2>
!${personalNotice(view.lang, view.done)}
<div class="card" id="options">
<h3>${w.optionsHeading}</h3>
<p class="muted">${w.optionsLead}</p>
<form method="post" action="${PERSONAL_ACTIONS.options}">
!${subgroupField(view, saved.subgroup)}
!${kindsField(view, saved.excludeKinds ?? [])}
<div class="field">
<label for="manage-alarm">${w.alarm}</label>
<select id="manage-alarm" name="alarm">
<option value="">${w.noAlarm}</option>
!${alarmChoices(saved.alarmMinutes).map((n) => html`<option value="${n}"${n === saved.alarmMinutes ? ' selected' : ''}>${alarmText(n, view.lang)}</option>`)}
</select>
</div>
<div class="field">
<label for="manage-title">${w.title}</label>
<input type="text" id="manage-title" name="title" maxlength="200" value="${saved.titleTemplate ?? ''}" aria-describedby="manage-title-hint">
<p class="muted" id="manage-title-hint">${w.titleHint}</p>
</div>
<div class="row">
<button type="submit" name="action" value="save">${w.save}</button>
<button type="submit" name="action" value="clear" class="secondary">${w.clear}</button>
</div>
</form>
</div>
<div class="card" id="rotate">
<h3>${w.rotateHeading}</h3>
<p class="muted">${w.rotateLead}</p>
<form method="post" action="${PERSONAL_ACTIONS.rotate}"><button type="submit" class="secondary">${w.rotate}</button></form>
</div>
<div class="card" id="sign-out">
<h3>${w.signOutHeading}</h3>
<p class="muted">${w.signOutLead}</p>
<form method="post" action="${PERSONAL_ACTIONS.signOut}"><button type="submit" class="secondary">${w.signOut}</button></form>
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

function subgroupField(view: PersonalManageView, saved: number | undefined): Html {
  const w = words(view.lang);
  const subgroups = view.optionValues?.subgroups;
  if (subgroups === undefined) {
    return html`<div class="field"><label for="manage-subgroup">${w.subgroup}</label>
<input type="number" id="manage-subgroup" name="subgroup" min="1" max="99" value="${saved ?? ''}"></div>`;
  }
  if (subgroups.length === 0 && saved === undefined) return '';
  const choices = saved === undefined || subgroups.includes(saved) ? subgroups : [...subgroups, saved];
  return html`<div class="field"><label for="manage-subgroup">${w.subgroup}</label>
<select id="manage-subgroup" name="subgroup">
<option value="">${w.allSubgroups}</option>
!${choices.map((n) => html`<option value="${n}"${n === saved ? ' selected' : ''}>${n}</option>`)}
</select></div>`;
}

function kindsField(view: PersonalManageView, saved: readonly string[]): Html {
  const w = words(view.lang);
  const kinds = view.optionValues?.kinds;
  if (kinds === undefined) {
    return html`<div class="field"><label for="manage-exclude">${w.hideKinds}</label>
<input type="text" id="manage-exclude" name="exclude" value="${saved.join(', ')}"></div>`;
  }
  const choices = [...new Set([...kinds, ...saved])];
  if (choices.length === 0) return '';
  return html`<fieldset class="field"><legend>${w.hideKinds}</legend>
!${choices.map((kind) => html`<label class="check"><input type="checkbox" name="exclude" value="${kind}"${saved.includes(kind) ? ' checked' : ''}> ${kind}</label>`)}
</fieldset>`;
}

const refused = messages({
  ru: { title: 'Настройки не сохранены', back: 'Вернуться к расписанию' },
  en: { title: 'Options not saved', back: 'Back to the timetable' },
});

/** The answer to options that fail validation: why (the validator's words), and the way back. */
export function optionsRefusedPage(view: { lang: Lang; url: string; reason: string }): Html {
  const w = refused(view.lang);
  return page({
    lang: view.lang,
    url: view.url,
    title: w.title,
    body: html`<h1>${w.title}</h1>
<p class="notice error" role="alert">${view.reason}</p>
<p><a class="button secondary" href="/timetables/personal#options">${w.back}</a></p>`,
  });
}
