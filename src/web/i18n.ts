/**
 * The pages' two languages: Russian by default, English by `?lang=en` or by a browser that prefers English to
 * Russian. Each page keeps its words in its own dictionary made with {@link messages}, so that both languages
 * are checked to have the same keys.
 */

import type { Lang } from '../lib/words.ts';

export type { Lang } from '../lib/words.ts';
export { pluralRu } from '../lib/words.ts';

/** True for `ru` and `en`. */
export function isLang(value: unknown): value is Lang {
  return value === 'ru' || value === 'en';
}

/**
 * The language of a request: `?lang=` when it names one of ours, else the one remembered in the `lang` cookie,
 * else the first of `ru`/`en` in the browser's Accept-Language by q-value (Russian when neither is named).
 */
export function pickLang(queryLang: unknown, cookieLang: unknown, acceptLanguage: string | undefined): Lang {
  return namedLang(queryLang, cookieLang, acceptLanguage) ?? 'ru';
}

/**
 * The language a request names, by the order of {@link pickLang}; undefined when it names neither of ours
 * (curl, scripts, calendar apps), for answers whose default is not the pages' one.
 */
export function namedLang(
  queryLang: unknown,
  cookieLang: unknown,
  acceptLanguage: string | undefined,
): Lang | undefined {
  if (isLang(queryLang)) return queryLang;
  if (isLang(cookieLang)) return cookieLang;
  let best: Lang | undefined;
  let bestQ = 0;
  for (const part of (acceptLanguage ?? '').split(',').slice(0, 20)) {
    const [tag = '', ...params] = part.trim().toLowerCase().split(';');
    const primary = tag.split('-')[0];
    if (primary !== 'ru' && primary !== 'en') continue;
    const qParam = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const q = qParam === undefined ? 1 : Number(qParam.slice(2));
    if (Number.isFinite(q) && q > bestQ) {
      best = primary;
      bestQ = q;
    }
  }
  return best;
}

/** A dictionary in both languages; English must have every key Russian has (and only those). */
export function messages<T extends Record<string, unknown>>(byLang: { ru: T; en: NoInfer<T> }): (lang: Lang) => T {
  return (lang) => byLang[lang];
}
