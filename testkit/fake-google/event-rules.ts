/**
 * What Google does to an event body: which ids it accepts, how PATCH merges, how start/end are checked and
 * normalised. Pure functions over plain JSON objects.
 */
import { DateTime } from 'luxon';
import { apiErrors } from './reply.ts';

/** A JSON object as parsed from a request body. */
export type JsonObject = Record<string, unknown>;

/** Google's event id rule: base32hex lowercase (`0-9a-v`), 5 to 1024 characters. */
export const EVENT_ID = /^[0-9a-v]{5,1024}$/;

// Fields the server owns; a client sending them is ignored, as Google does.
const READ_ONLY = [
  'kind',
  'etag',
  'id',
  'created',
  'updated',
  'htmlLink',
  'iCalUID',
  'creator',
  'organizer',
  'eventType',
];

/** A plain (non-array) object? */
export function isObject(value: unknown): value is JsonObject {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** The body without server-owned fields. */
export function writableFields(body: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(body)) if (!READ_ONLY.includes(key)) out[key] = value;
  return out;
}

/**
 * PATCH semantics: objects merge key by key (recursively), arrays and scalars replace, `null` clears.
 * Returns a new object; neither input is modified.
 */
export function deepMerge(target: JsonObject, patch: JsonObject): JsonObject {
  const out: JsonObject = structuredClone(target);
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) {
      delete out[key];
    } else if (isObject(value)) {
      const current = out[key];
      out[key] = deepMerge(isObject(current) ? current : {}, value);
    } else {
      out[key] = structuredClone(value);
    }
  }
  return out;
}

interface ParsedTime {
  normalised: JsonObject;
  millis: number;
}

function parseTime(which: 'start' | 'end', value: unknown, calendarZone: string): ParsedTime {
  if (!isObject(value)) throw apiErrors.required(`Missing ${which} time.`);
  const { dateTime, date, timeZone } = value;
  if (timeZone !== undefined && (typeof timeZone !== 'string' || !DateTime.local().setZone(timeZone).isValid)) {
    throw apiErrors.invalid(`Invalid time zone definition for ${which} time.`);
  }
  if (typeof dateTime === 'string') {
    const hasOffset = /(Z|[+-]\d\d:?\d\d)$/i.test(dateTime);
    if (!hasOffset && timeZone === undefined)
      throw apiErrors.required(`Missing time zone definition for ${which} time.`);
    const zone = typeof timeZone === 'string' ? timeZone : calendarZone;
    const parsed = DateTime.fromISO(dateTime, { zone });
    if (!parsed.isValid) throw apiErrors.invalid(`Invalid ${which} time.`);
    // Google answers with the offset of the event's zone, whatever form the client sent.
    const normalised: JsonObject = { dateTime: parsed.toISO({ suppressMilliseconds: true }) };
    if (timeZone !== undefined) normalised.timeZone = timeZone;
    return { normalised, millis: parsed.toMillis() };
  }
  if (typeof date === 'string') {
    const parsed = DateTime.fromISO(date, { zone: 'UTC' });
    if (!/^\d{4}-\d\d-\d\d$/.test(date) || !parsed.isValid) throw apiErrors.invalid(`Invalid ${which} time.`);
    return { normalised: timeZone === undefined ? { date } : { date, timeZone }, millis: parsed.toMillis() };
  }
  throw apiErrors.required(`Missing ${which} time.`);
}

const STATUSES = ['confirmed', 'tentative', 'cancelled'];

/**
 * Checks the writable fields of an event as Google would after an insert, update or merged patch, and
 * answers them with start/end normalised. Throws ApiError 400 (`required`, `invalid`, `timeRangeEmpty`).
 */
export function validateEvent(fields: JsonObject, calendarZone: string): JsonObject {
  const start = parseTime('start', fields.start, calendarZone);
  const end = parseTime('end', fields.end, calendarZone);
  if (end.millis < start.millis) throw apiErrors.invalid('The specified time range is empty.');
  const status = fields.status ?? 'confirmed';
  if (typeof status !== 'string' || !STATUSES.includes(status)) throw apiErrors.invalid('Invalid value for: status');
  for (const key of ['summary', 'location', 'description', 'colorId'] as const) {
    if (fields[key] !== undefined && typeof fields[key] !== 'string')
      throw apiErrors.invalid(`Invalid value for: ${key}`);
  }
  const props = fields.extendedProperties;
  if (props !== undefined) checkExtendedProperties(props);
  const reminders = isObject(fields.reminders) ? fields.reminders : { useDefault: true };
  return { ...fields, status, start: start.normalised, end: end.normalised, reminders };
}

function checkExtendedProperties(props: unknown): void {
  if (!isObject(props)) throw apiErrors.invalid('Invalid value for: extendedProperties');
  for (const scope of ['private', 'shared'] as const) {
    const map = props[scope];
    if (map === undefined) continue;
    if (!isObject(map)) throw apiErrors.invalid(`Invalid value for: extendedProperties.${scope}`);
    for (const value of Object.values(map)) {
      if (typeof value !== 'string') throw apiErrors.invalid(`Invalid value for: extendedProperties.${scope}`);
    }
  }
}

/** Does the event carry every `key=value` filter in its extended properties of `scope`? */
export function matchesProperties(event: JsonObject, scope: 'private' | 'shared', filters: readonly string[]): boolean {
  const props = isObject(event.extendedProperties) ? event.extendedProperties[scope] : undefined;
  return filters.every((filter) => {
    const eq = filter.indexOf('=');
    if (eq <= 0) throw apiErrors.invalidParameter(`Invalid ${scope}ExtendedProperty filter: ${filter}`);
    return isObject(props) && props[filter.slice(0, eq)] === filter.slice(eq + 1);
  });
}
