/**
 * The text a person sees of a message sent with `format: "html"`: MAX keeps its tags (b/strong, i/em, del/s,
 * ins/u, a href, pre/code, mark, h1) as formatting and strips every other one (dev.max.ru, «Форматирование
 * текста»), and the text's entities (`&amp;`, `&lt;`, `&gt;`, `&quot;`, numeric ones) read as their characters.
 * Whether MAX decodes entities is not documented; the fake assumes it does, as HTML does.
 */

const NAMED: Readonly<Record<string, string>> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

/** The visible text of MAX HTML. */
export function htmlText(html: string): string {
  return html.replace(/<[^>]*>/g, '').replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, name: string) => {
    if (name.startsWith('#x') || name.startsWith('#X')) return String.fromCodePoint(Number.parseInt(name.slice(2), 16));
    if (name.startsWith('#')) return String.fromCodePoint(Number(name.slice(1)));
    return NAMED[name.toLowerCase()] ?? whole;
  });
}

/** The `href`s of the links in MAX HTML, decoded. */
export function htmlLinks(html: string): string[] {
  return [...html.matchAll(/<a\s+href="([^"]*)"/gi)].map((match) => htmlText(match[1] ?? ''));
}
