/** Shared setup of the fake's own tests: real client libraries pointed at a fake. */
import { calendar, type calendar_v3 } from '@googleapis/calendar';
import { type Credentials, gaxios, OAuth2Client } from 'google-auth-library';
import { expect, onTestFinished } from 'vitest';
import { type FakeGoogle, type FakeGoogleOptions, startFakeGoogle } from '../../testkit/fake-google/index.ts';

/** Starts a fake that is closed after the current test. */
export async function fake(options: FakeGoogleOptions = {}): Promise<FakeGoogle> {
  const google = await startFakeGoogle(options);
  onTestFinished(() => google.close());
  return google;
}

/** An OAuth2Client of the fake's test client. */
export function oauthClient(
  google: FakeGoogle,
  extra: { clientSecret?: string; redirectUri?: string; forceRefreshOnFailure?: boolean } = {},
): OAuth2Client {
  return new OAuth2Client({
    forceRefreshOnFailure: extra.forceRefreshOnFailure ?? false,
    clientId: google.clientId,
    clientSecret: extra.clientSecret ?? google.clientSecret,
    redirectUri: extra.redirectUri ?? 'http://127.0.0.1:9/google/callback',
    endpoints: {
      oauth2TokenUrl: google.tokenUrl,
      oauth2AuthBaseUrl: google.authUrl,
      oauth2RevokeUrl: google.revokeUrl,
    },
  });
}

/** Refreshes `refreshToken` through the library and answers the credentials it got. */
export async function refresh(
  google: FakeGoogle,
  refreshToken: string,
  extra: { clientSecret?: string } = {},
): Promise<Credentials> {
  const auth = oauthClient(google, extra);
  auth.setCredentials({ refresh_token: refreshToken });
  await auth.getAccessToken();
  return auth.credentials;
}

/**
 * A Calendar API client for `refreshToken`; the library's own retries are off unless `retry` is true. The
 * library refreshes on a 401 only without a known expiry, or with `forceRefreshOnFailure`.
 */
export function client(
  google: FakeGoogle,
  refreshToken: string,
  options: { retry?: boolean; timeout?: number; forceRefreshOnFailure?: boolean } = {},
): calendar_v3.Calendar {
  const auth = oauthClient(
    google,
    options.forceRefreshOnFailure === undefined ? {} : { forceRefreshOnFailure: options.forceRefreshOnFailure },
  );
  auth.setCredentials({ refresh_token: refreshToken });
  const extra = options.timeout === undefined ? {} : { timeout: options.timeout };
  return calendar({ version: 'v3', auth, rootUrl: google.rootUrl, retry: options.retry ?? false, ...extra });
}

/** A fresh user with a client and one calendar. */
export async function userWithCalendar(
  google: FakeGoogle,
): Promise<{ api: calendar_v3.Calendar; user: string; refreshToken: string; calendarId: string }> {
  const { user, refreshToken } = google.addUser();
  const api = client(google, refreshToken);
  const created = await api.calendars.insert({ requestBody: { summary: 'Group 4242', timeZone: 'Europe/Moscow' } });
  return { api, user, refreshToken, calendarId: created.data.id ?? '' };
}

/** An event body as our adapter sends it (local time + zone, marker and hash). */
export function eventBody(id: string, overrides: calendar_v3.Schema$Event = {}): calendar_v3.Schema$Event {
  return {
    id,
    summary: `Lecture ${id}`,
    location: 'Room 101',
    description: 'Teacher',
    start: { dateTime: '2025-10-01T09:00:00', timeZone: 'Europe/Moscow' },
    end: { dateTime: '2025-10-01T10:30:00', timeZone: 'Europe/Moscow' },
    extendedProperties: { private: { timetableSync: 'group:4242', timetableSyncHash: 'h1' } },
    reminders: { useDefault: true },
    ...overrides,
  };
}

/** What a failed library call carried: HTTP status, Google's body, headers; throws if the call succeeded. */
export async function failure(
  call: Promise<unknown>,
): Promise<{ status: number | undefined; body: unknown; headers: Headers | undefined; error: unknown }> {
  try {
    await call;
  } catch (error) {
    if (!(error instanceof gaxios.GaxiosError))
      return { status: undefined, body: undefined, headers: undefined, error };
    return { status: error.response?.status, body: error.response?.data, headers: error.response?.headers, error };
  }
  throw new Error('expected the call to fail');
}

/** Google's error body for `status`/`reason` (the shape every API error has), as a matcher. */
export function googleError(status: number, reason: string): unknown {
  const text = expect.any(String) as unknown;
  return { error: { code: status, message: text, errors: [{ domain: text, reason, message: text }], status: text } };
}
