/**
 * Field-level parsers shared by the response schemas. Each returns a {@link Parsed} result whose failure
 * reason names the bad value, so that a problem report can say exactly what was wrong.
 */
import { z } from 'zod';
import { describeValue, InvalidIdError } from './errors.ts';

/** Outcome of parsing one field. */
export type Parsed<T> = { ok: true; value: T } | { ok: false; reason: string };

const ok = <T>(value: T): Parsed<T> => ({ ok: true, value });
const fail = <T>(reason: string): Parsed<T> => ({ ok: false, reason });

/** Wraps a field parser as a zod schema that reports exactly one issue, with the parser's reason. */
export function field<T>(parse: (input: unknown) => Parsed<T>) {
  // `.optional()` lets an absent key reach the parser, which decides what absence means for this field.
  return z
    .unknown()
    .optional()
    .transform((input, ctx): T => {
      const result = parse(input);
      if (result.ok) return result.value;
      ctx.addIssue({ code: 'custom', message: result.reason, input });
      return z.NEVER;
    });
}

const INTEGER_TEXT = /^[+-]?\d+$/;
const DECIMAL_TEXT = /^[+-]?(\d+(\.\d*)?|\.\d+)$/;

/** A safe integer from a number or a digit string ("42", " 7 "); otherwise undefined. */
export function toInteger(input: unknown): number | undefined {
  const value = typeof input === 'string' && INTEGER_TEXT.test(input.trim()) ? Number(input.trim()) : input;
  return typeof value === 'number' && Number.isSafeInteger(value) ? value : undefined;
}

/** Whether a value is absent in the tolerant sense: missing, null or an empty string. */
export function isAbsent(input: unknown): boolean {
  return input === undefined || input === null || (typeof input === 'string' && input.trim() === '');
}

/** A required positive integer (ids). */
export function positiveInt(input: unknown): Parsed<number> {
  const value = toInteger(input);
  return value !== undefined && value > 0
    ? ok(value)
    : fail(`expected a positive integer, got ${describeValue(input)}`);
}

/** A required integer within [min, max]. */
export function intInRange(min: number, max: number) {
  return (input: unknown): Parsed<number> => {
    const value = toInteger(input);
    if (value !== undefined && value >= min && value <= max) return ok(value);
    return fail(`expected an integer from ${min} to ${max}, got ${describeValue(input)}`);
  };
}

/** Tolerant optional integer: absent or unparseable values become null (they only decorate events). */
export function optionalInt(input: unknown): Parsed<number | null> {
  return ok(toInteger(input) ?? null);
}

/** Tolerant optional id: a positive integer, or null when absent, zero or unparseable. */
export function optionalId(input: unknown): Parsed<number | null> {
  const value = toInteger(input);
  return ok(value !== undefined && value > 0 ? value : null);
}

// Line breaks first, so that the words on either side stay apart once they go.
const LINE_BREAKS = /\r\n|[\r\n\u2028\u2029]/g;
// Every other control character (C0 but tab, DEL, C1): RFC 5545 forbids them in TEXT, and Google would store them.
const CONTROLS = /(?!\t)\p{Cc}/gu;

/** A string without control characters: line breaks become a space, tabs stay, the others are dropped. */
export function cleanText(input: string): string {
  return input.replace(LINE_BREAKS, ' ').replace(CONTROLS, '').trim();
}

/** Tolerant text: strings kept (cleaned of control characters, trimmed), numbers stringified, else ''. */
export function text(input: unknown): Parsed<string> {
  if (typeof input === 'string') return ok(cleanText(input));
  if (typeof input === 'number' && Number.isFinite(input)) return ok(String(input));
  return ok('');
}

// Deployments separate names with ", " (the contract), ";" or one name per line.
const LIST_SEPARATORS = /[,;\r\n]+/;

/** Tolerant list of names (`group_list`): split on `,`, `;` and line breaks, each cleaned, empty ones dropped. */
export function nameList(input: unknown): Parsed<string[]> {
  const raw = typeof input === 'number' && Number.isFinite(input) ? String(input) : input;
  if (typeof raw !== 'string') return ok([]);
  return ok(
    raw
      .split(LIST_SEPARATORS)
      .map(cleanText)
      .filter((name) => name !== ''),
  );
}

