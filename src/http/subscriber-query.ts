/** Subscriber options of a feed URL (`?subgroup=1&exclude=лекция&alarm=15&title=…`), validated (pure). */
import { type ParsedSubscriberQuery, subscriberQueryOf } from '../serving/variant-query.ts';
import { placeholdersOf, TITLE_PLACEHOLDERS } from '../timetable/event-text.ts';
import type { SubscriberOptions } from '../timetable/types.ts';
import { pluralRu } from '../web/i18n.ts';
import { HttpError } from './errors.ts';

/** Longest title template accepted. */
export const MAX_TITLE_LENGTH = 200;
/** Longest reminder: one week, in minutes. */
export const MAX_ALARM_MINUTES = 10_080;
/** Most placeholders one title may use: every one of them once is 7; repeating one adds nothing but length. */
export const MAX_TITLE_PLACEHOLDERS = 8;
const MAX_SUBGROUP = 99;
const MAX_EXCLUDED_KINDS = 20;
const MAX_KIND_LENGTH = 64;
const PLACEHOLDER_LIST = TITLE_PLACEHOLDERS.map((name) => `{${name}}`).join(', ');

type QueryValue = string | string[] | undefined;

/**
 * Reads the subscriber options out of a parsed query string. Unknown parameters are ignored (calendar apps
 * append their own); a bad value of a known one is a 400 naming the parameter.
 */
export function parseSubscriberQuery(query: Readonly<Record<string, QueryValue>>): ParsedSubscriberQuery {
  const options: SubscriberOptions = {};
  const subgroup = single(query, 'subgroup');
  if (subgroup !== undefined) options.subgroup = integerIn('subgroup', subgroup, 1, MAX_SUBGROUP);
  const alarm = single(query, 'alarm');
  if (alarm !== undefined) options.alarmMinutes = integerIn('alarm', alarm, 0, MAX_ALARM_MINUTES);
  const title = single(query, 'title');
  if (title !== undefined) options.titleTemplate = titleTemplate(title);
  const kinds = excludedKinds(query.exclude);
  if (kinds.length > 0) options.excludeKinds = kinds;
  return subscriberQueryOf(options);
}

/** The names of the subscriber options in a query or form. */
const OPTION_FIELDS = ['subgroup', 'exclude', 'alarm', 'title'] as const;

/**
 * The option fields of a page query or form post that hold something: an empty field (a form sent without
 * script posts every field) is no option, and a repeated field keeps only its filled values.
 */
export function filledOptionFields(fields: Readonly<Record<string, QueryValue>>): Record<string, string | string[]> {
  const filled: Record<string, string | string[]> = {};
  for (const name of OPTION_FIELDS) {
    const value = fields[name];
    const kept = (Array.isArray(value) ? value : [value]).filter(
      (item): item is string => item !== undefined && item.trim() !== '',
    );
    if (kept.length > 0) filled[name] = kept.length === 1 ? (kept[0] as string) : kept;
  }
  return filled;
}

function single(query: Readonly<Record<string, QueryValue>>, name: string): string | undefined {
  const value = query[name];
  if (Array.isArray(value)) {
    if (value.length > 1)
      throw new HttpError('INVALID_QUERY', {
        en: `query parameter ${name} is given ${value.length} times; give it once`,
        ru: `параметр запроса ${name} указан ${value.length} ${pluralRu(value.length, ['раз', 'раза', 'раз'])}; укажите его один раз`,
      });
    return value[0];
  }
  return value;
}

function integerIn(name: string, text: string, min: number, max: number): number {
  if (!/^\d{1,6}$/.test(text) || Number(text) < min || Number(text) > max) {
    throw new HttpError('INVALID_QUERY', {
      en: `query parameter ${name} must be a whole number from ${min} to ${max}, got ${quote(text)}`,
      ru: `параметр запроса ${name} должен быть целым числом от ${min} до ${max}, получено ${quote(text)}`,
    });
  }
  return Number(text);
}

function titleTemplate(text: string): string {
  if (text.trim() === '')
    throw new HttpError('INVALID_QUERY', {
      en: 'query parameter title must not be empty',
      ru: 'параметр запроса title не должен быть пустым',
    });
  if (text.length > MAX_TITLE_LENGTH)
    throw new HttpError('INVALID_QUERY', {
      en: `query parameter title must be at most ${MAX_TITLE_LENGTH} characters, got ${text.length}`,
      ru: `параметр запроса title должен быть не длиннее ${MAX_TITLE_LENGTH} символов, получено ${text.length}`,
    });
  // Line breaks would be folded into the SUMMARY; a title is one line.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what is refused here.
  if (/[\u0000-\u001f\u007f]/.test(text))
    throw new HttpError('INVALID_QUERY', {
      en: 'query parameter title must not contain control characters',
      ru: 'параметр запроса title не должен содержать управляющих символов',
    });
  const used = placeholdersOf(text);
  const unknown = used.find((name) => !(TITLE_PLACEHOLDERS as readonly string[]).includes(name));
  if (unknown !== undefined)
    throw new HttpError('INVALID_QUERY', {
      en: `query parameter title: unknown placeholder ${quote(`{${unknown}}`)}; the placeholders are ${PLACEHOLDER_LIST}`,
      ru: `параметр запроса title: неизвестная подстановка ${quote(`{${unknown}}`)}; подстановки: ${PLACEHOLDER_LIST}`,
    });
  if (used.length > MAX_TITLE_PLACEHOLDERS)
    throw new HttpError('INVALID_QUERY', {
      en: `query parameter title uses ${used.length} placeholders; at most ${MAX_TITLE_PLACEHOLDERS} are allowed`,
      ru: `параметр запроса title использует подстановок: ${used.length}; можно не больше ${MAX_TITLE_PLACEHOLDERS}`,
    });
  return text;
}

/** `exclude=лекция,практика` and `exclude=лекция&exclude=практика` alike; lower-cased, sorted, deduplicated. */
function excludedKinds(value: QueryValue): string[] {
  if (value === undefined) return [];
  const parts = (Array.isArray(value) ? value : [value]).flatMap((item) => item.split(','));
  const kinds = [...new Set(parts.map((part) => part.trim().toLowerCase()).filter((part) => part !== ''))].sort();
  const tooLong = kinds.find((kind) => kind.length > MAX_KIND_LENGTH);
  if (tooLong !== undefined)
    throw new HttpError('INVALID_QUERY', {
      en: `query parameter exclude: a kind must be at most ${MAX_KIND_LENGTH} characters, got ${quote(tooLong)}`,
      ru: `параметр запроса exclude: вид занятий должен быть не длиннее ${MAX_KIND_LENGTH} символов, получено ${quote(tooLong)}`,
    });
  if (kinds.length > MAX_EXCLUDED_KINDS)
    throw new HttpError('INVALID_QUERY', {
      en: `query parameter exclude lists ${kinds.length} kinds; at most ${MAX_EXCLUDED_KINDS} are allowed`,
      ru: `параметр запроса exclude перечисляет видов занятий: ${kinds.length}; можно не больше ${MAX_EXCLUDED_KINDS}`,
    });
  return kinds;
}

function quote(text: string): string {
  return JSON.stringify(text.length > 40 ? `${text.slice(0, 37)}...` : text);
}
