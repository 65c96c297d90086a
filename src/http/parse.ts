/**
 * Reading what a request sends (bodies, query strings) with zod: one way to turn a schema's issues into a 400
 * that names each bad field, in English and Russian, and the paging parameters every listing takes.
 */
import { z } from 'zod';
import type { Words } from './error-codes.ts';
import { HttpError } from './errors.ts';

/**
 * The Russian of the issue messages our schemas give (zod's own are in English): a phrase, or a pattern whose
 * groups are values kept as they are. A message not listed here stays English in the Russian answer.
 */
const RUSSIAN: readonly (readonly [RegExp, string])[] = [
  [/^is required$/, 'обязательно'],
  [/^is required \(e\.g\. (.+)\)$/, 'обязательно (например, $1)'],
  [/^is required: start at (\S+)$/, 'обязательно: начните с $1'],
  [/^must not be empty$/, 'не должно быть пустым'],
  [/^must be a string$/, 'должно быть строкой'],
  [/^must be a string such as (.+)$/, 'должно быть строкой вида $1'],
  [/^must be given once, as text$/, 'нужно указать один раз, текстом'],
  [/^must be a number$/, 'должно быть числом'],
  [/^must be a whole number$/, 'должно быть целым числом'],
  [/^must be 0 or more$/, 'должно быть 0 или больше'],
  [/^must be at least (\d+)$/, 'должно быть не меньше $1'],
  [/^must be at most (\d+)$/, 'должно быть не больше $1'],
  [/^must be at most (\d+) characters$/, 'должно быть не длиннее $1 символов'],
  [/^must be true$/, 'должно быть true'],
  [/^must be true or false$/, 'должно быть true или false'],
  [
    /^must be a subscription id \(22 characters: letters, digits, _ and -\)$/,
    'должно быть id подписки (22 символа: латинские буквы, цифры, _ и -)',
  ],
  [/^must be printable ASCII text$/, 'должно быть печатным текстом ASCII'],
  [/^must be printable ASCII without spaces$/, 'должно быть печатным текстом ASCII без пробелов'],
  [/^body must be a JSON object$/, 'тело запроса должно быть объектом JSON'],
  [/^body must be JSON (.+)$/, 'тело запроса должно быть JSON $1'],
  [/^Unrecognized keys?: (.+)$/, 'неизвестные поля: $1'],
];

function russian(message: string): string {
  for (const [pattern, words] of RUSSIAN) if (pattern.test(message)) return message.replace(pattern, words);
  return message;
}

/** Zod issues as one line, each prefixed by its field (`limit: must be at least 1`); values are never quoted. */
function issuesWords(error: z.ZodError): Words {
  const line = (word: (message: string) => string) =>
    error.issues
      .map((issue) =>
        issue.path.length === 0 ? word(issue.message) : `${issue.path.join('.')}: ${word(issue.message)}`,
      )
      .join('; ');
  return { en: line((message) => message), ru: line(russian) };
}

/** `input` read by `schema`, or a 400 (`INVALID_BODY` or `INVALID_QUERY`) naming every bad field. */
export function parseOr400<S extends z.ZodType>(
  schema: S,
  input: unknown,
  code: 'INVALID_BODY' | 'INVALID_QUERY',
): z.output<S> {
  const parsed = schema.safeParse(input);
  if (!parsed.success) throw new HttpError(code, issuesWords(parsed.error));
  return parsed.data;
}

/** `?offset=&limit=` of a listing: offset from 0, limit from 1 to 500 (default 100). */
const pageQuery = z.object({
  offset: z.coerce
    .number({ error: 'must be a number' })
    .int('must be a whole number')
    .min(0, 'must be 0 or more')
    .default(0),
  limit: z.coerce
    .number({ error: 'must be a number' })
    .int('must be a whole number')
    .min(1, 'must be at least 1')
    .max(500, 'must be at most 500')
    .default(100),
});

/** A listing's page, or a 400 naming the bad parameter. */
export function parsePage(query: unknown): { offset: number; limit: number } {
  return parseOr400(pageQuery, query ?? {}, 'INVALID_QUERY');
}
