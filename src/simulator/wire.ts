import { type DateFormat, formatDate, parseWireDate } from './dates.ts';
import { type Dialect, isLegacy, legacyGroupList, legacyTime } from './dialect.ts';
import type { EntryFields } from './model.ts';

/** How this simulated deployment spells values on the wire. */
export interface WireFormat {
  dateFormat: DateFormat;
  /** Send numbers as JSON strings ("42"), as some deployments do. */
  numericStrings: boolean;
  /** `legacy`: the older API's spelling of everything (see dialect.ts); `standard`: the contract document. */
  dialect: Dialect;
}

/** The wire format of a dialect: `legacy` fixes dates (DD.MM.YYYY) and numbers (strings); `standard` keeps `base`. */
export function formatFor(dialect: Dialect, base: Omit<WireFormat, 'dialect'>): WireFormat {
  return isLegacy(dialect) ? { dateFormat: 'DD.MM.YYYY', numericStrings: true, dialect } : { ...base, dialect };
}

/** Entry fields that hold times, which the legacy dialect spells `HH.MM`. */
const TIME_FIELDS: ReadonlySet<string> = new Set(['begin_time_schedule', 'end_time_schedule', 'total_time_schedule']);

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
 * `numericStrings`, times and group lists per dialect; anything else (an impossible date, a string where a
 * number belongs) exactly as stored.
 */
export function wireEntry(fields: EntryFields, format: WireFormat): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const legacy = isLegacy(format.dialect);
  for (const [key, value] of Object.entries(fields)) {
    if (DATE_FIELDS.has(key) && typeof value === 'string' && parseWireDate(value) === value) {
      out[key] = formatDate(value, format.dateFormat);
    } else if (legacy && TIME_FIELDS.has(key)) {
      out[key] = legacyTime(value);
    } else if (legacy && key === 'group_list') {
      out[key] = legacyGroupList(value);
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
