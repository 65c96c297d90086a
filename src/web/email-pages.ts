/**
 * The pages of e-mail notifications (http/email-routes.ts), Russian first: the sign-up form again with what was
 * typed and what to change, «Проверьте почту» after it, the confirmation page (one button: a mail scanner that
 * fetches the link confirms nothing), «Подписка подтверждена», the unsubscribe page (one button) and its answer,
 * and a link that names nothing any more. Each says what to do next. Also the words the routes answer with: why an
 * address or a timetable was refused, and what a sign-up comes with.
 */
import type { MailAddressProblem } from '../lib/mail-address.ts';
import type { Words } from '../lib/words.ts';
import type { NotifyOptions } from '../timetable/notify-change.ts';
import { type Html, html } from './html.ts';
import { type Lang, messages } from './i18n.ts';
import { page } from './layout.ts';

const words = messages({
  ru: {
    formTitle: 'Уведомления на почту',
    formLead: (name: string) => `Пришлём письмо, когда в расписании «${name}» перенесут, отменят или добавят занятие.`,
    email: 'Адрес почты',
    digest: (time: string) => `Раз в день, сводкой (в ${time}), а не письмом на каждое изменение`,
    subscribe: 'Подписаться',
    formNote: 'Сначала придёт письмо со ссылкой для подтверждения: без него ничего больше не придёт.',
    back: 'Вернуться к расписанию',
    sentTitle: 'Проверьте почту',
    sent: (address: string) => `Мы отправили письмо на ${address}.`,
    sentNext:
      'Откройте ссылку из него в течение 48 часов и нажмите «Подтвердить подписку». Письма нет через несколько минут — загляните в папку «Спам».',
    confirmTitle: 'Подтвердите подписку',
    confirmLead: (name: string) => `Присылать на вашу почту изменения расписания «${name}».`,
    confirmButton: 'Подтвердить подписку',
    confirmNotYou: 'Если вы не подписывались — просто закройте страницу: без подтверждения ничего не придёт.',
    confirmedTitle: 'Подписка подтверждена',
    confirmed: (name: string) => `Теперь изменения расписания «${name}» будут приходить на вашу почту.`,
    updated: (name: string) => `Подписка на «${name}» обновлена: письма будут приходить с новыми настройками.`,
    confirmedNext: 'Отписаться можно по ссылке в конце любого письма.',
    open: 'Открыть расписание',
    unsubscribeTitle: 'Отписаться от писем',
    unsubscribeLead: (name: string) => `Больше не присылать изменения расписания «${name}».`,
    unsubscribeButton: 'Отписаться',
    unsubscribedTitle: 'Вы отписались',
    unsubscribed: (name: string) =>
      `Писем об изменениях «${name}» больше не будет. Если это была последняя подписка, мы удалили и ваш адрес.`,
    resubscribe: 'Передумали — подпишитесь снова на странице расписания.',
    goneTitle: 'Этой подписки уже нет',
    gone: 'Вы уже отписались по этой ссылке (или подписались заново, и ссылка в новом письме другая). Писем по ней больше не будет.',
    expiredTitle: 'Ссылка устарела',
    expired:
      'Эта ссылка уже использована или ей больше 48 часов. Если подписка ещё не подтверждена, подпишитесь заново на странице расписания — придёт новое письмо.',
    brokenTitle: 'Ссылка неполная',
    broken: 'Похоже, ссылка скопировалась не целиком. Откройте её прямо из письма или скопируйте полностью.',
    fullTitle: 'Слишком много подписок',
    full: (max: number) =>
      `На этот адрес уже приходят изменения ${max} расписаний — больше нельзя. Отпишитесь от ненужного по ссылке в конце его письма, потом откройте эту ссылку ещё раз.`,
    offTitle: 'Почта не настроена',
    off: 'На этом сервисе уведомления на почту не настроены. Подпишитесь в мессенджере или добавьте расписание в календарь.',
    home: 'На главную',
  },
  en: {
    formTitle: 'Notifications by e-mail',
    formLead: (name: string) => `We write when a class of «${name}» is moved, cancelled or added.`,
    email: 'E-mail address',
    digest: (time: string) => `Once a day, as a digest (at ${time}), not a mail per change`,
    subscribe: 'Subscribe',
    formNote: 'A mail with a confirmation link comes first: nothing else comes without it.',
    back: 'Back to the timetable',
    sentTitle: 'Check your mail',
    sent: (address: string) => `We sent a mail to ${address}.`,
    sentNext:
      'Open its link within 48 hours and press «Confirm». No mail after a few minutes? Look in the spam folder.',
    confirmTitle: 'Confirm the subscription',
    confirmLead: (name: string) => `Send the changes of «${name}» to your mailbox.`,
    confirmButton: 'Confirm the subscription',
    confirmNotYou: 'If you did not subscribe, just close this page: nothing comes without a confirmation.',
    confirmedTitle: 'Subscription confirmed',
    confirmed: (name: string) => `The changes of «${name}» will now come to your mailbox.`,
    updated: (name: string) => `Your subscription to «${name}» is updated: mails follow the new settings.`,
    confirmedNext: 'Every mail ends with a link to unsubscribe.',
    open: 'Open the timetable',
    unsubscribeTitle: 'Unsubscribe',
    unsubscribeLead: (name: string) => `Stop sending the changes of «${name}».`,
    unsubscribeButton: 'Unsubscribe',
    unsubscribedTitle: 'Unsubscribed',
    unsubscribed: (name: string) =>
      `No more mails about «${name}». If it was your last subscription, your address is deleted too.`,
    resubscribe: 'Changed your mind? Subscribe again on the timetable page.',
    goneTitle: 'This subscription is gone',
    gone: 'You have unsubscribed with this link already (or subscribed again: the new mail has another link). No more mails come by it.',
    expiredTitle: 'The link has expired',
    expired:
      'This link was used already or is older than 48 hours. If the subscription is not confirmed yet, subscribe again on the timetable page: a new mail comes.',
    brokenTitle: 'The link is incomplete',
    broken: 'The link seems to have been copied only in part. Open it from the mail, or copy all of it.',
    fullTitle: 'Too many subscriptions',
    full: (max: number) =>
      `This address gets the changes of ${max} timetables already, the most it may. Unsubscribe from one with the link at the end of its mail, then open this link again.`,
    offTitle: 'E-mail is not set up',
    off: 'This service does not send e-mail notifications. Subscribe in a messenger, or add the timetable to your calendar.',
    home: 'Home page',
  },
});

