import { type DateFormat, formatDate, parseWireDate } from './dates.ts';
import type { EntryFields } from './model.ts';

/** How this simulated deployment spells values on the wire. */
export interface WireFormat {
  dateFormat: DateFormat;
  /** Send numbers as JSON strings ("42"), as some deployments do. */
  numericStrings: boolean;
}

/** Entry fields that hold dates. */
export const DATE_FIELDS: ReadonlySet<string> = new Set(['start_day_schedule', 'finish_day_schedule']);

/**
 * Converts numbers to strings when the deployment does so, at any depth (booleans and strings stay). Used for
 * employees, users, groups and plan subjects.
 */
export function wireValue(value: unknown, format: WireFormat): unknown {
  if (typeof value === 'number') return format.numericStrings ? String(value) : value;
  if (Array.isArray(value)) return value.map((item) => wireValue(item, format));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) out[key] = wireValue(item, format);
    return out;
  }
  return value;
}

/**
 * A timetable entry as sent: real dates (stored as ISO) in the deployment's date format, numbers per
 * `numericStrings`; anything else (an impossible date, a string where a number belongs) exactly as stored.
 */
export function wireEntry(fields: EntryFields, format: WireFormat): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) {
    if (DATE_FIELDS.has(key) && typeof value === 'string' && parseWireDate(value) === value) {
      out[key] = formatDate(value, format.dateFormat);
    } else {
      out[key] = typeof value === 'number' && format.numericStrings ? String(value) : value;
    }
  }
  return out;
}

/**
 * Canonical form of entry fields coming in through the control API: real dates in either wire format become ISO
 * (so they are sent in the deployment's format); every other value is kept as given, valid or not.
 */
export function canonicalFields(input: Record<string, unknown>): EntryFields {
  const out: EntryFields = {};
  for (const [key, value] of Object.entries(input)) {
    out[key] = DATE_FIELDS.has(key) && typeof value === 'string' ? (parseWireDate(value) ?? value) : value;
  }
  return out;
}
