/**
 * A fake Google Calendar API v3 + OAuth server on loopback, for tests and benchmarks: the real client libraries
 * (`@googleapis/calendar` with `rootUrl`, `google-auth-library` with `endpoints.oauth2TokenUrl`) talk to it
 * as to Google. It keeps Google's rules that a sync depends on: deleted events stay as `cancelled` (re-insert
 * 409, second delete 410), PATCH deep-merges, lists page and filter by private extended property, a user may
 * make 600 requests per minute, revoked refresh tokens answer `invalid_grant`, codes need PKCE.
 */
import { CalendarState } from './calendar-state.ts';
import { Counter, type FakeGoogleCounts } from './counts.ts';
import { type FaultRule, Faults, UserQuota } from './faults.ts';
import { OAuthState } from './oauth.ts';
import type { FakeCalendar, FakeEvent } from './resources.ts';
import { type FakeContext, listen, PATHS } from './server.ts';

export type { ApiMethod, FakeGoogleCounts } from './counts.ts';
export type { FaultKind, FaultRule } from './faults.ts';
export { APP_CREATED_SCOPE, DEFAULT_SCOPES } from './oauth.ts';
export type { FakeCalendar, FakeEvent, FakeEventTime } from './resources.ts';

/** Options of {@link startFakeGoogle}; all optional. */
export interface FakeGoogleOptions {
  /** Seed of the fault PRNG; default 1. */
  seed?: number | string;
  /** Per-user limit in any sliding 60 s window; default 600 (Google's). */
  userQuotaPerMinute?: number;
  /**
   * Clock in epoch ms (quota window, token expiry, timestamps); default Date.now. The client library keeps its
   * own clock for expiry: moving this one more than an hour ahead makes cached access tokens answer 401.
   */
  now?: () => number;
  /** Default 'fake-client-id.apps.googleusercontent.com'. */
  clientId?: string;
  /** Default 'fake-client-secret'. */
  clientSecret?: string;
}

/**
 * A running fake. Owner actions and inspection go around the API: they are not counted, never fault, and throw
 * an Error naming what is missing (unknown calendar, never-used event id, second delete).
 */
export interface FakeGoogle {
  /** `http://127.0.0.1:PORT/` (trailing slash), the `rootUrl` of `@googleapis/calendar`. */
  readonly rootUrl: string;
  /** Token endpoint (`endpoints.oauth2TokenUrl`). */
  readonly tokenUrl: string;
  /** Consent page (`endpoints.oauth2AuthBaseUrl`). */
  readonly authUrl: string;
  /** Revocation endpoint (`endpoints.oauth2RevokeUrl`). */
  readonly revokeUrl: string;
  readonly clientId: string;
  readonly clientSecret: string;
  /** Stops the server, dropping open connections. */
  close(): Promise<void>;
  /** Registers a user (random Google id when omitted) with a refresh token (random when omitted). */
  addUser(options?: { user?: string; refreshToken?: string; scopes?: readonly string[] }): {
    user: string;
    refreshToken: string;
  };
  /** Revokes a refresh token and its access tokens: refreshing answers 400 invalid_grant, API calls 401. */
  revoke(refreshToken: string): void;
  /** Expires every access token (the next API call is 401; the library then refreshes once). */
  expireAccessTokens(): void;
  /**
   * Who the consent page logs in as: a user id, 'deny' (redirect with error=access_denied), or undefined (the
   * default: a fresh user each time). `grant` limits the granted scopes to these (granular consent).
   */
  consentAs(who?: string, options?: { grant?: readonly string[] }): void;
  /** Every known user id. */
  users(): string[];
  /** Calendars (of one user), in creation order. */
  calendars(user?: string): FakeCalendar[];
  /** Creates a calendar for `user` as if through the API (not counted). */
  createCalendar(user: string, summary?: string, timeZone?: string): FakeCalendar;
  /** The events of a calendar in insertion order, cancelled ones only with `includeCancelled`. */
  events(calendarId: string, options?: { includeCancelled?: boolean }): FakeEvent[];
  /** One event (cancelled included), or undefined. */
  event(calendarId: string, id: string): FakeEvent | undefined;
  /** The owner deletes the calendar in Google's UI. */
  ownerDeleteCalendar(calendarId: string): void;
  /** The owner edits an event (PATCH semantics, e.g. `{ reminders: { useDefault: false, overrides: […] } }`). */
  ownerEditEvent(calendarId: string, id: string, patch: object): FakeEvent;
  /** The owner deletes an event (it becomes `cancelled`). */
  ownerDeleteEvent(calendarId: string, id: string): void;
  /** The owner adds an event of their own (no marker unless given); `id` optional. */
  ownerInsertEvent(calendarId: string, event: object): FakeEvent;
  /** A snapshot of the request counters. */
  counts(): FakeGoogleCounts;
  /** Zeroes the counters. */
  resetCounts(): void;
  /** Adds a fault rule (see {@link FaultRule}). */
  inject(rule: FaultRule): void;
  /** Delays every answer by `ms`. */
  latency(ms: number): void;
  /** Removes every fault rule and the latency. */
  clearFaults(): void;
  /** Forgets the requests counted against the per-user quota. */
  resetQuota(): void;
}

