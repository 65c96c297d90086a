import { z } from 'zod';
import type { Group, User } from './model.ts';

const flag = z.boolean().optional();

const groupSelectSchema = z.strictObject({
  id: flag,
  name: flag,
  instituteName: flag,
  specialization: flag,
  speciality: flag,
  yearStart: flag,
  yearEnd: flag,
});

const selectSchema = z.strictObject({
  id: flag,
  username: flag,
  firstName: flag,
  lastName: flag,
  middleName: flag,
  gender: flag,
  photoPath: flag,
  // university-api.md §4.4: `group` takes a nested object of the same form (not a bare `true`).
  studentId: flag,
  group: groupSelectSchema.optional(),
});

// Other top-level keys are ignored, as an unknown option usually is; `select` itself is checked strictly.
const bodySchema = z.object({ select: selectSchema.optional() }).optional();

/** A validated `select` of `POST /users/@me`. */
export type UserSelect = z.infer<typeof selectSchema>;

const DEFAULT_SELECT: UserSelect = { id: true, username: true, firstName: true, lastName: true };

const USER_FIELDS = [
  'id',
  'username',
  'firstName',
  'lastName',
  'middleName',
  'gender',
  'photoPath',
  'studentId',
] as const;
const GROUP_FIELDS = ['id', 'name', 'instituteName', 'specialization', 'speciality', 'yearStart', 'yearEnd'] as const;

/** Validates the body of `POST /users/@me`; absent body or `select` means the default fields. */
export function parseSelect(body: unknown): { select: UserSelect } | { error: string } {
  const parsed = bodySchema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const keys = issue && 'keys' in issue && Array.isArray(issue.keys) ? ` (${issue.keys.join(', ')})` : '';
    return {
      error: `Некорректный параметр select: ${issue?.path.join('.') || 'тело запроса'}${keys}: ${issue?.message ?? ''}`,
    };
  }
  return { select: parsed.data?.select ?? DEFAULT_SELECT };
}

/** The user object with only the selected fields, in the documented order (before wire formatting). */
export function selectUser(user: User, group: Group | undefined, select: UserSelect): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const field of USER_FIELDS) if (select[field] === true) out[field] = user[field];
  if (select.group && group) {
    const picked: Record<string, unknown> = {};
    for (const field of GROUP_FIELDS) if (select.group[field] === true) picked[field] = group[field];
    out.group = picked;
  }
  return out;
}
