/**
 * «Уведомления об изменениях» on a timetable's page: the ways this deployment can tell a person that a class
 * moved, each only where it is on: MAX first (where students are now told things by their universities), then
 * Telegram, each a link to its bot's start route; then e-mail, a small form that asks for an address and sends a
 * mail to confirm it (nothing else comes before that).
 *
 * Like the calendar menu it is a `<details>` (it opens without script and under the strict CSP), closed on a
 * phone, where the classes should follow the two actions closely, and open elsewhere. The messenger links carry
 * `data-link` and the form's hidden option fields `data-notify-option`, so that the page's script rewrites them
 * from the preview endpoint's answer as the options change; without script they hold the options the page was
 * rendered with.
 */
import type { FeedLinks } from './feed-links.ts';
import { type Html, html } from './html.ts';
import { type Lang, messages } from './i18n.ts';

const words = messages({
  ru: {
    action: 'Уведомления об изменениях',
    intro: 'Напишем, если занятие перенесут, отменят, добавят или заменят преподавателя.',
    max: 'Уведомления в MAX',
    telegram: 'Уведомления в Telegram',
    email: 'Уведомления на почту',
    subscribe: 'Подписаться',
    digest: 'Раз в день, сводкой',
    digestAt: 'в',
    emailNote: 'Пришлём письмо для подтверждения; без него ничего не придёт.',
  },
  en: {
    action: 'Change notifications',
    intro: 'We write when a class is moved, cancelled, added or gets another teacher.',
    max: 'Notifications in MAX',
    telegram: 'Notifications in Telegram',
    email: 'Notifications by e-mail',
    subscribe: 'Subscribe',
    digest: 'Once a day, as a digest',
    digestAt: 'at',
    emailNote: 'We send a mail to confirm the address; nothing comes without it.',
  },
});

type Words = ReturnType<typeof words>;

/** The e-mail form's view: where it posts the source and the options a notification reads. */
export interface EmailFormView {
  /** The page's source (`group:4242`, `personal:…`). */
  source: string;
  /** The page's subgroup, '' when none (feed-links.ts `notifyFields`). */
  subgroup: string;
  /** The page's hidden kinds joined by commas, '' when none. */
  exclude: string;
  /** When the daily digest goes out (`MAIL_DIGEST_TIME`, `HH:MM`). */
  digestTime: string;
}

/** What the block shows. */
export interface NotifyView {
  lang: Lang;
  links: Pick<FeedLinks, 'max' | 'telegram'>;
  /** The e-mail form, where e-mail is on (`SMTP_URL`, `MAIL_FROM` and `SECRET_KEY`). */
  email?: EmailFormView | undefined;
  /** Open (a computer) or closed (a phone). */
  open: boolean;
}

/** The block, or nothing when the deployment has no way to notify. */
export function notifyBlock(view: NotifyView): Html {
  const w = words(view.lang);
  const ways = [
    messengerLink(view.links.max, 'max', w.max),
    messengerLink(view.links.telegram, 'telegram', w.telegram),
  ].filter((way) => way !== '');
  if (ways.length === 0 && view.email === undefined) return '';
  const list = ways.length === 0 ? '' : html`<ul class="notify-ways">!${ways}</ul>`;
  return html`<section class="notify" aria-labelledby="notify-action">
<details class="notify-menu" data-notify-menu!${view.open ? ' open' : ''}>
<summary class="button secondary" id="notify-action">${w.action}</summary>
<div class="notify-body card">
<p>${w.intro}</p>
!${list}
!${view.email === undefined ? '' : emailForm(view.email, view.lang, w)}
</div>
</details>
</section>`;
}

function messengerLink(href: string | undefined, channel: 'max' | 'telegram', label: string): Html {
  if (href === undefined) return '';
  return html`<li class="notify-way"><a class="button secondary" href="${href}" data-link="${channel}" data-channel="${channel}">${label}</a></li>`;
}

/** `POST /email/subscribe`: the address, the digest choice, and the page's source, options and language hidden. */
function emailForm(email: EmailFormView, lang: Lang, w: Words): Html {
  return html`<form method="post" action="/email/subscribe" class="email-subscribe" data-channel="email">
<input type="hidden" name="source" value="${email.source}">
<input type="hidden" name="subgroup" value="${email.subgroup}" data-notify-option="subgroup">
<input type="hidden" name="exclude" value="${email.exclude}" data-notify-option="exclude">
<input type="hidden" name="lang" value="${lang}">
<label for="notify-email">${w.email}</label>
<div class="email-row"><input type="email" class="email-input" id="notify-email" name="email" autocomplete="email" required aria-describedby="notify-email-note"><button type="submit">${w.subscribe}</button></div>
<label class="check" for="notify-digest"><input type="checkbox" id="notify-digest" name="digest" value="1"> ${w.digest} (${w.digestAt} ${email.digestTime})</label>
<p class="hint muted" id="notify-email-note">${w.emailNote}</p>
</form>`;
}
