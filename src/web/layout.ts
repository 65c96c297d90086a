/**
 * The frame of every page: document head, the site's header with a language switch, the page's content, and
 * the stylesheet and script. The pages work without the script; it only enhances them (copy buttons, live
 * options, QR codes).
 */
import { assets } from './assets.ts';
import { type Html, html } from './html.ts';
import { type Lang, messages } from './i18n.ts';

const words = messages({
  ru: { site: 'Расписание в календаре', switchTo: 'English', switchLang: 'en' as Lang, skip: 'К содержанию' },
  en: { site: 'Timetable in your calendar', switchTo: 'Русский', switchLang: 'ru' as Lang, skip: 'Skip to content' },
});

export interface PageOptions {
  lang: Lang;
  title: string;
  /** The page's main content. */
  body: Html;
  /** The request's path and query, for the language switch (its `lang` parameter is replaced). */
  url: string;
  /**
   * Pages that show a secret (a manage link, a personal feed URL) are kept out of search engines. Their
   * referrer policy is the response header's (http/pages.ts): a `no-referrer` one here would make the browser
   * send `Origin: null` with the page's own forms, which the same-origin check refuses.
   */
  private?: boolean;
}

/** A whole HTML document. */
export function page(options: PageOptions): Html {
  const w = words(options.lang);
  const { css, js, icon } = assets();
  return html`<!doctype html>
<html lang="${options.lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
!${options.private ? html`<meta name="robots" content="noindex">` : ''}
<title>${options.title} · ${w.site}</title>
<link rel="icon" href="${icon.path}" type="image/svg+xml">
<link rel="stylesheet" href="${css.path}">
<script src="${js.path}" defer></script>
</head>
<body>
<a class="skip" href="#main">${w.skip}</a>
<header class="site">
<a class="home" href="/">${w.site}</a>
<a class="lang" href="${withLang(options.url, w.switchLang)}" hreflang="${w.switchLang}" lang="${w.switchLang}">${w.switchTo}</a>
</header>
<main id="main">
!${options.body}
</main>
</body>
</html>
`;
}

/**
 * `url` (a path with an optional query) with `lang` set, other query parameters kept. The server remembers a
 * language chosen this way in a cookie, so links inside the site need no parameter.
 */
export function withLang(url: string, lang: Lang): string {
  const parsed = new URL(url, 'http://x');
  parsed.searchParams.set('lang', lang);
  return `${parsed.pathname}${parsed.search}`;
}