/** What every e-mail page knows. */
interface PageBase {
  lang: Lang;
  /** The request's path and query (the language switch keeps them). */
  url: string;
}

/** The sign-up form, again: what was typed, and what is wrong with it. */
export interface EmailFormView extends PageBase {
  source: string;
  name: string;
  pageUrl: string;
  /** The options the form carries on, as it got them. */
  subgroup: string;
  exclude: string;
  digestTime: string;
  values: { email: string; digest: boolean };
  /** What to change, beside the address field. */
  error?: string | undefined;
}

/** The form with the error and what was typed. */
export function emailFormPage(view: EmailFormView): Html {
  const w = words(view.lang);
  const invalid = view.error === undefined ? '' : ' aria-invalid="true" aria-describedby="email-error" autofocus';
  return page({
    lang: view.lang,
    url: view.url,
    title: w.formTitle,
    private: true,
    body: html`<h1>${w.formTitle}</h1>
<p class="lead">${w.formLead(view.name)}</p>
<form method="post" action="/email/subscribe" class="card email-subscribe">
<input type="hidden" name="source" value="${view.source}">
<input type="hidden" name="subgroup" value="${view.subgroup}">
<input type="hidden" name="exclude" value="${view.exclude}">
<input type="hidden" name="lang" value="${view.lang}">
!${view.error === undefined ? '' : html`<p id="email-error" class="notice error" role="alert">${view.error}</p>`}
<div class="field">
<label for="email-address">${w.email}</label>
<input type="email" id="email-address" name="email" required maxlength="254" autocomplete="email" autocapitalize="none" spellcheck="false" value="${view.values.email}"!${invalid}>
</div>
<label class="check" for="email-digest"><input type="checkbox" id="email-digest" name="digest" value="1"!${view.values.digest ? ' checked' : ''}> ${w.digest(view.digestTime)}</label>
<p class="muted">${w.formNote}</p>
<p><button type="submit">${w.subscribe}</button></p>
</form>
<p><a href="${view.pageUrl}">${w.back}</a></p>`,
  });
}

/** «Проверьте почту»: where the mail went and what to do with it. */
export function emailSentPage(view: PageBase & { address: string; pageUrl: string }): Html {
  const w = words(view.lang);
  return page({
    lang: view.lang,
    url: view.url,
    title: w.sentTitle,
    private: true,
    body: html`<h1>${w.sentTitle}</h1>
<p class="notice ok" role="status">${w.sent(view.address)}</p>
<p>${w.sentNext}</p>
<p><a href="${view.pageUrl}">${w.back}</a></p>`,
  });
}

/** The page of a confirmation link: what it subscribes to, and one button that POSTs to the same URL. */
export function emailConfirmPage(view: PageBase & { action: string; name: string; details: string }): Html {
  const w = words(view.lang);
  return page({
    lang: view.lang,
    url: view.url,
    title: w.confirmTitle,
    private: true,
    body: html`<h1>${w.confirmTitle}</h1>
<p class="lead">${w.confirmLead(view.name)}</p>
!${view.details === '' ? '' : html`<p class="muted">${view.details}</p>`}
<form method="post" action="${view.action}">
<p><button type="submit">${w.confirmButton}</button></p>
</form>
<p class="muted">${w.confirmNotYou}</p>`,
  });
}

