// Google OAuth against the fake Google server: the consent URL, the code exchange with PKCE, and refusals.
import { createHash } from 'node:crypto';
import { inspect } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { GoogleConsentError, GooglePermanentError, GoogleTransientError } from '../../src/google/errors.ts';
import { createGoogleCalendar } from '../../src/google/google-calendar.ts';
import {
  CALENDAR_SCOPE,
  GoogleOAuth,
  type GoogleOAuthConfig,
  OAUTH_SCOPES,
  pkcePair,
  subjectOf,
} from '../../src/google/oauth.ts';
import { type FakeGoogle, startFakeGoogle } from '../../testkit/fake-google/index.ts';

let fake: FakeGoogle;
let config: GoogleOAuthConfig;
let oauth: GoogleOAuth;

beforeAll(async () => {
  fake = await startFakeGoogle();
  config = {
    googleClientId: fake.clientId,
    googleClientSecret: fake.clientSecret,
    googleOauthTokenUrl: fake.tokenUrl,
    googleOauthAuthUrl: fake.authUrl,
    publicUrl: 'https://timetable.example.org/',
  };
  oauth = new GoogleOAuth(config);
});
afterAll(() => fake.close());
afterEach(() => {
  fake.clearFaults();
  fake.consentAs(undefined);
});

/** Visits the consent page as a browser would and answers the query of the redirect back to us. */
async function consent(url: string): Promise<URLSearchParams> {
  const response = await fetch(url, { redirect: 'manual' });
  expect(response.status).toBe(302);
  const location = new URL(response.headers.get('location') ?? '');
  expect(`${location.origin}${location.pathname}`).toBe(oauth.redirectUri);
  return location.searchParams;
}

/** A consent as far as the code: the code, and the verifier of its challenge. */
async function codeFor(state = 'state-1'): Promise<{ code: string; codeVerifier: string }> {
  const { codeVerifier, codeChallenge } = pkcePair();
  const back = await consent(oauth.authorizationUrl({ state, codeChallenge }));
  expect(back.get('state')).toBe(state);
  return { code: back.get('code') ?? '', codeVerifier };
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => expect.unreachable('expected a rejection'),
    (error: unknown) => error,
  );
}

describe('pkcePair', () => {
  it('is a 43-character base64url verifier and its S256 challenge, fresh each time', () => {
    const { codeVerifier, codeChallenge } = pkcePair();
    expect(codeVerifier).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(codeChallenge).toBe(createHash('sha256').update(codeVerifier).digest('base64url'));
    expect(pkcePair().codeVerifier).not.toBe(codeVerifier);
  });
});

describe('authorizationUrl', () => {
  it('asks for offline access to app-created calendars with PKCE S256, back to our callback', () => {
    expect(oauth.redirectUri).toBe('https://timetable.example.org/google/callback');
    const url = new URL(oauth.authorizationUrl({ state: 'abc', codeChallenge: 'challenge' }));
    expect(`${url.origin}${url.pathname}`).toBe(fake.authUrl);
    expect(Object.fromEntries(url.searchParams)).toEqual({
      client_id: fake.clientId,
      redirect_uri: 'https://timetable.example.org/google/callback',
      response_type: 'code',
      scope: `openid ${CALENDAR_SCOPE}`,
      state: 'abc',
      code_challenge: 'challenge',
      code_challenge_method: 'S256',
      access_type: 'offline',
      prompt: 'consent',
    });
    expect(OAUTH_SCOPES).toEqual(['openid', 'https://www.googleapis.com/auth/calendar.app.created']);
  });
});

describe('exchangeCode', () => {
  it('yields a refresh token that works, the Google user id and the granted scopes', async () => {
    const { user } = fake.addUser();
    fake.consentAs(user);
    const granted = await oauth.exchangeCode(await codeFor());
    expect(granted).toMatchObject({ googleUser: user, scopes: ['openid', CALENDAR_SCOPE] });
    const calendarConfig = { ...config, googleApiRootUrl: fake.rootUrl };
    const created = await createGoogleCalendar(
      calendarConfig,
      granted.refreshToken,
      async () => undefined,
    ).createCalendar('Mine', 'UTC');
    expect(fake.calendars(user).map((calendar) => calendar.id)).toEqual([created.id]);
  });

  it('a code works once: a replay is GoogleConsentError (invalid_grant)', async () => {
    const code = await codeFor();
    await oauth.exchangeCode(code);
    expect(await rejection(oauth.exchangeCode(code))).toMatchObject({
      name: 'GoogleConsentError',
      status: 400,
      reason: 'invalid_grant',
    });
  });

  it('a verifier that does not match the challenge is refused, and neither code nor verifier is in the error', async () => {
    const { code } = await codeFor();
    const codeVerifier = pkcePair().codeVerifier;
    const error = await rejection(oauth.exchangeCode({ code, codeVerifier }));
    expect(error).toBeInstanceOf(GoogleConsentError);
    const printed = inspect(error, { depth: 20 });
    expect(printed).not.toContain(code);
    expect(printed).not.toContain(codeVerifier);
  });

  it('a user who unticks the calendar permission: GoogleConsentError', async () => {
    fake.consentAs(undefined, { grant: ['openid'] });
    const error = await rejection(oauth.exchangeCode(await codeFor()));
    expect(error).toBeInstanceOf(GoogleConsentError);
    expect((error as Error).message).toContain('calendar permission was not granted');
  });

  it('a denied consent comes back with error=access_denied and our state', async () => {
    fake.consentAs('deny');
    const back = await consent(oauth.authorizationUrl({ state: 'xyz', codeChallenge: pkcePair().codeChallenge }));
    expect(Object.fromEntries(back)).toEqual({ error: 'access_denied', state: 'xyz' });
  });

  it('a token endpoint failure is transient, after one request (no library retries)', async () => {
    const code = await codeFor();
    fake.inject({ kind: '503', methods: ['token'] });
    fake.resetCounts();
    expect(await rejection(oauth.exchangeCode(code))).toBeInstanceOf(GoogleTransientError);
    expect(fake.counts().tokenRequests).toBe(1);
  });

  it('a wrong client secret is GooglePermanentError (invalid_client)', async () => {
    const wrong = new GoogleOAuth({ ...config, googleClientSecret: 'wrong' });
    const error = await rejection(wrong.exchangeCode(await codeFor()));
    expect(error).toBeInstanceOf(GooglePermanentError);
    expect(error).toMatchObject({ status: 401, reason: 'invalid_client' });
  });
});

describe('subjectOf', () => {
  const jwt = (payload: unknown): string => `e30.${Buffer.from(JSON.stringify(payload)).toString('base64url')}.sig`;
  it('reads sub from an id token payload, and nothing from anything else', () => {
    expect(subjectOf(jwt({ sub: '1234567890' }))).toBe('1234567890');
    expect(subjectOf(jwt({ sub: 42 }))).toBeUndefined();
    expect(subjectOf(jwt({}))).toBeUndefined();
    expect(subjectOf('not-a-jwt')).toBeUndefined();
    expect(subjectOf('a.%%%.c')).toBeUndefined();
    expect(subjectOf(undefined)).toBeUndefined();
  });
});
