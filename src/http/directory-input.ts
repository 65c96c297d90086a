/**
 * The body of `POST /admin/directory`, a list of study groups, read from JSON (`[{"id": 1, "name": "09-351"}]`
 * or `{"groups": [...]}`) or CSV (`id,name` per line; a header line naming `id` and `name` is optional and may
 * put the columns in either order; fields may be quoted, `""` inside quotes is a quote; `;` separates instead
 * of `,` when the first line has no comma, as spreadsheets in Russian locales save, and a first line `sep=;` as
 * Excel writes names the separator). CSV bytes are decoded by the `charset` of the Content-Type (UTF-8 when
 * none), e.g. `windows-1251` as Excel saves in Russian locales. Every problem is a 400 naming the line or the
 * element and the field; values are quoted back shortened.
 */
import { TextDecoder } from 'node:util';
import { cleanGroupName, type DirectoryGroup, MAX_GROUP_NAME_LENGTH } from '../store/group-directory.ts';
import type { Words } from './error-codes.ts';
import { HttpError } from './errors.ts';

/** Most groups one import takes (a university has a few thousand). */
export const MAX_IMPORT_GROUPS = 50_000;

/** Where a value came from, for messages: `line 3` / `строка 3`, or `groups[2]`. */
type Place = Words;

/** A 400 of the body, in both languages. */
function invalid(en: string, ru: string): HttpError {
  return new HttpError('INVALID_BODY', { en, ru });
}

/** Groups of a JSON body, validated; a 400 naming the first bad element otherwise. */
export function groupsFromJson(body: unknown): DirectoryGroup[] {
  const list = Array.isArray(body) ? body : isObject(body) && Array.isArray(body.groups) ? body.groups : undefined;
  if (list === undefined)
    throw invalid(
      'body must be JSON, an array of {"id", "name"} or {"groups": [...]}, or CSV id,name sent as Content-Type: text/csv',
      'тело запроса должно быть JSON, массивом {"id", "name"} или {"groups": [...]}, или CSV id,name с Content-Type: text/csv',
    );
  const prefix = Array.isArray(body) ? '' : 'groups';
  return validated(
    list.map((item: unknown, index: number) => {
      const at = `${prefix}[${index}]`;
      const place = { en: at, ru: at };
      if (!isObject(item))
        throw invalid(
          `${at}: must be an object {"id": …, "name": "…"}`,
          `${at}: должен быть объектом {"id": …, "name": "…"}`,
        );
      return { place, id: item.id, name: item.name };
    }),
  );
}

/**
 * The text of CSV bytes in `charset` (a Content-Type parameter; UTF-8 when none); a 400 for a charset we do not
 * know, or naming the first line holding bytes that are not text in it (a file saved as windows-1251 but sent
 * as UTF-8 would store garbled names).
 */
export function decodeCsv(bytes: Uint8Array, charset: string | undefined): string {
  let decoder: TextDecoder;
  try {
    decoder = new TextDecoder(charset ?? 'utf-8');
  } catch (error) {
    if (error instanceof RangeError)
      throw invalid(
        `unknown charset ${shown(charset)} in Content-Type`,
        `неизвестная кодировка ${shown(charset)} в Content-Type`,
      );
    throw error;
  }
  const text = decoder.decode(bytes);
  const bad = text.indexOf('\uFFFD');
  if (bad < 0) return text;
  const line = text.slice(0, bad).split('\n').length;
  if (decoder.encoding === 'utf-8')
    throw invalid(
      `line ${line}: not UTF-8: say charset=windows-1251 (Content-Type: text/csv; charset=windows-1251) if the file is in it`,
      `строка ${line}: не UTF-8: если файл в windows-1251, укажите charset=windows-1251 (Content-Type: text/csv; charset=windows-1251)`,
    );
  throw invalid(
    `line ${line}: not ${decoder.encoding} text, as the Content-Type's charset says`,
    `строка ${line}: не текст в ${decoder.encoding}, как говорит charset в Content-Type`,
  );
}

/** Groups of a CSV body, validated; a 400 naming the first bad line otherwise. */
export function groupsFromCsv(text: string): DirectoryGroup[] {
  const rows = csvRows(text.replace(/^\uFEFF/, ''));
  const first = rows[0];
  if (first === undefined)
    throw invalid('the CSV has no lines: send id,name per line', 'в CSV нет строк: отправьте id,name в каждой строке');
  const header = first.fields.map((field) => field.trim().toLowerCase());
  const hasHeader = header.includes('id') && header.includes('name');
  const idColumn = hasHeader ? header.indexOf('id') : 0;
  const nameColumn = hasHeader ? header.indexOf('name') : 1;
  return validated(
    rows.slice(hasHeader ? 1 : 0).map(({ line, fields }) => {
      const place = { en: `line ${line}`, ru: `строка ${line}` };
      if (!hasHeader && fields.length !== 2)
        throw invalid(
          `${place.en}: expected 2 fields (id,name), got ${fields.length}`,
          `${place.ru}: ожидалось 2 поля (id,name), получено ${fields.length}`,
        );
      if (fields.length < header.length && hasHeader)
        throw invalid(
          `${place.en}: expected ${header.length} fields as the header names, got ${fields.length}`,
          `${place.ru}: ожидалось полей, как в заголовке: ${header.length}, получено ${fields.length}`,
        );
      return { place, id: fields[idColumn]?.trim(), name: fields[nameColumn] };
    }),
  );
}

