/**
 * The OAuth side of the fake: users and their refresh tokens, access tokens (3599 s), the token endpoint
 * (refresh_token and authorization_code with PKCE) and the consent page.
 */
import { createHash, randomBytes, randomInt } from 'node:crypto';
import { json, oauthError, type Reply } from './reply.ts';

/** The scope this service asks for: create secondary calendars and manage only those. */
export const APP_CREATED_SCOPE = 'https://www.googleapis.com/auth/calendar.app.created';
/** Scopes under which the Calendar API answers (anything else is 403 insufficientPermissions). */
export const CALENDAR_SCOPES: readonly string[] = [APP_CREATED_SCOPE, 'https://www.googleapis.com/auth/calendar'];
/** What `addUser` grants unless told otherwise. */
export const DEFAULT_SCOPES: readonly string[] = ['openid', APP_CREATED_SCOPE];
/** Lifetime of an access token, as Google sets it. */
export const ACCESS_TOKEN_SECONDS = 3599;
const CODE_LIFETIME_MS = 10 * 60_000;

/** Who the consent page logs in as: a user id, `deny`, or undefined for a fresh user each time. */
export interface ConsentChoice {
  who: string | undefined;
  /** When set, the user grants only these of the requested scopes (Google's granular consent). */
  grant: readonly string[] | undefined;
}

interface Grant {
  user: string;
  scopes: string[];
}

interface PendingCode extends Grant {
  redirectUri: string;
  challenge: string | undefined;
  method: string;
  offline: boolean;
  expiresAt: number;
}

/** An authenticated API caller. */
export interface Caller extends Grant {
  accessToken: string;
}

function token(prefix: string): string {
  return `${prefix}${randomBytes(24).toString('base64url')}`;
}

/** A Google-like numeric user id (the id_token `sub`). */
export function randomUserId(): string {
  return `1${String(randomInt(1e9, 1e10 - 1))}${String(randomInt(1e9, 1e10 - 1))}`;
}

/** Users, tokens and codes; the clock is injected. */
export class OAuthState {
  readonly clientId: string;
  readonly clientSecret: string;
  consent: ConsentChoice = { who: undefined, grant: undefined };
  private readonly now: () => number;
  private readonly users = new Set<string>();
  private readonly refreshTokens = new Map<string, Grant>();
  private readonly accessTokens = new Map<string, Grant & { expiresAt: number; refreshToken: string | undefined }>();
  private readonly codes = new Map<string, PendingCode>();

  constructor(clientId: string, clientSecret: string, now: () => number) {
    this.clientId = clientId;
    this.clientSecret = clientSecret;
    this.now = now;
  }

  /** Registers a user (random id when omitted) with a refresh token (random when omitted). */
  addUser(options: { user?: string; refreshToken?: string; scopes?: readonly string[] } = {}): {
    user: string;
    refreshToken: string;
  } {
    const user = options.user ?? randomUserId();
    const refreshToken = options.refreshToken ?? token('1//fake-');
    this.users.add(user);
    this.refreshTokens.set(refreshToken, { user, scopes: [...(options.scopes ?? DEFAULT_SCOPES)] });
    return { user, refreshToken };
  }

  /** Revokes a refresh token and every access token minted from it. */
  revoke(refreshToken: string): boolean {
    const known = this.refreshTokens.delete(refreshToken);
    for (const [access, grant] of this.accessTokens)
      if (grant.refreshToken === refreshToken) this.accessTokens.delete(access);
    return known;
  }

  /** Makes every access token expired, so the client library must refresh on its next 401. */
  expireAccessTokens(): void {
    this.accessTokens.clear();
  }

  /** Known users. */
  userIds(): string[] {
    return [...this.users];
  }

  /** The caller behind `Authorization: Bearer …`, or undefined (missing, unknown, expired, revoked). */
  authenticate(header: string | undefined): Caller | undefined {
    const match = /^Bearer\s+(\S+)$/i.exec(header ?? '');
    const accessToken = match?.[1];
    const grant = accessToken === undefined ? undefined : this.accessTokens.get(accessToken);
    if (!accessToken || !grant || grant.expiresAt <= this.now()) return undefined;
    return { user: grant.user, scopes: grant.scopes, accessToken };
  }

