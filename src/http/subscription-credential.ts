/**
 * The university credential of a personal subscription as the API receives it: parsed from the request body,
 * then verified by asking the university whose it is. Neither the value nor the body reaches a message.
 */
import { z } from 'zod';
import type { ServiceContext } from '../runtime/context.ts';
import { UpstreamAuthError, UpstreamError, UpstreamProtocolError } from '../upstream/errors.ts';
import { HttpError } from './errors.ts';

const BODY_HINT = 'body must be JSON {"credential": "<your university token>"}';

const credentialBody = z.object(
  {
    credential: z
      .string({
        error: (issue) => (issue.input === undefined ? 'credential is required' : 'credential must be a string'),
      })
      .trim()
      .min(1, 'credential must not be empty')
      .max(4096, 'credential must be at most 4096 characters')
      // It travels in an HTTP header: anything else could never work (and the client would refuse it).
      .regex(/^[\t\x20-\x7e]+$/, 'credential must be printable ASCII text'),
  },
  { error: BODY_HINT },
);

/** The profile fields a subscription needs: who it is (to check a replacement) and a calendar name. */
export interface Profile {
  id: number;
  firstName: string;
  lastName: string;
  groupName?: string;
}

/** A 503 unless credentials can be stored (a `SECRET_KEY` is configured). */
export function requireSecretKey(ctx: ServiceContext): void {
  if (ctx.config.secretKey === undefined || !ctx.subscriptions.canStoreCredentials) {
    throw new HttpError(503, 'personal subscriptions need SECRET_KEY');
  }
}

/** The credential of a request body, or a 400 naming what is wrong (never echoing the value). */
export function parseCredential(body: unknown): string {
  const result = credentialBody.safeParse(body);
  if (result.success) return result.data.credential;
  const issue = result.error.issues[0];
  const message = issue === undefined || issue.path.length === 0 ? BODY_HINT : issue.message;
  throw new HttpError(400, message);
}

/**
 * Asks the university who this credential belongs to: 401 when it rejects the credential, 502 when it fails.
 * The group name is optional in practice (not every account has a group), so a profile that lacks it is
 * asked for again without it.
 */
export async function verifiedProfile(ctx: ServiceContext, credential: string): Promise<Profile> {
  try {
    return await fetchProfile(ctx, credential);
  } catch (error) {
    if (error instanceof UpstreamAuthError) throw new HttpError(401, 'the university rejected this credential');
    if (error instanceof UpstreamError) throw new HttpError(502, `could not verify the credential: ${error.message}`);
    throw error;
  }
}

async function fetchProfile(ctx: ServiceContext, credential: string): Promise<Profile> {
  try {
    const user = await ctx.upstream.me(credential, {
      id: true,
      firstName: true,
      lastName: true,
      group: { name: true },
    });
    return { id: user.id, firstName: user.firstName, lastName: user.lastName, groupName: user.group.name };
  } catch (error) {
    if (!(error instanceof UpstreamProtocolError) || error.reason !== 'wrong-shape') throw error;
    const user = await ctx.upstream.me(credential, { id: true, firstName: true, lastName: true });
    return { id: user.id, firstName: user.firstName, lastName: user.lastName };
  }
}

/** "Расписание: Иванова Мария (ИВТ-21)", from whatever parts the profile has. */
export function profileCalendarName(profile: Pick<Profile, 'firstName' | 'lastName' | 'groupName'>): string {
  const person = `${profile.lastName} ${profile.firstName}`.replace(/\s+/g, ' ').trim();
  const group = profile.groupName?.trim() ?? '';
  const base = person === '' ? 'Моё расписание' : `Расписание: ${person}`;
  return group === '' ? base : `${base} (${group})`;
}
