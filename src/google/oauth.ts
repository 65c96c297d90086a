/**
 * Google OAuth for connecting a calendar: the consent page URL (authorization code flow with PKCE S256,
 * offline access) and the code exchange that yields a refresh token. We ask for the least we need: create
 * secondary calendars and manage only those, plus `openid` for a stable user id (`sub`) to recognise a
 * returning user.
 */
import { createHash, randomBytes } from 'node:crypto';
import { OAuth2Client } from 'google-auth-library';
import type { Config } from '../config.ts';
import { classifyGoogleError } from './classify-error.ts';
import { GoogleConsentError, GoogleNotConfiguredError } from './errors.ts';
import { disableRetries } from './google-calendar.ts';

/** Create secondary calendars and see, edit and delete only those. */
export const CALENDAR_SCOPE = 'https://www.googleapis.com/auth/calendar.app.created';

/** Every scope we request. */
export const OAUTH_SCOPES: readonly string[] = ['openid', CALENDAR_SCOPE];

/** Path of our OAuth callback, below `PUBLIC_URL`. */
export const OAUTH_CALLBACK_PATH = '/google/callback';

/** The settings OAuth reads. */
export type GoogleOAuthConfig = Pick<
  Config,
  'googleClientId' | 'googleClientSecret' | 'googleOauthTokenUrl' | 'googleOauthAuthUrl' | 'publicUrl'
>;

/** A PKCE pair: the verifier stays with us until the callback, the challenge goes to Google. */
export interface PkcePair {
  codeVerifier: string;
  codeChallenge: string;
}

/** What a successful code exchange yields. */
export interface GrantedConsent {
  refreshToken: string;
  /** Google's stable user id (`sub` of the id token), when Google sent an id token. */
  googleUser?: string;
  scopes: string[];
}

/** A fresh PKCE pair (RFC 7636): a 256-bit base64url verifier (43 characters) and its S256 challenge. */
export function pkcePair(): PkcePair {
  const codeVerifier = randomBytes(32).toString('base64url');
  const codeChallenge = createHash('sha256').update(codeVerifier, 'ascii').digest('base64url');
  return { codeVerifier, codeChallenge };
}

/** Our OAuth client at Google: builds consent URLs and exchanges codes. */
export class GoogleOAuth {
  /** Where Google sends the user back: `${publicUrl}/google/callback`. */
  readonly redirectUri: string;
  readonly #clientId: string;
  readonly #authUrl: string;
  readonly #client: OAuth2Client;

  constructor(config: GoogleOAuthConfig) {
    if (config.googleClientId === undefined || config.googleClientSecret === undefined) {
      throw new GoogleNotConfiguredError();
    }
    this.redirectUri = `${config.publicUrl.replace(/\/+$/, '')}${OAUTH_CALLBACK_PATH}`;
    this.#clientId = config.googleClientId;
    this.#authUrl = config.googleOauthAuthUrl;
    this.#client = new OAuth2Client({
      clientId: config.googleClientId,
      clientSecret: config.googleClientSecret,
      redirectUri: this.redirectUri,
      endpoints: { oauth2TokenUrl: config.googleOauthTokenUrl },
      transporterOptions: { timeout: 30_000 },
    });
    disableRetries(this.#client);
  }

  /**
   * The consent page URL. `access_type=offline` and `prompt=consent` make Google return a refresh token
   * even to a user who consented before; no `include_granted_scopes`, so the grant holds only our scopes.
   */
  authorizationUrl(request: { state: string; codeChallenge: string }): string {
    const url = new URL(this.#authUrl);
    const query = {
      client_id: this.#clientId,
      redirect_uri: this.redirectUri,
      response_type: 'code',
      scope: OAUTH_SCOPES.join(' '),
      state: request.state,
      code_challenge: request.codeChallenge,
      code_challenge_method: 'S256',
      access_type: 'offline',
      prompt: 'consent',
    };
    for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value);
    return url.href;
  }

  /**
   * Exchanges the callback's code (with the PKCE verifier) for a refresh token. {@link GoogleConsentError}
   * when Google refuses the code (`invalid_grant`: used, expired, wrong verifier), sends no refresh token,
   * or the user unticked the calendar permission; GoogleTransientError on 5xx, network trouble or timeout.
   */
  async exchangeCode(request: { code: string; codeVerifier: string }): Promise<GrantedConsent> {
    let tokens: { refresh_token?: string | null; id_token?: string | null; scope?: string };
    try {
      ({ tokens } = await this.#client.getToken({
        code: request.code,
        codeVerifier: request.codeVerifier,
        redirect_uri: this.redirectUri,
      }));
    } catch (error) {
      throw classifyGoogleError(error, 'token.exchange');
    }
    const scopes = (tokens.scope ?? '').split(' ').filter((scope) => scope !== '');
    if (!scopes.includes(CALENDAR_SCOPE)) {
      throw new GoogleConsentError(
        'Google token.exchange: the calendar permission was not granted; allow it on the consent page',
      );
    }
    if (typeof tokens.refresh_token !== 'string' || tokens.refresh_token === '') {
      throw new GoogleConsentError(
        'Google token.exchange: Google sent no refresh token; revoke the app in your Google account and connect again',
      );
    }
    const granted: GrantedConsent = { refreshToken: tokens.refresh_token, scopes };
    const googleUser = subjectOf(tokens.id_token);
    if (googleUser !== undefined) granted.googleUser = googleUser;
    return granted;
  }
}

/**
 * The `sub` claim of an id token, read without checking the signature: the token came straight from Google's
 * token endpoint over TLS in answer to our own request, which OpenID Connect Core §3.1.3.7 accepts as proof.
 */
export function subjectOf(idToken: string | null | undefined): string | undefined {
  const payload = idToken?.split('.')[1];
  if (payload === undefined) return undefined;
  try {
    const claims: unknown = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    if (typeof claims !== 'object' || claims === null || !('sub' in claims)) return undefined;
    return typeof claims.sub === 'string' && claims.sub !== '' ? claims.sub : undefined;
  } catch {
    return undefined;
  }
}
