/**
 * {@link CalendarClient} over Google Calendar API v3 (`@googleapis/calendar` with a `google-auth-library`
 * OAuth2 client holding one refresh token). The libraries' own retries are off, so that every HTTP request is
 * one we asked for, counted by `beforeRequest` and classified by `classify-error.ts`; retrying is the job's
 * business (BullMQ backoff, rate limits, quota pauses).
 */
import { calendar, type calendar_v3 } from '@googleapis/calendar';
import { OAuth2Client } from 'google-auth-library';
import type { Config } from '../config.ts';
import type { DesiredEvent } from '../push/desired-events.ts';
import type {
  BeforeRequest,
  CalendarClient,
  CalendarInfo,
  DeleteOutcome,
  EventMarker,
  RemoteEvent,
} from './calendar-client.ts';
import { classifyGoogleError, type GoogleOperation, isAccessTokenRejected } from './classify-error.ts';
import { CalendarGoneError, EventMissingError, GoogleNotConfiguredError } from './errors.ts';
import { HASH_KEY, MARKER_KEY } from './event-marker.ts';

/** The settings the adapter reads. */
export type GoogleCalendarConfig = Pick<
  Config,
  'googleClientId' | 'googleClientSecret' | 'googleApiRootUrl' | 'googleOauthTokenUrl'
>;

/** Tuning for tests; production uses the defaults. */
export interface GoogleCalendarOptions {
  /** Per-request timeout, token requests included; default {@link GOOGLE_REQUEST_TIMEOUT_MS}. */
  timeoutMs?: number;
  /** `maxResults` of each list page; default {@link LIST_PAGE_SIZE} (Google's maximum). */
  pageSize?: number;
}

/** How long one request may take before it counts as a transient failure. */
export const GOOGLE_REQUEST_TIMEOUT_MS = 30_000;

/** Events per list page: Google's maximum, so that a reconcile costs as few requests as possible. */
export const LIST_PAGE_SIZE = 2500;

/** Only what we read back: a sync needs ids, status and our private properties, nothing else. */
const EVENT_FIELDS = 'id,status,extendedProperties/private';
const LIST_FIELDS = `items(${EVENT_FIELDS}),nextPageToken`;
const CALENDAR_FIELDS = 'id,summary,timeZone';

/**
 * A {@link CalendarClient} acting as the Google user who granted `refreshToken`. `beforeRequest` is awaited
 * before every API request (each list page too; token refreshes are not API requests). Every method is one
 * request, except that a 401 on the API is retried once after a forced token refresh: an access token can
 * be invalidated before its expiry, and only a 401 with a fresh token means the grant is gone.
 */
export function createGoogleCalendar(
  config: GoogleCalendarConfig,
  refreshToken: string,
  beforeRequest: BeforeRequest,
  options: GoogleCalendarOptions = {},
): CalendarClient {
  return new GoogleCalendar(config, refreshToken, beforeRequest, options);
}

class GoogleCalendar implements CalendarClient {
  readonly #auth: OAuth2Client;
  readonly #api: calendar_v3.Calendar;
  readonly #refreshToken: string;
  readonly #beforeRequest: BeforeRequest;
  readonly #pageSize: number;

  constructor(
    config: GoogleCalendarConfig,
    refreshToken: string,
    beforeRequest: BeforeRequest,
    options: GoogleCalendarOptions,
  ) {
    const timeout = options.timeoutMs ?? GOOGLE_REQUEST_TIMEOUT_MS;
    this.#auth = authClient(config, refreshToken, timeout);
    this.#api = calendar({ version: 'v3', auth: this.#auth, rootUrl: config.googleApiRootUrl, retry: false, timeout });
    this.#refreshToken = refreshToken;
    this.#beforeRequest = beforeRequest;
    this.#pageSize = options.pageSize ?? LIST_PAGE_SIZE;
  }

