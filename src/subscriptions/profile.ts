/**
 * Who a university credential belongs to, asked of the university (`POST /users/@me`), and the calendar name
 * a personal subscription gets from it. The credential never reaches a message.
 */
import type { Config } from '../config.ts';
import type { UniversityClient } from '../upstream/client.ts';
import { UpstreamAuthError, UpstreamError, UpstreamProtocolError } from '../upstream/errors.ts';
import { CredentialCheckError, CredentialRejectedError } from './errors.ts';

/** The profile fields a subscription needs: who it is (to check a replacement) and a calendar name. */
export interface Profile {
  /** Null when the university does not say (some deployments send `id: null`). */
  id: number | null;
  firstName: string;
  lastName: string;
  groupName?: string;
  /** The study group, when the university names it with its id (it may give only a name, or nothing). */
  group?: { id: number; name: string };
}

/** What {@link verifiedProfile} uses: the university for calls made while a person waits. */
export interface ProfileDeps {
  readonly requestUpstream: Pick<UniversityClient, 'me'>;
  readonly config: Pick<Config, 'upstreamRequestWaitMs'>;
}

/**
 * Asks the university who this credential belongs to. Throws {@link CredentialRejectedError} when it rejects
 * the credential and {@link CredentialCheckError} when it fails. A null user id is passed on: the caller ties
 * such a subscription to its credential instead.
 * The group is optional in practice (not every account has one, some deployments send `group: null` or a null
 * group id): a null group is no group, a group with a null id has only its name, and a profile that lacks the
 * key is asked for again without it. A personal timetable is fetched with the credential, so no group id is
 * ever needed for the feed; with one, the group directory learns the group and the page links to its timetable.
 */
export async function verifiedProfile(ctx: ProfileDeps, credential: string): Promise<Profile> {
  try {
    return await fetchProfile(ctx, credential);
  } catch (error) {
    if (error instanceof UpstreamAuthError) throw new CredentialRejectedError({ cause: error });
    if (error instanceof UpstreamError) throw new CredentialCheckError(error);
    throw error;
  }
}

async function fetchProfile(ctx: ProfileDeps, credential: string): Promise<Profile> {
  // Asked while a person waits: a short wait for the shared upstream budget, then 503 (UpstreamBudgetError).
  const options = { budgetWaitMs: ctx.config.upstreamRequestWaitMs };
  let user: {
    id: number | null;
    firstName: string;
    lastName: string;
    group?: { id: number | null; name: string } | null;
  };
  try {
    const select = { id: true, firstName: true, lastName: true, group: { id: true, name: true } } as const;
    user = await ctx.requestUpstream.me(credential, select, options);
  } catch (error) {
    if (!(error instanceof UpstreamProtocolError) || error.reason !== 'wrong-shape') throw error;
    user = await ctx.requestUpstream.me(credential, { id: true, firstName: true, lastName: true }, options);
  }
  const groupName = user.group?.name ?? '';
  const groupId = user.group?.id ?? null;
  return {
    id: user.id,
    firstName: user.firstName,
    lastName: user.lastName,
    ...(groupName ? { groupName } : {}),
    ...(groupName && groupId !== null ? { group: { id: groupId, name: groupName } } : {}),
  };
}

/** "Расписание: Иванова Мария (ИВТ-21)", from whatever parts the profile has. */
export function profileCalendarName(profile: Pick<Profile, 'firstName' | 'lastName' | 'groupName'>): string {
  const person = `${profile.lastName} ${profile.firstName}`.replace(/\s+/g, ' ').trim();
  const group = profile.groupName?.trim() ?? '';
  const base = person === '' ? 'Моё расписание' : `Расписание: ${person}`;
  return group === '' ? base : `${base} (${group})`;
}

/**
 * The heading of a personal page, from its calendar name ({@link profileCalendarName}): the person alone
 * ("Иванова Мария"), since the page already says whose timetable it is and links the group beside it.
 */
export function personalHeading(calendarName: string, groupName?: string): string {
  let text = calendarName.replace(/^Расписание:\s*/, '');
  const group = groupName?.trim() ?? '';
  if (group !== '' && text.endsWith(` (${group})`)) text = text.slice(0, -` (${group})`.length);
  return text.trim() === '' ? calendarName : text.trim();
}