/** «Подписка подтверждена», with the timetable's link. */
export function emailConfirmedPage(view: PageBase & { name: string; pageUrl: string; updated: boolean }): Html {
  const w = words(view.lang);
  return page({
    lang: view.lang,
    url: view.url,
    title: w.confirmedTitle,
    private: true,
    body: html`<h1>${w.confirmedTitle}</h1>
<p class="notice ok" role="status">${view.updated ? w.updated(view.name) : w.confirmed(view.name)}</p>
<p>${w.confirmedNext}</p>
<p><a class="button" href="${view.pageUrl}">${w.open}</a></p>`,
  });
}

/** The page of an unsubscribe link: one button that POSTs to the same URL. */
export function emailUnsubscribePage(view: PageBase & { action: string; name: string }): Html {
  const w = words(view.lang);
  return page({
    lang: view.lang,
    url: view.url,
    title: w.unsubscribeTitle,
    private: true,
    body: html`<h1>${w.unsubscribeTitle}</h1>
<p class="lead">${w.unsubscribeLead(view.name)}</p>
<form method="post" action="${view.action}">
<p><button type="submit">${w.unsubscribeButton}</button></p>
</form>`,
  });
}

/** «Вы отписались». */
export function emailUnsubscribedPage(view: PageBase & { name: string; pageUrl: string }): Html {
  const w = words(view.lang);
  return page({
    lang: view.lang,
    url: view.url,
    title: w.unsubscribedTitle,
    private: true,
    body: html`<h1>${w.unsubscribedTitle}</h1>
<p class="notice ok" role="status">${w.unsubscribed(view.name)}</p>
<p>${w.resubscribe} <a href="${view.pageUrl}">${w.open}</a></p>`,
  });
}

/** Why a link or the form leads nowhere. */
export type EmailProblem = 'gone' | 'expired' | 'broken' | 'full' | 'off';

/** A link that names nothing (any more), a mailbox that follows too many timetables, or e-mail switched off. */
export function emailProblemPage(view: PageBase & { problem: EmailProblem; maxSources: number }): Html {
  const w = words(view.lang);
  const said: Record<EmailProblem, readonly [string, string]> = {
    gone: [w.goneTitle, w.gone],
    expired: [w.expiredTitle, w.expired],
    broken: [w.brokenTitle, w.broken],
    full: [w.fullTitle, w.full(view.maxSources)],
    off: [w.offTitle, w.off],
  };
  const [title, text] = said[view.problem];
  return page({
    lang: view.lang,
    url: view.url,
    title,
    private: true,
    body: html`<h1>${title}</h1>
<p class="notice${view.problem === 'gone' ? '' : ' error'}" role="${view.problem === 'gone' ? 'status' : 'alert'}">${text}</p>
<p><a href="/">${w.home}</a></p>`,
  });
}

/** Why an address was refused: beside its field on the form, naming the field for the JSON API. */
export function addressProblemWords(problem: MailAddressProblem, mode: 'api' | 'form'): Words {
  const form: Record<MailAddressProblem, Words> = {
    empty: { ru: 'Впишите адрес почты.', en: 'Type your e-mail address.' },
    'too-long': {
      ru: 'Адрес длиннее 254 символов: проверьте, что вписан один адрес.',
      en: 'The address is longer than 254 characters: check that it is one address.',
    },
    malformed: {
      ru: 'Это не похоже на адрес почты: нужен вид имя@домен, например ivanov@student.example.ru.',
      en: 'This does not look like an e-mail address: it is name@domain, such as ivanov@student.example.edu.',
    },
    'non-ascii-local': {
      ru: 'Часть адреса до @ должна быть латиницей: адреса с русскими буквами до @ пока не поддерживаются.',
      en: 'The part before @ must be in Latin letters: addresses with Cyrillic before @ cannot be used yet.',
    },
  };
  const words = form[problem];
  return mode === 'form' ? words : { ru: `email: ${words.ru}`, en: `email: ${words.en}` };
}

/** Why a source was refused: the forms a timetable's key has (naming the field for the JSON API). */
export function sourceProblemWords(mode: 'api' | 'form'): Words {
  const words = {
    ru: 'расписание указывается как group:<номер группы>, employee:<номер преподавателя> или personal:<номер подписки>',
    en: 'a timetable is group:<group id>, employee:<employee id> or personal:<subscription id>',
  };
  return mode === 'form' ? words : { ru: `source: ${words.ru}`, en: `source: ${words.en}` };
}

/** What a confirmation page says a sign-up comes with: subgroup, hidden kinds, a mail per change or a digest. */
export function signUpDetails(options: NotifyOptions, digest: boolean, digestTime: string, lang: Lang): string {
  const kinds = (options.excludeKinds ?? []).join(', ');
  const ru = lang === 'ru';
  return [
    options.subgroup === undefined ? undefined : ru ? `подгруппа ${options.subgroup}` : `subgroup ${options.subgroup}`,
    kinds === '' ? undefined : ru ? `без: ${kinds}` : `without: ${kinds}`,
    digest
      ? ru
        ? `одно письмо в день, в ${digestTime}`
        : `one mail a day, at ${digestTime}`
      : ru
        ? 'письмо при каждом изменении'
        : 'a mail per change',
  ]
    .filter((part) => part !== undefined)
    .join(' · ');
}