  async createCalendar(summary: string, timeZone: string): Promise<CalendarInfo> {
    const response = await this.#call('calendars.insert', () =>
      this.#api.calendars.insert({ requestBody: { summary, timeZone }, fields: CALENDAR_FIELDS }),
    );
    return calendarInfo(response.data);
  }

  async getCalendar(calendarId: string): Promise<CalendarInfo> {
    const response = await this.#call('calendars.get', () =>
      this.#api.calendars.get({ calendarId, fields: CALENDAR_FIELDS }),
    );
    return calendarInfo(response.data);
  }

  async renameCalendar(calendarId: string, summary: string): Promise<CalendarInfo> {
    // PATCH: only the summary changes; the owner's description, colour and sharing stay.
    const response = await this.#call('calendars.patch', () =>
      this.#api.calendars.patch({ calendarId, requestBody: { summary }, fields: CALENDAR_FIELDS }),
    );
    return calendarInfo(response.data);
  }

  async deleteCalendar(calendarId: string): Promise<void> {
    try {
      await this.#call('calendars.delete', () => this.#api.calendars.delete({ calendarId }));
    } catch (error) {
      // Already gone (404/410) leaves things as we want them.
      if (!(error instanceof CalendarGoneError)) throw error;
    }
  }

  async insertEvent(calendarId: string, event: DesiredEvent, marker: EventMarker): Promise<void> {
    const requestBody = { id: event.id, ...ownedBody(event, marker), reminders: remindersOf(event, 'insert') };
    await this.#call('events.insert', () => this.#api.events.insert({ calendarId, requestBody, fields: 'id' }));
  }

  async getEvent(calendarId: string, eventId: string): Promise<RemoteEvent | undefined> {
    try {
      const response = await this.#call('events.get', () =>
        this.#api.events.get({ calendarId, eventId, fields: EVENT_FIELDS }),
      );
      return remoteEvent(response.data, MARKER_KEY);
    } catch (error) {
      if (error instanceof EventMissingError) return undefined;
      throw error;
    }
  }

  async patchEvent(calendarId: string, event: DesiredEvent, marker: EventMarker): Promise<void> {
    // PATCH merges objects key by key: the owner's colour and other private properties survive, and so do
    // their reminders unless the target follows feed options (then the reminders are ours).
    const reminders = event.fields.reminder === undefined ? {} : { reminders: remindersOf(event, 'patch') };
    const requestBody = { ...ownedBody(event, marker), ...reminders };
    await this.#call('events.patch', () =>
      this.#api.events.patch({ calendarId, eventId: event.id, requestBody, fields: 'id' }),
    );
  }

  async reviveEvent(calendarId: string, event: DesiredEvent, marker: EventMarker): Promise<void> {
    // A cancelled event keeps its id forever; PUT (update) is the only way to bring that id back.
    const requestBody = {
      id: event.id,
      ...ownedBody(event, marker),
      reminders: remindersOf(event, 'insert'),
      status: 'confirmed',
    };
    await this.#call('events.update', () =>
      this.#api.events.update({ calendarId, eventId: event.id, requestBody, fields: 'id' }),
    );
  }

  async deleteEvent(calendarId: string, eventId: string): Promise<DeleteOutcome> {
    try {
      await this.#call('events.delete', () => this.#api.events.delete({ calendarId, eventId }));
      return 'deleted';
    } catch (error) {
      // 410 (already deleted) leaves the calendar as we want it. So does 404 (never there), as cal.com assumes,
      // except that Google answers 404 for every event of a deleted calendar too: the caller may check that.
      if (!(error instanceof EventMissingError)) throw error;
      return error.status === 410 ? 'gone' : 'missing';
    }
  }

  async *listMarkedEvents(calendarId: string, marker: EventMarker): AsyncIterable<RemoteEvent[]> {
    let pageToken: string | undefined;
    do {
      const params = listParams(calendarId, marker, this.#pageSize, pageToken);
      const response = await this.#call('events.list', () => this.#api.events.list(params));
      // The query matched on the marker, so every item carries it even if Google strips a cancelled one.
      yield (response.data.items ?? []).map((item) => ({
        markerValue: marker.value,
        ...remoteEvent(item, marker.key),
      }));
      pageToken = response.data.nextPageToken ?? undefined;
    } while (pageToken !== undefined);
  }

  /** One API request after `beforeRequest`, failures classified; a 401 once more with a freshly refreshed token. */
  async #call<T>(operation: GoogleOperation, send: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt += 1) {
      await this.#beforeRequest();
      try {
        return await send();
      } catch (error) {
        if (attempt === 1 && isAccessTokenRejected(error)) {
          this.#auth.setCredentials({ refresh_token: this.#refreshToken });
          continue;
        }
        throw classifyGoogleError(error, operation);
      }
    }
  }
}

