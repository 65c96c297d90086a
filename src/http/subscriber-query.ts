/**
 * Subscriber options of a feed URL or a page's form (`?subgroup=1&exclude=лекция&alarm=15&title=…`), validated
 * (pure). Each refusal is an {@link OptionRefusedError} naming its field, worded for a feed URL's answer and
 * for the form beside that field.
 */
import type { Words } from '../lib/words.ts';
import { pluralRu } from '../lib/words.ts';
import { type OptionField, OptionRefusedError } from '../serving/errors.ts';
import { type ParsedSubscriberQuery, subscriberQueryOf } from '../serving/variant-query.ts';
import {
  type BraceMistake,
  braceMistakeOf,
  canonicalTitleTemplate,
  DEFAULT_TITLE_TEMPLATE,
  placeholderNamed,
  placeholdersOf,
  RUSSIAN_PLACEHOLDERS,
  TITLE_PLACEHOLDERS,
} from '../timetable/event-text.ts';
import type { SubscriberOptions } from '../timetable/types.ts';

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
const RUSSIAN_LIST = TITLE_PLACEHOLDERS.map((name) => `{${RUSSIAN_PLACEHOLDERS[name]}}`).join(', ');

type QueryValue = string | string[] | undefined;

/**
 * Reads the subscriber options out of a parsed query string. Unknown parameters are ignored (calendar apps
 * append their own); a bad value of a known one is an {@link OptionRefusedError} (400) naming the parameter.
 * A title's Russian placeholders are stored by their English names, so both spellings make one feed.
 */
export function parseSubscriberQuery(query: Readonly<Record<string, QueryValue>>): ParsedSubscriberQuery {
  const { options, refused } = readSubscriberOptions(query);
  if (refused[0] !== undefined) throw refused[0];
  return subscriberQueryOf(options);
}

/**
 * The options of a query that are valid, and a refusal for each that is not (subgroup, alarm, title, exclude:
 * the order {@link parseSubscriberQuery} reports them in), so that a form can mark every bad field at once.
 */
export function readSubscriberOptions(query: Readonly<Record<string, QueryValue>>): {
  options: SubscriberOptions;
  refused: OptionRefusedError[];
} {
  const options: SubscriberOptions = {};
  const refused: OptionRefusedError[] = [];
  const read = (read: () => void) => {
    try {
      read();
    } catch (error) {
      if (!(error instanceof OptionRefusedError)) throw error;
      refused.push(error);
    }
  };
  read(() => {
    const subgroup = single(query, 'subgroup');
    if (subgroup !== undefined) options.subgroup = integerIn('subgroup', subgroup, 1, MAX_SUBGROUP);
  });
  read(() => {
    const alarm = single(query, 'alarm');
    if (alarm !== undefined) options.alarmMinutes = integerIn('alarm', alarm, 0, MAX_ALARM_MINUTES);
  });
  read(() => {
    const title = single(query, 'title');
    if (title !== undefined) options.titleTemplate = titleTemplate(title);
  });
  read(() => {
    const kinds = excludedKinds(query.exclude);
    if (kinds.length > 0) options.excludeKinds = kinds;
  });
  return { options, refused };
}

/** The names of the subscriber options in a query or form. */
const OPTION_FIELDS = ['subgroup', 'exclude', 'alarm', 'title'] as const satisfies readonly OptionField[];

/**
 * The option fields of a page query or form post that hold something: an empty field (a form sent without
 * script posts every field) is no option, a repeated field keeps only its filled values, and a title that is
 * the feed's default one (`defaultTitle`, by its English or Russian names) is none either.
 */
export function filledOptionFields(
  fields: Readonly<Record<string, QueryValue>>,
  defaultTitle: string = DEFAULT_TITLE_TEMPLATE,
): Record<string, string | string[]> {
  const filled: Record<string, string | string[]> = {};
  for (const name of OPTION_FIELDS) {
    const value = fields[name];
    const kept = (Array.isArray(value) ? value : [value]).filter(
      (item): item is string => item !== undefined && item.trim() !== '',
    );
    if (kept.length > 0) filled[name] = kept.length === 1 ? (kept[0] as string) : kept;
  }
  if (typeof filled.title === 'string' && canonicalTitleTemplate(filled.title) === defaultTitle) delete filled.title;
  return filled;
}

/** A refusal of `field`'s value: `words` follow "query parameter <field>" in a feed's answer, `fieldWords` stand alone. */
function refuse(field: OptionField, words: Words, fieldWords: Words): OptionRefusedError {
  return new OptionRefusedError(field, words, fieldWords);
}