/** A list of groups checked: positive integer ids, real names, each id once (again only with the same name). */
function validated(items: readonly { place: Place; id: unknown; name: unknown }[]): DirectoryGroup[] {
  if (items.length === 0) throw invalid('no groups to import', 'нет групп для загрузки');
  if (items.length > MAX_IMPORT_GROUPS)
    throw invalid(
      `at most ${MAX_IMPORT_GROUPS} groups per import, got ${items.length}`,
      `за одну загрузку не больше ${MAX_IMPORT_GROUPS} групп, получено ${items.length}`,
    );
  const seen = new Map<number, { name: string; place: Place }>();
  const groups: DirectoryGroup[] = [];
  for (const { place, id: rawId, name: rawName } of items) {
    const id = groupId(rawId);
    if (id === undefined)
      throw invalid(
        `${place.en}: id must be a positive whole number, got ${shown(rawId)}`,
        `${place.ru}: id должен быть целым положительным числом, получено ${shown(rawId)}`,
      );
    if (typeof rawName !== 'string')
      throw invalid(
        `${place.en}: name must be text, got ${shown(rawName)}`,
        `${place.ru}: name должно быть текстом, получено ${shown(rawName)}`,
      );
    const name = cleanGroupName(rawName);
    if (name === undefined)
      throw invalid(
        `${place.en}: name must be 1 to ${MAX_GROUP_NAME_LENGTH} characters without control characters, got ${shown(rawName)}`,
        `${place.ru}: name должно быть от 1 до ${MAX_GROUP_NAME_LENGTH} символов без управляющих символов, получено ${shown(rawName)}`,
      );
    const before = seen.get(id);
    if (before !== undefined) {
      if (before.name !== name)
        throw invalid(
          `${place.en}: id ${id} is already ${shown(before.name)} (${before.place.en})`,
          `${place.ru}: id ${id} уже занят группой ${shown(before.name)} (${before.place.ru})`,
        );
      continue;
    }
    seen.set(id, { name, place });
    groups.push({ id, name });
  }
  return groups;
}

/** A positive safe integer given as a number or as digits. */
function groupId(value: unknown): number | undefined {
  const id =
    typeof value === 'number' ? value : typeof value === 'string' && /^\d{1,15}$/.test(value) ? Number(value) : NaN;
  return Number.isSafeInteger(id) && id > 0 ? id : undefined;
}

/** A value quoted back in a message, shortened. */
function shown(value: unknown): string {
  if (value === undefined) return 'nothing';
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  return JSON.stringify(text.length > 40 ? `${text.slice(0, 37)}...` : text);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** One CSV record: the line it starts on (from 1) and its fields. */
interface CsvRow {
  line: number;
  fields: string[];
}

/**
 * Splits CSV into records (RFC 4180: quoted fields may hold separators, quotes doubled, line breaks). Blank
 * lines are skipped. The separator is the one a first line `sep=X` names (Excel's), else `,`, or `;` when the
 * first line has `;` and no `,`.
 */
export function csvRows(text: string): CsvRow[] {
  const firstLine = text.slice(0, text.search(/\r?\n|$/));
  const named = /^sep=(.)$/i.exec(firstLine)?.[1];
  const separator = named ?? (!firstLine.includes(',') && firstLine.includes(';') ? ';' : ',');
  const rows: CsvRow[] = [];
  let fields: string[] = [];
  let field = '';
  let line = named === undefined ? 1 : 2;
  let rowLine = line;
  let quoted = false;
  let i = named === undefined ? 0 : firstLine.length + (text[firstLine.length] === '\r' ? 2 : 1);
  const endRow = () => {
    fields.push(field);
    if (fields.length > 1 || fields[0]?.trim() !== '') rows.push({ line: rowLine, fields });
    fields = [];
    field = '';
  };
  while (i < text.length) {
    const char = text[i] as string;
    if (quoted) {
      if (char === '"' && text[i + 1] === '"') {
        field += '"';
        i += 2;
        continue;
      }
      if (char === '"') quoted = false;
      else {
        if (char === '\n') line++;
        field += char;
      }
      i++;
      continue;
    }
    if (char === '"' && field.trim() === '') {
      quoted = true;
      field = '';
    } else if (char === separator) {
      fields.push(field);
      field = '';
    } else if (char === '\n' || char === '\r') {
      if (char === '\r' && text[i + 1] === '\n') i++;
      endRow();
      line++;
      rowLine = line;
    } else field += char;
    i++;
  }
  if (quoted)
    throw invalid(`line ${rowLine}: a quoted field is not closed`, `строка ${rowLine}: поле в кавычках не закрыто`);
  if (field !== '' || fields.length > 0) endRow();
  return rows;
}
