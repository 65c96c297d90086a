/**
 * Our own view of a CalDAV server (RFC 4791): one account, already given its login and app password. The rest of
 * the service talks to this interface only; `dav-client.ts` implements it (tsdav for discovery and XML, undici for
 * the conditional writes whose status and ETag tsdav hides), and tests may implement it over anything.
 *
 * Every URL here is absolute: servers answer hrefs relative to the request (Radicale, Sabre) or absolute on
 * another host (iCloud's partition hosts, `https://p62-caldav.icloud.com:443/…`), and the adapter resolves each
 * against the URL it asked. Every method is one or a few HTTP requests and throws the typed errors of
 * `errors.ts`.
 */

/** A login and an app password (never logged, kept sealed with SECRET_KEY at rest). */
export interface CalDavCredentials {
  username: string;
  password: string;
}

/** A calendar collection. */
export interface CalDavCalendar {
  /** Absolute URL of the collection, ending in `/`. */
  url: string;
  displayName: string;
  /** `CS:getctag`, when the server offers it: changes whenever any resource in the collection changes. */
  ctag?: string | undefined;
  /** `DAV:sync-token`, when the server offers RFC 6578 sync-collection on this collection. */
  syncToken?: string | undefined;
  /** Whether `supported-report-set` lists sync-collection. */
  supportsSync: boolean;
  /** Whether its supported components include VEVENT (a tasks-only list is no place for classes). */
  holdsEvents: boolean;
}

/** What discovery found for an account (RFC 6764 well-known URL, current-user-principal, calendar-home-set). */
export interface Discovery {
  principalUrl: string;
  /** The calendar home, where MKCALENDAR makes a calendar of our own. */
  homeUrl: string;
  calendars: CalDavCalendar[];
}

/** A resource as the server holds it, reduced to what a sync needs. */
export interface RemoteResource {
  /** Absolute URL. */
  href: string;
  /** The ETag as the server sent it (quotes kept); '' when the server sent none (Sabre after altering data). */
  etag: string;
  /** The resource's text, when it was read (a GET or a calendar-multiget), else undefined. */
  ics?: string | undefined;
  /** The VEVENT's UID, when read. */
  uid?: string | undefined;
  /** `X-TIMETABLE-SYNC-SOURCE` of the VEVENT (the source key), when read and present: the resource is ours. */
  markerValue?: string | undefined;
  /** `X-TIMETABLE-SYNC-HASH` of the VEVENT (our digest of the fields we own), when read and present. */
  hash?: string | undefined;
}

/**
 * What changed in a collection: with a sync token the server knew, the resources changed and the hrefs removed
 * since (`full: false`); without one, or when the server refused it (403 valid-sync-token, 507 on a large
 * calendar) or offers no sync-collection, every resource (`full: true`, `removed` empty). Only resources whose
 * name is one of ours (`tts-*.ics`) come with their text; the others only with href and ETag.
 */
export interface Listing {
  resources: RemoteResource[];
  removed: string[];
  full: boolean;
  /** The new sync token, to ask with next time. */
  syncToken?: string | undefined;
  ctag?: string | undefined;
}

/** The outcome of a conditional delete: deleted now, or not there (404/410). */
export type RemoveOutcome = 'deleted' | 'missing';

/** One CalDAV account. */
export interface CalDavClient {
  /**
   * Discovers the account from a server URL (`https://caldav.yandex.ru`) or a calendar URL, and so proves the
   * password: {@link CalDavAuthError} on 401.
   */
  discover(serverOrCalendarUrl: string): Promise<Discovery>;
  /**
   * Creates a calendar of our own under `homeUrl` (MKCALENDAR; the slug names the collection), with a display
   * name and an Apple `calendar-color`: {@link MkcalendarRefusedError} when the server does not allow it
   * (403/405/501), {@link CalDavRateLimitError} on 429 (Nextcloud limits calendars made per hour).
   */
  makeCalendar(homeUrl: string, slug: string, displayName: string, color: string): Promise<CalDavCalendar>;
  /** The collection's properties: {@link CalDavCalendarGoneError} on 404/410, or when it is not a calendar. */
  getCalendar(url: string): Promise<CalDavCalendar>;
  /** Deletes a collection; one already gone counts as deleted. */
  deleteCalendar(url: string): Promise<void>;
  /**
   * PUT with `If-None-Match: *`: {@link ResourceExistsError} on 412 (the name is taken), {@link UidConflictError}
   * on 409 with `no-uid-conflict` (another resource has the UID). Answers the new ETag ('' when none was sent).
   */
  create(href: string, ics: string): Promise<{ etag: string }>;
  /**
   * PUT with `If-Match: <etag>` (with '' it reads the ETag first): {@link EtagMismatchError} on 412 (someone
   * changed it since), {@link ResourceMissingError} on 404. Answers the new ETag.
   */
  update(href: string, ics: string, etag: string): Promise<{ etag: string }>;
  /** GET: the resource with its text, UID, marker and hash, or undefined on 404/410. */
  get(href: string): Promise<RemoteResource | undefined>;
  /** DELETE with `If-Match: <etag>` (unconditional with ''): {@link EtagMismatchError} on 412. */
  remove(href: string, etag: string): Promise<RemoveOutcome>;
  /** What changed since `syncToken` (or everything): see {@link Listing}. */
  list(calendarUrl: string, syncToken?: string): Promise<Listing>;
}

/**
 * Called before every HTTP request with the host it goes to (the per-host rate limit and a host's cool-down
 * after 429/503/504 wait here).
 */
export type BeforeCalDavRequest = (host: string) => Promise<void>;

/** Builds a {@link CalDavClient} for one account. */
export type CalDavClientFactory = (
  credentials: CalDavCredentials,
  beforeRequest: BeforeCalDavRequest,
  signal?: AbortSignal,
) => CalDavClient;

/** An occurrence as this service wants it on the server: one resource, one VEVENT. */
export interface DesiredResource {
  /** The resource's name stem: `tts-<eventIdFor(uid)>`, so its href is `<calendar URL><id>.ics`. */
  id: string;
  /** The feed's UID of the occurrence. */
  uid: string;
  /** The whole resource: VCALENDAR with VTIMEZONE and one VEVENT carrying our marker and hash, CRLF, folded. */
  ics: string;
  /** Digest of the fields we own (`X-TIMETABLE-SYNC-HASH`), as push/desired-events.ts digests them. */
  hash: string;
}

/** The names of the properties that mark a VEVENT this service wrote, and carry its digest. */
export const MARKER_PROPERTY = 'X-TIMETABLE-SYNC-SOURCE';
export const HASH_PROPERTY = 'X-TIMETABLE-SYNC-HASH';
/**
 * Marks the VALARM we write (a target with feed options and a reminder), so that a merge with a person's copy
 * replaces ours and keeps every alarm of theirs.
 */
export const ALARM_PROPERTY = 'X-TIMETABLE-SYNC-ALARM';

/** The file-name prefix of every resource this service writes; others are never touched. */
export const RESOURCE_PREFIX = 'tts-';