function single(query: Readonly<Record<string, QueryValue>>, name: OptionField): string | undefined {
  const value = query[name];
  if (Array.isArray(value)) {
    if (value.length > 1)
      throw refuse(
        name,
        {
          en: `query parameter ${name} is given ${value.length} times; give it once`,
          ru: `параметр запроса ${name} указан ${value.length} ${pluralRu(value.length, ['раз', 'раза', 'раз'])}; укажите его один раз`,
        },
        {
          en: `Given ${value.length} times: give one value.`,
          ru: `Указано ${value.length} ${pluralRu(value.length, ['значение', 'значения', 'значений'])}: оставьте одно.`,
        },
      );
    return value[0];
  }
  return value;
}

function integerIn(name: 'subgroup' | 'alarm', text: string, min: number, max: number): number {
  if (!/^\d{1,6}$/.test(text) || Number(text) < min || Number(text) > max) {
    throw refuse(
      name,
      {
        en: `query parameter ${name} must be a whole number from ${min} to ${max}, got ${quote(text)}`,
        ru: `параметр запроса ${name} должен быть целым числом от ${min} до ${max}, получено ${quote(text)}`,
      },
      name === 'subgroup'
        ? {
            en: `A subgroup is a number from ${min} to ${max}, not ${quote(text)}: choose one from the list.`,
            ru: `Подгруппа — номер от ${min} до ${max}, а не ${guillemets(text)}: выберите её из списка.`,
          }
        : {
            en: `A reminder is a number of minutes from ${min} to ${max} (a week), not ${quote(text)}: choose one from the list.`,
            ru: `Напоминание — число минут от ${min} до ${max} (неделя), а не ${guillemets(text)}: выберите его из списка.`,
          },
    );
  }
  return Number(text);
}

/** A title template as given, checked, with its Russian placeholders named in English. */
function titleTemplate(text: string): string {
  if (text.trim() === '')
    throw refuse(
      'title',
      { en: 'query parameter title must not be empty', ru: 'параметр запроса title не должен быть пустым' },
      {
        en: 'The title is empty: write a template, for example {subject} ({kind}).',
        ru: 'Название пустое: впишите шаблон, например {предмет} ({вид}).',
      },
    );
  if (text.length > MAX_TITLE_LENGTH)
    throw refuse(
      'title',
      {
        en: `query parameter title must be at most ${MAX_TITLE_LENGTH} characters, got ${text.length}`,
        ru: `параметр запроса title должен быть не длиннее ${MAX_TITLE_LENGTH} символов, получено ${text.length}`,
      },
      {
        en: `The title is ${text.length} characters long; shorten it to ${MAX_TITLE_LENGTH} at most.`,
        ru: `В названии ${text.length} ${pluralRu(text.length, ['символ', 'символа', 'символов'])}; сократите его до ${MAX_TITLE_LENGTH}.`,
      },
    );
  // Line breaks would be folded into the SUMMARY; a title is one line.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what is refused here.
  if (/[\u0000-\u001f\u007f]/.test(text))
    throw refuse(
      'title',
      {
        en: 'query parameter title must not contain control characters',
        ru: 'параметр запроса title не должен содержать управляющих символов',
      },
      {
        en: 'The title holds a line break or another control character: keep it to one line.',
        ru: 'В названии есть перевод строки или другой управляющий символ: оставьте его одной строкой.',
      },
    );
  const braces = braceMistakeOf(text);
  if (braces !== undefined) throw braceRefusal(braces);
  const used = placeholdersOf(text);
  const unknown = used.find((name) => placeholderNamed(name) === undefined);
  if (unknown !== undefined)
    throw refuse(
      'title',
      {
        en: `query parameter title: unknown placeholder ${quote(`{${unknown}}`)}; the placeholders are ${PLACEHOLDER_LIST}`,
        ru: `параметр запроса title: неизвестная подстановка ${quote(`{${unknown}}`)}; подстановки: ${RUSSIAN_LIST} (или ${PLACEHOLDER_LIST})`,
      },
      {
        en: `Unknown placeholder ${clipped(`{${unknown}}`)}. You can use: ${TITLE_PLACEHOLDERS.map((name) => `{${name}}`).join(' ')}.`,
        ru: `Неизвестная подстановка ${clipped(`{${unknown}}`)}. Можно использовать: ${TITLE_PLACEHOLDERS.map((name) => `{${RUSSIAN_PLACEHOLDERS[name]}}`).join(' ')}.`,
      },
    );
  if (used.length > MAX_TITLE_PLACEHOLDERS)
    throw refuse(
      'title',
      {
        en: `query parameter title uses ${used.length} placeholders; at most ${MAX_TITLE_PLACEHOLDERS} are allowed`,
        ru: `параметр запроса title использует подстановок: ${used.length}; можно не больше ${MAX_TITLE_PLACEHOLDERS}`,
      },
      {
        en: `The title uses ${used.length} placeholders; at most ${MAX_TITLE_PLACEHOLDERS} are allowed: leave out the repeated ones.`,
        ru: `В названии ${used.length} ${pluralRu(used.length, ['подстановка', 'подстановки', 'подстановок'])}, можно не больше ${MAX_TITLE_PLACEHOLDERS}: уберите повторы.`,
      },
    );
  return canonicalTitleTemplate(text);
}