function calendarView(calendar: FakeCalendar): FakeCalendar {
  const { id, owner, summary, timeZone, description } = calendar;
  return description === undefined ? { id, owner, summary, timeZone } : { id, owner, summary, timeZone, description };
}

/** Runs an owner action or inspection, turning Google's 404 into an error that names what is missing. */
function direct<T>(what: string, action: () => T): T {
  try {
    return action();
  } catch (error) {
    throw new Error(`fake-google: ${what}: ${(error as Error).message}`, { cause: error });
  }
}

function buildApi(ctx: FakeContext): Omit<FakeGoogle, 'rootUrl' | 'tokenUrl' | 'authUrl' | 'revokeUrl' | 'close'> {
  const { state, oauth, faults, counter, quota } = ctx;
  return {
    clientId: oauth.clientId,
    clientSecret: oauth.clientSecret,
    addUser: (options) => oauth.addUser(options),
    revoke: (refreshToken) => void oauth.revoke(refreshToken),
    expireAccessTokens: () => oauth.expireAccessTokens(),
    consentAs: (who, options) => (oauth.consent = { who, grant: options?.grant }),
    users: () => oauth.userIds(),
    calendars: (user) => state.allCalendars(user).map(calendarView),
    createCalendar: (user, summary = 'Calendar', timeZone = 'UTC') => {
      const { id } = state.createCalendar(user, { summary, timeZone }) as { id: string };
      return calendarView(state.calendar(undefined, id));
    },
    events: (calendarId, options) =>
      [...direct(`calendar ${calendarId}`, () => state.calendar(undefined, calendarId)).events.values()]
        .map(({ resource }) => structuredClone(resource) as FakeEvent)
        .filter((event) => options?.includeCancelled === true || event.status !== 'cancelled'),
    event: (calendarId, id) => {
      const entry = direct(`calendar ${calendarId}`, () => state.calendar(undefined, calendarId)).events.get(id);
      return entry === undefined ? undefined : (structuredClone(entry.resource) as FakeEvent);
    },
    ownerDeleteCalendar: (calendarId) =>
      direct(`delete calendar ${calendarId}`, () => state.deleteCalendar(undefined, calendarId)),
    ownerEditEvent: (calendarId, id, patch) =>
      direct(`edit event ${id}`, () => state.patchEvent(undefined, calendarId, id, { ...patch }) as FakeEvent),
    ownerDeleteEvent: (calendarId, id) =>
      direct(`delete event ${id}`, () => state.deleteEvent(undefined, calendarId, id)),
    ownerInsertEvent: (calendarId, event) =>
      direct('insert event', () => state.insertEvent(undefined, calendarId, { ...event }) as FakeEvent),
    counts: () => counter.snapshot(),
    resetCounts: () => counter.reset(),
    inject: (rule) => faults.inject(rule),
    latency: (ms) => {
      faults.latencyMs = ms;
    },
    clearFaults: () => faults.clear(),
    resetQuota: () => quota.reset(),
  };
}

/** Starts a fake Google on 127.0.0.1 (a free port). */
export async function startFakeGoogle(options: FakeGoogleOptions = {}): Promise<FakeGoogle> {
  const now = options.now ?? Date.now;
  const perMinute = options.userQuotaPerMinute ?? 600;
  if (!Number.isSafeInteger(perMinute) || perMinute < 1)
    throw new RangeError('userQuotaPerMinute must be a positive integer');
  const ctx: FakeContext = {
    state: new CalendarState(now),
    oauth: new OAuthState(
      options.clientId ?? 'fake-client-id.apps.googleusercontent.com',
      options.clientSecret ?? 'fake-client-secret',
      now,
    ),
    faults: new Faults(options.seed ?? 1),
    quota: new UserQuota(perMinute, now),
    counter: new Counter(),
  };
  const server = await listen(ctx, '127.0.0.1');
  return {
    rootUrl: `${server.origin}/`,
    tokenUrl: `${server.origin}${PATHS.token}`,
    authUrl: `${server.origin}${PATHS.auth}`,
    revokeUrl: `${server.origin}${PATHS.revoke}`,
    close: () => server.close(),
    ...buildApi(ctx),
  };
}
