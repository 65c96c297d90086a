import { describe, expect, it } from 'vitest';
import { APP_CREATED_SCOPE, type FakeGoogle } from '../../testkit/fake-google/index.ts';
import { client, failure, fake, googleError, oauthClient, refresh } from './helpers.ts';

const SCOPES = ['openid', APP_CREATED_SCOPE];
const REDIRECT = 'http://127.0.0.1:9/google/callback';

/** Runs the consent page like a browser that does not follow the redirect; answers the redirect's query. */
async function consent(
  google: FakeGoogle,
  extra: { codeChallenge?: string; accessType?: 'offline' | 'online' } = {},
): Promise<URLSearchParams> {
  const url = oauthClient(google).generateAuthUrl({
    scope: SCOPES,
    state: 'st4te',
    access_type: extra.accessType ?? 'offline',
    prompt: 'consent',
    ...(extra.codeChallenge === undefined
      ? {}
      : { code_challenge: extra.codeChallenge, code_challenge_method: 'S256' as never }),
  });
  expect(url.startsWith(google.authUrl)).toBe(true);
  const answer = await fetch(url, { redirect: 'manual' });
  expect(answer.status).toBe(302);
  const location = new URL(answer.headers.get('location') ?? '');
  expect(`${location.origin}${location.pathname}`).toBe(REDIRECT);
  expect(location.searchParams.get('state')).toBe('st4te');
  return location.searchParams;
}

function sub(idToken: string | null | undefined): unknown {
  const payload = (idToken ?? '').split('.')[1] ?? '';
  return (JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { sub?: unknown }).sub;
}

describe('fake Google: token endpoint', () => {
  it('refreshes a refresh token into an access token of 3599 s with an id_token naming the user', async () => {
    const google = await fake();
    const { user, refreshToken } = google.addUser();
    const tokens = await refresh(google, refreshToken);
    expect(tokens).toMatchObject({ access_token: expect.any(String), token_type: 'Bearer', scope: SCOPES.join(' ') });
    expect((tokens.expiry_date ?? 0) - Date.now()).toBeGreaterThan(3590_000);
    expect(sub(tokens.id_token)).toBe(user);
    expect(google.counts().tokenRequests).toBe(1);
  });

  it('answers invalid_grant once the refresh token is revoked; access tokens minted from it answer 401', async () => {
    const google = await fake();
    const { refreshToken } = google.addUser();
    const cached = client(google, refreshToken);
    await cached.calendars.insert({ requestBody: { summary: 'x' } });
    google.revoke(refreshToken);
    // The library trusts its cached token until expiry_date, so the first sign is the API's 401.
    expect(await failure(cached.calendars.insert({ requestBody: { summary: 'y' } }))).toMatchObject({
      status: 401,
      body: googleError(401, 'authError'),
    });
    const refused = await failure(client(google, refreshToken).calendars.insert({ requestBody: { summary: 'y' } }));
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({ error: 'invalid_grant', error_description: 'Token has been expired or revoked.' });
    expect(google.counts()).toMatchObject({
      total: 2,
      tokenRequests: 2,
      tokenErrors: { '400 invalid_grant': 1 },
      errors: { '401 authError': 1 },
    });
  });

  it('refuses a wrong client secret with 401 invalid_client', async () => {
    const google = await fake();
    const { refreshToken } = google.addUser();
    const refused = await failure(refresh(google, refreshToken, { clientSecret: 'wrong' }));
    expect(refused).toMatchObject({ status: 401, body: { error: 'invalid_client' } });
  });

  it('answers 401 authError for missing or expired access tokens (the library refreshes and retries only when told to)', async () => {
    const google = await fake();
    const { refreshToken } = google.addUser();
    const bare = await fetch(`${google.rootUrl}calendar/v3/calendars/x`);
    expect(bare.status).toBe(401);
    expect(await bare.json()).toEqual({
      error: {
        code: 401,
        message: 'Request had invalid authentication credentials.',
        errors: [{ reason: 'authError', domain: 'global', message: 'Invalid Credentials' }],
        status: 'UNAUTHENTICATED',
      },
    });
    const api = client(google, refreshToken, { forceRefreshOnFailure: true });
    await api.calendars.insert({ requestBody: { summary: 'x' } });
    google.expireAccessTokens();
    await api.calendars.insert({ requestBody: { summary: 'y' } });
    expect(google.counts()).toMatchObject({
      total: 4,
      tokenRequests: 2,
      byMethod: { 'calendars.insert': 2 },
      errors: { '401 authError': 2 },
    });
    google.expireAccessTokens();
    const stale = client(google, refreshToken);
    await stale.calendars.insert({ requestBody: { summary: 'z' } });
    google.expireAccessTokens();
    expect(await failure(stale.calendars.insert({ requestBody: { summary: 'z' } }))).toMatchObject({ status: 401 });
  });

  it('answers 403 insufficientPermissions when the calendar scope was not granted', async () => {
    const google = await fake();
    const api = client(google, google.addUser({ scopes: ['openid'] }).refreshToken);
    expect(await failure(api.calendars.insert({ requestBody: { summary: 'x' } }))).toMatchObject({
      status: 403,
      body: googleError(403, 'insufficientPermissions'),
    });
  });
});

