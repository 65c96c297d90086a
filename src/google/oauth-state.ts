/**
 * Pending Google consents. `GET /google/connect` stores what the callback will need (the source and the PKCE
 * verifier) under the SHA-256 of a random `state`, for ten minutes; the callback takes it back exactly once.
 * Neither the state nor the verifier is stored in plain text under a guessable key, and neither is logged.
 */
import type { RedisClient } from '../lib/redis-target.ts';
import { constantTimeEqual, hashToken, randomToken } from '../security/tokens.ts';
import type { RedisKeys } from '../store/keys.ts';
import { savePendingConsent, takePendingConsent } from '../store/oauth-states.ts';
import type { SourceKey } from '../timetable/source.ts';
import type { SubscriberOptions } from '../timetable/types.ts';
import { ConsentCallbackError, GoogleNotConfiguredError } from './errors.ts';
import type { GoogleServices } from './google-services.ts';
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
  /** Digest of the nonce the starting browser holds in a cookie; the callback must bring the same nonce. */
  browserHash: string;
  /**
   * The feed options the calendar is to follow (validated when the consent started); absent: none given, and a
   * target the consent reconnects keeps its own.
   */
  options?: SubscriberOptions;
  /** The options a new target follows when `options` are absent (see `GoogleConnectRequest`). */
  newTargetOptions?: SubscriberOptions;
}

/** A consent just started: where to send the browser, and what the browser must keep until the callback. */
export interface StartedConsent {
  /** Google's consent page. */
  url: string;
  /** The state the callback will bring back (names the browser's cookie). */
  state: string;
  /** The nonce the browser keeps in an HttpOnly cookie. */
  browserNonce: string;
}

/** What {@link takeConsent} uses: where pending consents are kept. */
export interface ConsentStateDeps {
  readonly redis: RedisClient;
  readonly keys: RedisKeys;
}

/** What {@link createConsent} uses: also the OAuth client and the clock. */
export interface ConsentDeps extends ConsentStateDeps {
  readonly google: Pick<GoogleServices, 'configured' | 'oauth'>;
  /** Epoch ms. */
  readonly now: () => number;
}

/**
 * Starts a consent for `source` (already validated and authorised by the caller) with the options its target is
 * to follow: stores the pending consent and answers the URL of Google's consent page with the nonce the browser
 * must keep. Throws GoogleNotConfiguredError without OAuth client settings.
 */
export async function createConsent(
  ctx: ConsentDeps,
  source: SourceKey,
  chosen: Pick<PendingConsent, 'options' | 'newTargetOptions'> = {},
): Promise<StartedConsent> {
  const { options, newTargetOptions } = chosen;
  const oauth = ctx.google.oauth;
  if (!ctx.google.configured || oauth === undefined) throw new GoogleNotConfiguredError();
  const state = randomToken();
  const browserNonce = randomToken();
  const { codeVerifier, codeChallenge } = pkcePair();
  const pending: PendingConsent = {
    source,
    codeVerifier,
    startedAt: ctx.now(),
    browserHash: hashToken(browserNonce),
    ...(options === undefined ? {} : { options }),
    ...(newTargetOptions === undefined ? {} : { newTargetOptions }),
  };
  await savePendingConsent(ctx.redis, ctx.keys, hashToken(state), JSON.stringify(pending), CONSENT_TTL_SECONDS);
  return { url: oauth.authorizationUrl({ state, codeChallenge }), state, browserNonce };
}

/**
 * Takes the pending consent of `state` (GETDEL: a replayed callback finds nothing) for the browser holding
 * `browserNonce`. Throws {@link ConsentCallbackError} when the state is malformed, unknown, expired or already
 * used, or was started in another browser (the state is used up then too: a lured victim's click spends it).
 */
export async function takeConsent(
  ctx: ConsentStateDeps,
  state: string,
  browserNonce: string | undefined,
): Promise<PendingConsent> {
  if (!STATE_FORMAT.test(state)) throw new ConsentCallbackError('malformed consent state');
  const stored = await takePendingConsent(ctx.redis, ctx.keys, hashToken(state));
  if (stored === undefined)
    throw new ConsentCallbackError('unknown, expired or already used consent state: start again at /google/connect');
  const pending = parsePending(stored);
  if (browserNonce === undefined || !constantTimeEqual(hashToken(browserNonce), pending.browserHash)) {
    throw new ConsentCallbackError(
      'this consent was started in another browser, or its cookie was blocked or expired: nothing was connected; start again at /google/connect in this browser',
    );
  }
  return pending;
}

/** A stored pending consent; a record we cannot read counts as unknown (it was not written by this code). */
function parsePending(stored: string): PendingConsent {
  try {
    const value = JSON.parse(stored) as Partial<PendingConsent>;
    if (
      typeof value.source === 'string' &&
      typeof value.codeVerifier === 'string' &&
      typeof value.startedAt === 'number' &&
      typeof value.browserHash === 'string'
    ) {
      const { source, codeVerifier, startedAt, browserHash, options, newTargetOptions } = value;
      const kept = {
        ...(isOptions(options) ? { options } : {}),
        ...(isOptions(newTargetOptions) ? { newTargetOptions } : {}),
      };
      return { source, codeVerifier, startedAt, browserHash, ...kept };
    }
  } catch {
    // Falls through to the error below.
  }
  throw new ConsentCallbackError('unreadable consent state: start again at /google/connect');
}

/** Options as this code stored them: an object (validated when stored); anything else is dropped. */
function isOptions(value: unknown): value is SubscriberOptions {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