/**
 * The refusal of a title whose braces are no placeholder: an unclosed one is named with the way to close it, a
 * stray brace with where braces go. The words say what to write, since a literal brace has no escape.
 */
function braceRefusal(mistake: BraceMistake): OptionRefusedError {
  if (mistake.kind === 'unclosed') {
    const opened = `{${mistake.name}`;
    const known = placeholderNamed(mistake.name) !== undefined;
    return refuse(
      'title',
      {
        en: `query parameter title: placeholder ${quote(opened)} is not closed; ${known ? `write ${quote(`${opened}}`)}` : `the placeholders are ${PLACEHOLDER_LIST}`}`,
        ru: `параметр запроса title: подстановка ${quote(opened)} не закрыта; ${known ? `напишите ${quote(`${opened}}`)}` : `подстановки: ${RUSSIAN_LIST} (или ${PLACEHOLDER_LIST})`}`,
      },
      known
        ? {
            en: `The placeholder ${clipped(opened)} is not closed: add "}" to make it ${clipped(`${opened}}`)}.`,
            ru: `Подстановка ${guillemets(opened)} не закрыта: допишите «}», чтобы получилось ${clipped(`${opened}}`)}.`,
          }
        : {
            en: `The placeholder ${clipped(opened)} is not closed and has no such name. You can use: ${TITLE_PLACEHOLDERS.map((name) => `{${name}}`).join(' ')}.`,
            ru: `Подстановка ${guillemets(opened)} не закрыта, и такой подстановки нет. Можно использовать: ${TITLE_PLACEHOLDERS.map((name) => `{${RUSSIAN_PLACEHOLDERS[name]}}`).join(' ')}.`,
          },
    );
  }
  const { brace } = mistake;
  return refuse(
    'title',
    {
      en: `query parameter title: stray ${quote(brace)}; braces go only around a placeholder, such as {subject}`,
      ru: `параметр запроса title: лишняя скобка ${quote(brace)}; фигурные скобки ставятся только вокруг подстановки, например {предмет}`,
    },
    {
      en: `The title has a stray "${brace}": braces go only around a placeholder, such as {subject}. Remove it, or use round brackets instead.`,
      ru: `В названии лишняя скобка «${brace}»: фигурные скобки ставятся только вокруг подстановки, например {предмет}. Уберите её или замените круглой.`,
    },
  );
}

/** `exclude=лекция,практика` and `exclude=лекция&exclude=практика` alike; lower-cased, sorted, deduplicated. */
function excludedKinds(value: QueryValue): string[] {
  if (value === undefined) return [];
  const parts = (Array.isArray(value) ? value : [value]).flatMap((item) => item.split(','));
  const kinds = [...new Set(parts.map((part) => part.trim().toLowerCase()).filter((part) => part !== ''))].sort();
  const tooLong = kinds.find((kind) => kind.length > MAX_KIND_LENGTH);
  if (tooLong !== undefined)
    throw refuse(
      'exclude',
      {
        en: `query parameter exclude: a kind must be at most ${MAX_KIND_LENGTH} characters, got ${quote(tooLong)}`,
        ru: `параметр запроса exclude: вид занятий должен быть не длиннее ${MAX_KIND_LENGTH} символов, получено ${quote(tooLong)}`,
      },
      {
        en: `${quote(tooLong)} is no kind of class (a kind is at most ${MAX_KIND_LENGTH} characters): tick the kinds in the list.`,
        ru: `${guillemets(tooLong)} — не вид занятий (вид не длиннее ${MAX_KIND_LENGTH} символов): отметьте виды из списка.`,
      },
    );
  if (kinds.length > MAX_EXCLUDED_KINDS)
    throw refuse(
      'exclude',
      {
        en: `query parameter exclude lists ${kinds.length} kinds; at most ${MAX_EXCLUDED_KINDS} are allowed`,
        ru: `параметр запроса exclude перечисляет видов занятий: ${kinds.length}; можно не больше ${MAX_EXCLUDED_KINDS}`,
      },
      {
        en: `${kinds.length} kinds are listed; at most ${MAX_EXCLUDED_KINDS} can be hidden.`,
        ru: `Отмечено видов занятий: ${kinds.length}; скрыть можно не больше ${MAX_EXCLUDED_KINDS}.`,
      },
    );
  return kinds;
}

function quote(text: string): string {
  return JSON.stringify(clipped(text));
}

/** `text` in Russian quotation marks, cut as {@link quote} cuts it. */
function guillemets(text: string): string {
  return `«${clipped(text)}»`;
}

function clipped(text: string): string {
  return text.length > 40 ? `${text.slice(0, 37)}...` : text;
}
