/**
 * The authorised user's profile (`POST /users/@me`): the caller selects fields, the result type has exactly
 * those fields, and the response is checked to contain every one of them. Any of them may be `null` in real
 * deployments (the group's id and the group itself included): text becomes '', numbers and the group null.
 */
import { z } from 'zod';
import { openEnvelope, wrongShape } from './envelope.ts';
import type { EndpointName } from './errors.ts';
import { field, isRecord, optionalInt, type Parsed, positiveInt, text } from './values.ts';

/** A study group as embedded in the user profile. */
export interface Group {
  /** Null in some deployments: nothing of ours depends on it (a personal timetable is asked for by credential). */
  id: number | null;
  name: string;
  instituteName: string;
  specialization: string;
  speciality: string;
  yearStart: number | null;
  yearEnd: number | null;
}

/** Every profile field, normalised. */
export interface UserProfile {
  /** Null when the upstream does not say (callers that need an identity must check). */
  id: number | null;
  username: string;
  firstName: string;
  lastName: string;
  middleName: string;
  gender: string;
  photoPath: string;
  /** Internal identifier of the university system; of no practical use, may be null. */
  studentId: number | null;
  /** Null for an account without a group. */
  group: Group | null;
}

/** Which group fields to return. */
export type GroupSelect = { [K in keyof Group]?: true };

/** Which profile fields to return; `group` takes `true` (all) or a nested selection. */
export interface UserSelect {
  id?: true;
  username?: true;
  firstName?: true;
  lastName?: true;
  middleName?: true;
  gender?: true;
  photoPath?: true;
  studentId?: true;
  group?: true | GroupSelect;
}

/** What the upstream returns when no `select` is sent. */
export const DEFAULT_USER_SELECT = { id: true, username: true, firstName: true, lastName: true } as const;

type SelectedKeys<S> = { [K in keyof S]-?: S[K] extends true | object ? K : never }[keyof S];
type SelectedGroup<G> = (G extends true ? Group : { [K in SelectedKeys<G> & keyof Group]: Group[K] }) | null;

/** The profile with exactly the selected fields; `{ id, username, firstName, lastName }` without a selection. */
export type SelectedUser<S extends UserSelect | undefined> = S extends UserSelect
  ? { [K in SelectedKeys<S> & keyof UserProfile]: K extends 'group' ? SelectedGroup<S[K]> : UserProfile[K] }
  : Pick<UserProfile, keyof typeof DEFAULT_USER_SELECT>;

const nonNull = (input: unknown): Parsed<string> =>
  input === undefined ? { ok: false, reason: 'missing' } : text(input);
const nullableInt = (input: unknown): Parsed<number | null> =>
  input === undefined ? { ok: false, reason: 'missing' } : optionalInt(input);
/** An id that must be present but may be null; anything else must be a positive integer. */
const nullableId = (input: unknown): Parsed<number | null> =>
  input === undefined
    ? { ok: false, reason: 'missing' }
    : input === null
      ? { ok: true, value: null }
      : positiveInt(input);

const groupFields = {
  id: field(nullableId),
  name: field(nonNull),
  instituteName: field(nonNull),
  specialization: field(nonNull),
  speciality: field(nonNull),
  yearStart: field(nullableInt),
  yearEnd: field(nullableInt),
} satisfies Record<keyof Group, z.ZodType>;

const userFields = {
  id: field(nullableId),
  username: field(nonNull),
  firstName: field(nonNull),
  lastName: field(nonNull),
  middleName: field(nonNull),
  gender: field(nonNull),
  photoPath: field(nonNull),
  studentId: field(nullableInt),
} satisfies Record<Exclude<keyof UserProfile, 'group'>, z.ZodType>;

function pickShape<T extends Record<string, z.ZodType>>(fields: T, select: object): Partial<T> {
  const keys = Object.keys(fields).filter((key) => (select as Record<string, unknown>)[key] === true);
  return Object.fromEntries(keys.map((key) => [key, fields[key]])) as Partial<T>;
}

function schemaFor(select: UserSelect): z.ZodType {
  const shape: Record<string, z.ZodType> = { ...pickShape(userFields, select) } as Record<string, z.ZodType>;
  const group = select.group;
  if (group === true) shape.group = z.object(groupFields).nullable();
  else if (isRecord(group))
    shape.group = z.object(pickShape(groupFields, group) as Record<string, z.ZodType>).nullable();
  return z.object(shape);
}

/**
 * Validates a profile response (`{ success: true, user: {...} }`) against the selection that was sent and
 * returns only the selected fields. A missing or malformed selected field is a 'wrong-shape' protocol error.
 */
export function parseUserResponse<S extends UserSelect | undefined = undefined>(
  json: unknown,
  select?: S,
  endpoint: EndpointName = 'me',
): SelectedUser<S> {
  const body = openEnvelope(json, endpoint, ['user']);
  const user = body.user;
  if (!isRecord(user)) return wrongShape(endpoint, '`user` is not an object');
  const result = schemaFor(select ?? DEFAULT_USER_SELECT).safeParse(user);
  if (!result.success) {
    const issue = result.error.issues[0];
    const where = issue?.path.join('.') ?? 'user';
    return wrongShape(endpoint, `user.${where}: ${issue?.message ?? 'invalid'}`);
  }
  return result.data as SelectedUser<S>;
}
