/**
 * The pages' two languages: Russian by default, English by `?lang=en` or by a browser that prefers English to
 * Russian. Each page keeps its words in its own dictionary made with {@link messages}, so that both languages
 * are checked to have the same keys.
 */

export type Lang = 'ru' | 'en';

/** True for `ru` and `en`. */
export function isLang(value: unknown): value is Lang {
  return value === 'ru' || value === 'en';
}

/**
 * The language of a request: `?lang=` when it names one of ours, else the one remembered in the `lang` cookie,
 * else the first of `ru`/`en` in the browser's Accept-Language by q-value (Russian when neither is named).
 */
export function pickLang(queryLang: unknown, cookieLang: unknown, acceptLanguage: string | undefined): Lang {
  if (isLang(queryLang)) return queryLang;
  if (isLang(cookieLang)) return cookieLang;
  let best: Lang = 'ru';
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
