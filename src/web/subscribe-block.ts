/**
 * Every way to subscribe to a timetable, each one click: the feed URL with a copy button, `webcal://` (Apple
 * Calendar, Outlook, Thunderbird), Google Calendar's "add by URL", push to Google, and a QR code of the feed
 * URL for a phone. The elements the options change carry `data-link` / `data-qr`, so that the script can
 * rewrite them in place from the preview endpoint's answer.
 */
import type { FeedLinks } from './feed-links.ts';
import { type Html, html } from './html.ts';
import { type Lang, messages } from './i18n.ts';

const words = messages({
  ru: {
    heading: 'Подписаться',
    feedUrl: 'Адрес календаря (ICS)',
    copy: 'Скопировать',
    copied: 'Скопировано',
    webcal: 'Apple Календарь, Outlook, Thunderbird',
    google: 'Добавить в Google Календарь',
    push: 'Отправлять в Google Календарь сразу',
    pushOff: 'Отправка в Google Календарь на этом сервере не настроена: подпишитесь по ссылке выше.',
    qr: 'Наведите камеру телефона, чтобы открыть адрес календаря.',
    note: 'Google Календарь перечитывает календари, добавленные по ссылке, лишь раз в несколько часов, поэтому изменения появляются там с опозданием. Отправка в Google Календарь записывает изменения сразу, как только они появились в расписании.',
  },
  en: {
    heading: 'Subscribe',
    feedUrl: 'Calendar address (ICS)',
    copy: 'Copy',
    copied: 'Copied',
    webcal: 'Apple Calendar, Outlook, Thunderbird',
    google: 'Add to Google Calendar',
    push: 'Push to Google Calendar right away',
    pushOff: 'Pushing to Google Calendar is not set up on this server: subscribe with a link above.',
    qr: "Point your phone's camera here to open the calendar address.",
    note: 'Google Calendar re-reads calendars added by URL only every several hours, so changes reach it late. Pushing to Google Calendar writes every change as soon as the timetable has it.',
  },
});

/** What the block shows. */
export interface SubscribeView {
  lang: Lang;
  links: FeedLinks;
  /** The QR code of the feed URL (SVG made by the qrcode library from our own URL). */
  qrSvg: Html;
  /** The push link, or undefined when Google push is not configured. */
  pushUrl: string | undefined;
}

/** The subscribe section. */
export function subscribeBlock(view: SubscribeView): Html {
  const w = words(view.lang);
  const push =
    view.pushUrl === undefined
      ? html`<li><p class="muted">${w.pushOff}</p></li>`
      : html`<li><a class="button secondary" href="${view.pushUrl}" data-link="push">${w.push}</a></li>`;
  return html`<section class="card subscribe" aria-labelledby="subscribe-heading">
<h2 id="subscribe-heading">${w.heading}</h2>
<label for="feed-url">${w.feedUrl}</label>
<div class="copy-row"><input type="text" id="feed-url" class="url" readonly value="${view.links.feedUrl}" data-link="feedUrl"><button type="button" class="secondary" data-copy="#feed-url" data-copied="${w.copied}" hidden>${w.copy}</button></div>
<ul class="ways">
<li><a class="button" href="${view.links.webcal}" data-link="webcal">${w.webcal}</a></li>
<li><a class="button" href="${view.links.google}" data-link="google" target="_blank" rel="noopener noreferrer">${w.google}</a></li>
!${push}
</ul>
<figure class="qr"><div class="qr-code" data-qr>!${view.qrSvg}</div><figcaption class="muted">${w.qr}</figcaption></figure>
<p class="muted">${w.note}</p>
</section>`;
}
