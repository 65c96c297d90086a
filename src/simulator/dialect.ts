/**
 * The dialects a simulated deployment can answer in. `standard` is the contract document; `legacy` is what
 * real deployments of the older API send, as public clients of it decode: windows-1251 bodies (labelled in
 * `Content-Type`), no `success`, every number a string, `HH.MM` times, `DD.MM.YYYY` dates, `;`-separated
 * group lists, the teacher search as `employees` with snake_case fields, and profiles with `null` fields (the
 * group's id included).
 */
import { z } from 'zod';
import type { Employee } from './model.ts';

/** One of the dialects. */
export type Dialect = 'standard' | 'legacy';

/** Body of `PUT /_sim/dialect`. */
export const dialectSchema = z.strictObject({ dialect: z.enum(['standard', 'legacy']) });

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
