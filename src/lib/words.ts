/**
 * Words for people in the two languages the service speaks (Russian first): what an error or a page says, with
 * the counting rules Russian needs. Every layer that words an answer uses these, so they sit at the bottom.
 */
import { retryAfterSeconds, secondsText } from './retry-after.ts';

/** The languages of pages and answers. */
export type Lang = 'ru' | 'en';

/** One text in each language. */
export type Words = Readonly<Record<Lang, string>>;

/** The Russian plural form of `count`: one, few, many (1 минута, 2 минуты, 5 минут). */
export function pluralRu(count: number, [one, few, many]: readonly [string, string, string]): string {
  const tens = count % 100;
  const units = count % 10;
  if (tens >= 11 && tens <= 14) return many;
  if (units === 1) return one;
  if (units >= 2 && units <= 4) return few;
  return many;
}

/** A wait in whole seconds, at least one, in both languages: "12 seconds" / "12 секунд". */
export function secondsWords(ms: number): Words {
  const seconds = retryAfterSeconds(ms);
  return { en: secondsText(ms), ru: `${seconds} ${pluralRu(seconds, ['секунду', 'секунды', 'секунд'])}` };
}
