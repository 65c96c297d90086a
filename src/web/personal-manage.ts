/**
 * The owner's controls on the personal page: a new feed URL (every old one stops, other devices are signed
 * out), signing out of this browser, and deleting the subscription (a ticked box confirms it, no script
 * needed). The feed options the plain feed URL serves are saved from the page's one options form
 * (options-form.ts). The forms post to http/personal-routes.ts, which answers with a redirect back here and a
 * `?done=` word that {@link personalNotice} (or {@link optionsNotice}, in the options form) turns into a message.
 */
import type { Subscription } from '../store/subscription-store.ts';
import { type Html, html } from './html.ts';
import { type Lang, messages } from './i18n.ts';
import { page } from './layout.ts';

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

/** The `?done=` words of the options form, whose message it shows itself. */
const OPTIONS_DONE: ReadonlySet<string> = new Set(['options', 'options-cleared']);

/**
 * The message of a `?done=` word in a redirect from the personal routes, other than the options form's; empty
 * for anything else.
 */
export function personalNotice(lang: Lang, done: unknown): Html {
  return typeof done === 'string' && OPTIONS_DONE.has(done) ? '' : doneNotice(lang, done);
}

/** The message of the options form's `?done=` word (options saved or reset), shown in that form; else empty. */
export function optionsNotice(lang: Lang, done: unknown): Html {
  return typeof done === 'string' && OPTIONS_DONE.has(done) ? doneNotice(lang, done) : '';
}

function doneNotice(lang: Lang, done: unknown): Html {
  const all = notices(lang);
  if (typeof done !== 'string' || !Object.hasOwn(all, done)) return '';
  const error = done === 'confirm-delete';
  return html`<p class="notice${error ? ' error' : ' ok'}" role="status">${all[done as PersonalDone]}</p>`;
}

export interface PersonalManageView {
  lang: Lang;
  subscription: Subscription;
  /** The request's `done` query parameter: the outcome of the last action, shown on top. */
  done?: unknown;
}

/** The controls, one card each; every form works without script. */
export function personalManageSection(view: PersonalManageView): Html {
  const w = words(view.lang);
  return html`<section class="manage" aria-labelledby="manage-heading">
<h2 id="manage-heading">${w.heading}</h2>
!${personalNotice(view.lang, view.done)}
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