  /** Revokes a refresh or access token (the `/revoke` endpoint). */
  revokeAny(value: string): boolean {
    const access = this.accessTokens.get(value);
    if (access?.refreshToken !== undefined) return this.revoke(access.refreshToken);
    if (access) return this.accessTokens.delete(value);
    return this.revoke(value);
  }

  /** POST to the token endpoint, form fields already parsed. */
  token(form: URLSearchParams, authorization: string | undefined): Reply {
    const client = clientCredentials(form, authorization);
    if (client.id !== this.clientId) return oauthError(401, 'invalid_client', 'The OAuth client was not found.');
    if (client.secret !== this.clientSecret) return oauthError(401, 'invalid_client', 'Unauthorized');
    const grantType = form.get('grant_type');
    if (grantType === 'refresh_token') return this.refresh(form.get('refresh_token') ?? '');
    if (grantType === 'authorization_code') return this.exchange(form);
    return oauthError(400, 'unsupported_grant_type', `Invalid grant_type: ${grantType ?? ''}`);
  }

  private refresh(refreshToken: string): Reply {
    const grant = this.refreshTokens.get(refreshToken);
    if (!grant) return oauthError(400, 'invalid_grant', 'Token has been expired or revoked.');
    return json(200, this.issue(grant, refreshToken, false));
  }

  private exchange(form: URLSearchParams): Reply {
    const code = form.get('code') ?? '';
    const pending = this.codes.get(code);
    this.codes.delete(code); // one-time, even when the exchange fails
    if (!pending || pending.expiresAt <= this.now()) return oauthError(400, 'invalid_grant', 'Malformed auth code.');
    if (form.get('redirect_uri') !== pending.redirectUri)
      return oauthError(400, 'redirect_uri_mismatch', 'Bad Request');
    const verifier = form.get('code_verifier');
    if (pending.challenge !== undefined) {
      if (!verifier) return oauthError(400, 'invalid_grant', 'Missing code verifier.');
      const computed = pending.method === 'S256' ? createHash('sha256').update(verifier).digest('base64url') : verifier;
      if (computed !== pending.challenge) return oauthError(400, 'invalid_grant', 'Invalid code verifier.');
    }
    const refreshToken = pending.offline
      ? this.addUser({ user: pending.user, scopes: pending.scopes }).refreshToken
      : undefined;
    return json(200, this.issue(pending, refreshToken, refreshToken !== undefined));
  }

  private issue(grant: Grant, refreshToken: string | undefined, includeRefresh: boolean): Record<string, unknown> {
    const accessToken = token('ya29.fake-');
    const expiresAt = this.now() + ACCESS_TOKEN_SECONDS * 1000;
    this.accessTokens.set(accessToken, { ...grant, expiresAt, refreshToken });
    const answer: Record<string, unknown> = {
      access_token: accessToken,
      expires_in: ACCESS_TOKEN_SECONDS,
      scope: grant.scopes.join(' '),
      token_type: 'Bearer',
    };
    if (includeRefresh) answer.refresh_token = refreshToken;
    if (grant.scopes.includes('openid')) answer.id_token = this.idToken(grant.user);
    return answer;
  }

  private idToken(user: string): string {
    const now = Math.floor(this.now() / 1000);
    const part = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');
    const payload = {
      iss: 'https://accounts.google.com',
      azp: this.clientId,
      aud: this.clientId,
      sub: user,
      iat: now,
      exp: now + 3600,
    };
    return `${part({ alg: 'RS256', kid: 'fake', typ: 'JWT' })}.${part(payload)}.${randomBytes(32).toString('base64url')}`;
  }

  /** Records an approved consent and answers the one-time code. */
  approve(pending: Omit<PendingCode, 'expiresAt'>): string {
    this.users.add(pending.user);
    const code = token('4/fake-');
    this.codes.set(code, { ...pending, expiresAt: this.now() + CODE_LIFETIME_MS });
    return code;
  }
}

function clientCredentials(
  form: URLSearchParams,
  authorization: string | undefined,
): { id: string | null; secret: string | null } {
  const basic = /^Basic\s+(\S+)$/i.exec(authorization ?? '')?.[1];
  if (basic !== undefined) {
    const decoded = Buffer.from(basic, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    return { id: decodeURIComponent(decoded.slice(0, colon)), secret: decodeURIComponent(decoded.slice(colon + 1)) };
  }
  return { id: form.get('client_id'), secret: form.get('client_secret') };
}
