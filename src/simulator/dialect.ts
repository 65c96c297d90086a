/**
 * The dialects a simulated deployment can answer in. `standard` is the contract document; `legacy` is what
 * real deployments of the older API send, as public clients of it decode: windows-1251 bodies (labelled in
 * `Content-Type`), no `success`, every number a string, `HH.MM` times, `DD.MM.YYYY` dates, `;`-separated
 * group lists, the teacher search as `employees` with snake_case fields, profiles with `null` fields (the
 * group's id included), a class taught to several groups as one row per group, and control characters in some
 * text fields. `legacy-unlabelled` is the same, but its `Content-Type` names no charset (the body is still
 * windows-1251), as some of those servers answer.
 */
import { z } from 'zod';
import type { Employee } from './model.ts';

/** The dialects, by name. */
export const DIALECTS = ['standard', 'legacy', 'legacy-unlabelled'] as const;

/** One of the dialects. */
export type Dialect = (typeof DIALECTS)[number];

/** Body of `PUT /_sim/dialect`. */
export const dialectSchema = z.strictObject({ dialect: z.enum(DIALECTS) });

/** Whether a dialect spells everything as the older API does (both legacy dialects). */
export function isLegacy(dialect: Dialect): boolean {
  return dialect !== 'standard';
}

/**
 * How far apart the ids of the per-group rows of one class are: the first group's row keeps the entry's id, the
 * n-th group's row is `id + n × SPLIT_ROW_ID_STEP` (distinct, stable, above every generated id).
 */
export const SPLIT_ROW_ID_STEP = 100_000_000;

/**
 * Whether a legacy deployment sends this class as one row per group: a class of several groups with an even
 * id does (the others keep one row listing the groups `;`-separated, so both shapes are served).
 */
export function sentPerGroup(entry: { id: number; groupIds: readonly number[] }): boolean {
  return entry.groupIds.length > 1 && entry.id % 2 === 0;
}

/**
 * The row a legacy deployment sends for the `index`-th group of a class taught to several groups: the class's
 * fields with an id of its own and only that group in `group_list`.
 */
export function perGroupRow(
  fields: Record<string, unknown>,
  id: number,
  index: number,
  groupName: string,
): Record<string, unknown> {
  return { ...fields, id: id + index * SPLIT_ROW_ID_STEP, group_list: groupName };
}

/**
 * Some text of an entry with a control character in it, as old records hold (pasted from word processors): a
 * bell in the subject of every third entry, a vertical tab in the note of the next ones. Decided by the entry's
 * id, so that the per-group rows of one class agree.
 */
export function withControlCharacters(fields: Record<string, unknown>): Record<string, unknown> {
  const id = Number(fields.id);
  if (!Number.isSafeInteger(id)) return fields;
  if (id % 3 === 0 && typeof fields.subject_name === 'string')
    return { ...fields, subject_name: `${fields.subject_name}\u0007` };
  if (id % 3 === 1 && typeof fields.note_schedule === 'string')
    return { ...fields, note_schedule: `\u000b${fields.note_schedule}` };
  return fields;
}

const WIRE_TIME = /^(\d{2}):(\d{2})$/;
const WIRE_TIME_RANGE = /^(\d{2}):(\d{2})-(\d{2}):(\d{2})$/;

/** `HH:MM` (or `HH:MM-HH:MM`) as the legacy dialect spells it; anything else (a broken value) as it is. */
export function legacyTime(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  if (WIRE_TIME.test(value) || WIRE_TIME_RANGE.test(value)) return value.replaceAll(':', '.');
  return value;
}

/** A group list separated by `; ` instead of `, `. */
export function legacyGroupList(value: unknown): unknown {
  return typeof value === 'string' ? value.split(', ').join('; ') : value;
}

/** An employee as the `employees` search answer has it: snake_case, ids as strings. */
export function legacyEmployee(employee: Employee): Record<string, unknown> {
  return {
    employee_id: String(employee.id),
    lastname: employee.lastName,
    firstname: employee.firstName,
    middlename: employee.middleName === '' ? null : employee.middleName,
    is_teacher: employee.teacher,
    post: employee.post,
    subdivision: employee.subDivision,
    email: employee.email === '' ? null : employee.email,
  };
}

/** Profile fields a legacy deployment leaves null: the group's id among them. */
const NULL_USER_FIELDS = ['photoPath', 'studentId', 'gender'];
const NULL_GROUP_FIELDS = ['id', 'specialization', 'yearStart'];

/**
 * A selected profile (before wire formatting) with the fields a legacy deployment does not fill set to null.
 * The group always carries its (null) id, selected or not, as a deployment that ignores nested selections does.
 */
export function legacyUser(selected: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...selected };
  for (const key of NULL_USER_FIELDS) if (key in out) out[key] = null;
  const group = out.group;
  if (group !== null && typeof group === 'object') {
    const nulled: Record<string, unknown> = { id: null, ...group };
    for (const key of NULL_GROUP_FIELDS) if (key in nulled) nulled[key] = null;
    out.group = nulled;
  }
  return out;
}