describe('fake Google: consent and code exchange', () => {
  it('exchanges a one-time code with PKCE S256 for a refresh token of the consenting user', async () => {
    const google = await fake();
    google.consentAs('108000000000000000001');
    const auth = oauthClient(google);
    const { codeVerifier, codeChallenge } = await auth.generateCodeVerifierAsync();
    const code = (await consent(google, { codeChallenge: codeChallenge ?? '' })).get('code') ?? '';
    const { tokens } = await auth.getToken({ code, codeVerifier });
    expect(tokens).toMatchObject({ refresh_token: expect.any(String), scope: SCOPES.join(' ') });
    expect(sub(tokens.id_token)).toBe('108000000000000000001');
    await client(google, tokens.refresh_token ?? '').calendars.insert({ requestBody: { summary: 'mine' } });
    expect(google.calendars('108000000000000000001')).toHaveLength(1);
    expect(await failure(auth.getToken({ code, codeVerifier }))).toMatchObject({
      status: 400,
      body: { error: 'invalid_grant' },
    });
  });

  it('refuses a wrong or missing verifier, and a different redirect_uri', async () => {
    const google = await fake();
    const auth = oauthClient(google);
    const { codeChallenge } = await auth.generateCodeVerifierAsync();
    const challenge = codeChallenge ?? '';
    const wrong = (await consent(google, { codeChallenge: challenge })).get('code') ?? '';
    expect(await failure(auth.getToken({ code: wrong, codeVerifier: 'x'.repeat(64) }))).toMatchObject({
      status: 400,
      body: { error: 'invalid_grant' },
    });
    const missing = (await consent(google, { codeChallenge: challenge })).get('code') ?? '';
    expect(await failure(auth.getToken({ code: missing }))).toMatchObject({
      status: 400,
      body: { error: 'invalid_grant' },
    });
    const moved = (await consent(google)).get('code') ?? '';
    expect(await failure(auth.getToken({ code: moved, redirect_uri: 'http://127.0.0.1:9/elsewhere' }))).toMatchObject({
      status: 400,
      body: { error: 'redirect_uri_mismatch' },
    });
  });

  it('a fresh user each time by default; no refresh token without access_type=offline; narrowed grants', async () => {
    const google = await fake();
    const auth = oauthClient(google);
    const a = await auth.getToken({ code: (await consent(google)).get('code') ?? '' });
    const b = await auth.getToken({ code: (await consent(google)).get('code') ?? '' });
    expect(sub(a.tokens.id_token)).not.toBe(sub(b.tokens.id_token));
    const online = await auth.getToken({ code: (await consent(google, { accessType: 'online' })).get('code') ?? '' });
    expect(online.tokens.refresh_token).toBeUndefined();
    google.consentAs(undefined, { grant: ['openid'] });
    const narrow = await consent(google);
    expect(narrow.get('scope')).toBe('openid');
    expect((await auth.getToken({ code: narrow.get('code') ?? '' })).tokens.scope).toBe('openid');
  });

  it('redirects with error=access_denied when the user refuses, and rejects unknown clients', async () => {
    const google = await fake();
    google.consentAs('deny');
    const denied = await consent(google);
    expect(denied.get('error')).toBe('access_denied');
    expect(denied.get('code')).toBeNull();
    const url = new URL(oauthClient(google).generateAuthUrl({ scope: SCOPES }));
    url.searchParams.set('client_id', 'someone-else');
    expect((await fetch(url, { redirect: 'manual' })).status).toBe(401);
  });
});
