/**
 * Pending Google consents. `GET /google/connect` stores what the callback will need (the source and the PKCE
 * verifier) under the SHA-256 of a random `state`, for ten minutes; the callback takes it back exactly once.
 * Neither the state nor the verifier is stored in plain text under a guessable key, and neither is logged.
 */
import type { ServiceContext } from '../runtime/context.ts';
import { hashToken, randomToken } from '../security/tokens.ts';
import type { SourceKey } from '../sources/source.ts';
import { ConsentCallbackError, GoogleNotConfiguredError } from './errors.ts';
import { pkcePair } from './oauth.ts';

/** How long a consent may take, from the redirect to Google until the callback (seconds). */
export const CONSENT_TTL_SECONDS = 600;

/** A `state` we issue: 32 random bytes in base64url. Anything else is refused before Redis is asked. */
const STATE_FORMAT = /^[A-Za-z0-9_-]{43}$/;

/** What a consent in progress remembers until its callback. */
export interface PendingConsent {
  source: SourceKey;
  /** The PKCE verifier whose challenge went to Google. */
  codeVerifier: string;
  /** Epoch ms when the consent started. */
  startedAt: number;
}

/** The parts of the context the consent state uses. */
export type ConsentContext = Pick<ServiceContext, 'redis' | 'keys' | 'google' | 'now'>;

/**
 * Starts a consent for `source` (already validated and authorised by the caller): stores the pending consent
 * and answers the URL of Google's consent page. Throws GoogleNotConfiguredError without OAuth client settings.
 */
export async function createConsent(ctx: ConsentContext, source: SourceKey): Promise<string> {
  const oauth = ctx.google.oauth;
  if (!ctx.google.configured || oauth === undefined) throw new GoogleNotConfiguredError();
  const state = randomToken();
  const { codeVerifier, codeChallenge } = pkcePair();
  const pending: PendingConsent = { source, codeVerifier, startedAt: ctx.now() };
  await ctx.redis.set(ctx.keys.googleOAuthState(hashToken(state)), JSON.stringify(pending), 'EX', CONSENT_TTL_SECONDS);
  return oauth.authorizationUrl({ state, codeChallenge });
}

/**
 * Takes the pending consent of `state` (GETDEL: a replayed callback finds nothing). Throws
 * {@link ConsentCallbackError} when the state is malformed, unknown, expired or already used.
 */
export async function takeConsent(ctx: Pick<ServiceContext, 'redis' | 'keys'>, state: string): Promise<PendingConsent> {
  if (!STATE_FORMAT.test(state)) throw new ConsentCallbackError('malformed consent state');
  const stored = await ctx.redis.getdel(ctx.keys.googleOAuthState(hashToken(state)));
  if (stored === null)
    throw new ConsentCallbackError('unknown, expired or already used consent state: start again at /google/connect');
  return parsePending(stored);
}

/** A stored pending consent; a record we cannot read counts as unknown (it was not written by this code). */
function parsePending(stored: string): PendingConsent {
  try {
    const value = JSON.parse(stored) as Partial<PendingConsent>;
    if (
      typeof value.source === 'string' &&
      typeof value.codeVerifier === 'string' &&
      typeof value.startedAt === 'number'
    ) {
      return { source: value.source, codeVerifier: value.codeVerifier, startedAt: value.startedAt };
    }
  } catch {
    // Falls through to the error below.
  }
  throw new ConsentCallbackError('unreadable consent state: start again at /google/connect');
}