/** Tolerant non-negative amount (plan hours): numbers or numeric strings, absent becomes 0. */
export function amount(input: unknown): Parsed<number> {
  if (isAbsent(input)) return ok(0);
  const value = typeof input === 'string' && DECIMAL_TEXT.test(input.trim()) ? Number(input.trim()) : input;
  if (typeof value === 'number' && Number.isFinite(value)) return ok(value);
  return fail(`expected a number, got ${describeValue(input)}`);
}

/** Tolerant boolean: true/false, 1/0, "true"/"false", "1"/"0"; absent becomes false. */
export function flag(input: unknown): Parsed<boolean> {
  if (isAbsent(input)) return ok(false);
  if (input === true || input === 1 || input === 'true' || input === '1') return ok(true);
  if (input === false || input === 0 || input === 'false' || input === '0') return ok(false);
  return fail(`expected a boolean, got ${describeValue(input)}`);
}

const SHORT_DATE = /^(\d{1,2})\.(\d{1,2})\.(\d{2}|\d{4})$/;
const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/** A calendar date as `DD.MM.YY` (year 20YY), `DD.MM.YYYY` or `YYYY-MM-DD`, normalised to ISO `YYYY-MM-DD`. */
export function isoDate(input: unknown): Parsed<string> {
  const raw = typeof input === 'string' ? input.trim() : '';
  const short = SHORT_DATE.exec(raw);
  const iso = ISO_DATE.exec(raw);
  const parts = short ? [short[3], short[2], short[1]] : iso ? [iso[1], iso[2], iso[3]] : undefined;
  if (!parts) return fail(`expected a date DD.MM.YY, DD.MM.YYYY or YYYY-MM-DD, got ${describeValue(input)}`);
  const [yearText = '', monthText = '', dayText = ''] = parts;
  const year = yearText.length === 2 ? 2000 + Number(yearText) : Number(yearText);
  const month = Number(monthText);
  const day = Number(dayText);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) {
    return fail(`no such date ${describeValue(input)}`);
  }
  const pad = (n: number, width: number) => String(n).padStart(width, '0');
  return ok(`${pad(year, 4)}-${pad(month, 2)}-${pad(day, 2)}`);
}

// `HH.MM` ("08.30") is what older deployments send; seconds only ever come with colons.
const TIME = /^(\d{1,2})(?::(\d{2})(?::(\d{2}))?|\.(\d{2}))$/;

/** A wall-clock time as `H:MM`, `HH:MM`, `HH:MM:SS` or `HH.MM`, normalised to `HH:MM`. */
export function clockTime(input: unknown): Parsed<string> {
  const match = TIME.exec(typeof input === 'string' ? input.trim() : '');
  if (!match) return fail(`expected a time HH:MM or HH.MM, got ${describeValue(input)}`);
  const hours = Number(match[1]);
  const minutes = Number(match[2] ?? match[4]);
  const seconds = Number(match[3] ?? 0);
  if (hours > 23 || minutes > 59 || seconds > 59) return fail(`no such time ${describeValue(input)}`);
  return ok(`${String(hours).padStart(2, '0')}:${String(minutes).padStart(2, '0')}`);
}

/** Whether a value is a plain JSON object (not null, not an array). */
export function isRecord(input: unknown): input is Record<string, unknown> {
  return typeof input === 'object' && input !== null && !Array.isArray(input);
}

/**
 * An id from the outside (config, HTTP route, CLI), as a positive safe integer. Accepts numbers and plain
 * digit strings; anything else throws {@link InvalidIdError} so that it never reaches an upstream URL.
 */
export function validateId(fieldName: string, value: unknown): number {
  const parsed =
    typeof value === 'number' ? value : typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(parsed) || parsed <= 0) throw new InvalidIdError(fieldName, value);
  return parsed;
}