/** The OAuth2 client: our token URL, our timeout, and no retries of token requests either. */
function authClient(config: GoogleCalendarConfig, refreshToken: string, timeout: number): OAuth2Client {
  if (config.googleClientId === undefined || config.googleClientSecret === undefined) {
    throw new GoogleNotConfiguredError();
  }
  const auth = new OAuth2Client({
    clientId: config.googleClientId,
    clientSecret: config.googleClientSecret,
    endpoints: { oauth2TokenUrl: config.googleOauthTokenUrl },
    transporterOptions: { timeout },
  });
  disableRetries(auth);
  auth.setCredentials({ refresh_token: refreshToken });
  return auth;
}

/**
 * The auth library asks for retries on its token requests (`retry: true` per request, overriding client
 * defaults); an interceptor runs after that merge, so it has the last word.
 */
export function disableRetries(auth: OAuth2Client): void {
  auth.transporter.interceptors.request.add({
    resolved: async (request) => {
      request.retry = false;
      delete request.retryConfig;
      return request;
    },
  });
}

/** The owned fields with our marker and digest; the private properties merge into the event's on PATCH. */
function ownedBody(event: DesiredEvent, marker: EventMarker): calendar_v3.Schema$Event {
  const { summary, location, description, start, end } = event.fields;
  return {
    summary,
    location,
    description,
    start: { ...start },
    end: { ...end },
    extendedProperties: { private: { [marker.key]: marker.value, [HASH_KEY]: event.hash } },
  };
}

/**
 * The reminders an event is written with: one popup of ours, none (an empty override list: a cancelled class), or
 * the calendar's default (also for a target whose reminders are not ours, at insert: the user's own changes come
 * after). A PATCH merges the object key by key (an array replaces the one before), so going back to the default
 * clears our override with `overrides: null`: Google refuses default reminders and overrides together
 * (`cannotUseDefaultRemindersAndSpecifyOverride`).
 */
function remindersOf(event: DesiredEvent, write: 'insert' | 'patch'): EventReminders {
  const { reminder } = event.fields;
  if (typeof reminder === 'number') return { useDefault: false, overrides: [{ method: 'popup', minutes: reminder }] };
  if (reminder === 'none') return { useDefault: false, overrides: [] };
  // null is how a PATCH deletes a field; the SDK's types know only values.
  const cleared = null as unknown as calendar_v3.Schema$EventReminder[];
  return write === 'patch' ? { useDefault: true, overrides: cleared } : { useDefault: true };
}

type EventReminders = NonNullable<calendar_v3.Schema$Event['reminders']>;

function listParams(
  calendarId: string,
  marker: EventMarker,
  maxResults: number,
  pageToken: string | undefined,
): calendar_v3.Params$Resource$Events$List {
  const params: calendar_v3.Params$Resource$Events$List = {
    calendarId,
    privateExtendedProperty: [`${marker.key}=${marker.value}`],
    showDeleted: true,
    maxResults,
    fields: LIST_FIELDS,
  };
  if (pageToken !== undefined) params.pageToken = pageToken;
  return params;
}

/** An API event reduced to what a sync needs. */
function remoteEvent(event: calendar_v3.Schema$Event, markerKey: string): RemoteEvent {
  const properties = event.extendedProperties?.private ?? {};
  const remote: RemoteEvent = { id: event.id ?? '', cancelled: event.status === 'cancelled' };
  const markerValue = properties[markerKey];
  const hash = properties[HASH_KEY];
  if (markerValue !== undefined) remote.markerValue = markerValue;
  if (hash !== undefined) remote.hash = hash;
  return remote;
}

function calendarInfo(data: calendar_v3.Schema$Calendar): CalendarInfo {
  const info: CalendarInfo = { id: data.id ?? '', summary: data.summary ?? '' };
  if (typeof data.timeZone === 'string') info.timeZone = data.timeZone;
  return info;
}
