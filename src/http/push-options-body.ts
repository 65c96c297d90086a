/**
 * The feed options of a push target in the admin API's JSON (`"options": {"subgroup": 2, "exclude": ["лекция"],
 * "alarm": 15, "title": "{subject} {room}"}`): the names and rules of the feed query (subscriber-query.ts), with
 * JSON's types checked strictly, and their fit with the target's timetable (variant-render.ts). Every refusal is
 * a 400 `INVALID_BODY` whose words name the field (`options.subgroup: …`). Also the same shape back, for views.
 */
import type { OptionRefusedError } from '../serving/errors.ts';
import { type OptionsFitDeps, optionsMisfitsFor } from '../serving/variant-render.ts';
import type { SourceKey } from '../timetable/source.ts';
import type { SubscriberOptions } from '../timetable/types.ts';
import type { Words } from './error-codes.ts';
import { HttpError } from './errors.ts';
import { readSubscriberOptions } from './subscriber-query.ts';

/** The options as JSON: the feed query's names, absent values left out. */
export interface PushOptionsJson {
  subgroup?: number;
  exclude?: string[];
  alarm?: number;
  title?: string;
}

const FIELDS = ['subgroup', 'exclude', 'alarm', 'title'] as const;

/** What {@link checkPushOptionsFit} reads: the option values the timetable ever had. */
export interface PushOptionsFitDeps {
  readonly snapshots: OptionsFitDeps;
}

/**
 * The options of an admin request's `options` object, as a feed URL with the same values would have them.
 * Throws a 400 `INVALID_BODY` naming each bad field: not an object, an unknown key, a subgroup or alarm that is
 * not a whole number, an exclude that is neither a string nor an array of strings, a title that is not a
 * string, and any value the feed query refuses (range, placeholders, length).
 */
export function parsePushOptions(value: unknown): SubscriberOptions {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw invalid([
      {
        en: 'options: must be an object such as {"subgroup": 2, "exclude": ["лекция"], "alarm": 15, "title": "{subject} {room}"}; {} follows the whole timetable',
        ru: 'options: должно быть объектом вида {"subgroup": 2, "exclude": ["лекция"], "alarm": 15, "title": "{subject} {room}"}; {} — всё расписание',
      },
    ]);
  const object = value as Record<string, unknown>;
  const problems: Words[] = [];
  const unknown = Object.keys(object).filter((key) => !(FIELDS as readonly string[]).includes(key));
  if (unknown.length > 0)
    problems.push({
      en: `options: unknown field${unknown.length > 1 ? 's' : ''} ${unknown.map(quoted).join(', ')}; the fields are ${FIELDS.join(', ')}`,
      ru: `options: неизвестные поля ${unknown.map(quoted).join(', ')}; поля: ${FIELDS.join(', ')}`,
    });
  const query: Record<string, string | string[]> = {};
  for (const field of ['subgroup', 'alarm'] as const) {
    const given = object[field];
    if (given === undefined) continue;
    if (typeof given === 'number' && Number.isInteger(given)) query[field] = String(given);
    else problems.push(fieldWords(field, 'must be a whole number', 'должно быть целым числом'));
  }
  const exclude = object.exclude;
  if (typeof exclude === 'string' || (Array.isArray(exclude) && exclude.every((kind) => typeof kind === 'string')))
    query.exclude = exclude as string | string[];
  else if (exclude !== undefined)
    problems.push(
      fieldWords('exclude', 'must be a string or an array of strings', 'должно быть строкой или массивом строк'),
    );
  if (typeof object.title === 'string') query.title = object.title;
  else if (object.title !== undefined) problems.push(fieldWords('title', 'must be a string', 'должно быть строкой'));
  const { options, refused } = readSubscriberOptions(query);
  problems.push(...refused.map(refusalWords));
  if (problems.length > 0) throw invalid(problems);
  return options;
}

/**
 * Refuses (400 `INVALID_BODY`) options that name what the timetable of `source` never had: a subgroup its notes
 * never named, a kind none of its classes had (a typo would push a calendar without the filter asked for). The
 * values it ever had count, as for a feed URL. Before the timetable's first fetch there is nothing to check
 * against, and the options stand as given.
 */
export async function checkPushOptionsFit(
  ctx: PushOptionsFitDeps,
  source: SourceKey,
  options: SubscriberOptions,
): Promise<void> {
  const { misfits } = await optionsMisfitsFor(ctx.snapshots, source, options);
  if (misfits.length > 0) throw invalid(misfits.map(refusalWords));
}

/** The options as the API shows them: the JSON the admin sends, or null for a target following the whole timetable. */
export function pushOptionsView(options: SubscriberOptions | undefined): PushOptionsJson | null {
  if (options === undefined) return null;
  const view: PushOptionsJson = {};
  if (options.subgroup !== undefined) view.subgroup = options.subgroup;
  if (options.excludeKinds !== undefined && options.excludeKinds.length > 0) view.exclude = [...options.excludeKinds];
  if (options.alarmMinutes !== undefined) view.alarm = options.alarmMinutes;
  if (options.titleTemplate !== undefined) view.title = options.titleTemplate;
  return view;
}

function invalid(problems: readonly Words[]): HttpError {
  return new HttpError('INVALID_BODY', {
    en: problems.map((words) => words.en).join('; '),
    ru: problems.map((words) => words.ru).join('; '),
  });
}

function fieldWords(field: (typeof FIELDS)[number], en: string, ru: string): Words {
  return { en: `options.${field}: ${en}`, ru: `options.${field}: ${ru}` };
}

/**
 * A feed query's refusal worded for the body: `query parameter subgroup must be …` becomes
 * `options.subgroup: must be …`, in both languages.
 */
function refusalWords(error: OptionRefusedError): Words {
  const reword = (text: string) =>
    text.replace(/^(?:query parameter|параметр запроса) (\w+):? /, (_match, name: string) => `options.${name}: `);
  return { en: reword(error.words.en), ru: reword(error.words.ru) };
}

function quoted(text: string): string {
  return JSON.stringify(text.length > 40 ? `${text.slice(0, 37)}...` : text);
}
