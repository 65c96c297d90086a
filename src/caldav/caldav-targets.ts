/**
 * CalDAV push targets in the kind-neutral target store: where they live in Redis, the words and fields that
 * are CalDAV's (the sealed app password, `needs-password`, the server, login and listing state), and a typed
 * reading of those fields. The keys and field names are the ones CalDAV targets were always stored under; the
 * calendar URL is the target's `calendarId`.
 */
import type { RedisKeys } from '../store/keys.ts';
import type { PushTargetLayout } from '../store/push-target-layout.ts';
import type { PushTarget } from '../store/push-target-record.ts';
import type { PushTargetStore } from '../store/push-target-store.ts';

/** A CalDAV target's status when the server refused its login or app password (401). */
export type CalDavNeedsCredential = 'needs-password';

/** A CalDAV push target (its `calendarId` is the collection's absolute URL, ending in `/`). */
export type CalDavTarget = PushTarget<CalDavNeedsCredential>;

/** The store of CalDAV push targets. */
export type CalDavTargetStore = PushTargetStore<CalDavNeedsCredential>;

/** How CalDAV targets are laid out in Redis (`caldav-target:<id>`, `source-caldav-targets:<source>`, …). */
export function caldavTargetLayout(keys: RedisKeys): PushTargetLayout<CalDavNeedsCredential> {
  return {
    kind: 'caldav',
    kindField: true,
    keys: {
      target: keys.caldavTarget,
      index: keys.caldavIndex,
      all: keys.caldavTargets,
      due: keys.caldavTargetsDue,
      source: keys.sourceCaldavTargets,
    },
    credential: { field: 'password', context: (id) => `caldav-target:${id}:password` },
    needsCredential: 'needs-password',
    // What a listing of one collection answered means nothing for another.
    calendarDetails: ['syncToken', 'ctag'],
  };
}

/** The CalDAV fields of a target. */
export interface CalDavDetails {
  /** The server URL the person gave (`https://caldav.yandex.ru`), where discovery started. */
  serverUrl: string;
  /** The account's calendar home (where MKCALENDAR made our calendar). */
  homeUrl: string;
  /** Host (and port, if any) of the calendar URL: the per-host rate limit and cool-down are keyed by it. */
  host: string;
  /** The login (not a secret; the app password is, and is kept apart). */
  username: string;
  /** Whether the collection offers RFC 6578 sync-collection. */
  supportsSync: boolean;
  /** The sync token of the last listing (`DAV:sync-token`), to ask for changes since. */
  syncToken?: string;
  /** The collection's `CS:getctag` at the last listing. */
  ctag?: string;
}

/** The CalDAV fields of `target`, typed. */
export function caldavDetails(target: Pick<PushTarget, 'details'>): CalDavDetails {
  const { details } = target;
  const out: CalDavDetails = {
    serverUrl: details.serverUrl ?? '',
    homeUrl: details.homeUrl ?? '',
    host: details.host ?? '',
    username: details.username ?? '',
    supportsSync: details.supportsSync === '1',
  };
  if (details.syncToken !== undefined && details.syncToken !== '') out.syncToken = details.syncToken;
  if (details.ctag !== undefined && details.ctag !== '') out.ctag = details.ctag;
  return out;
}

/** The detail fields of a new CalDAV target on calendar `calendarUrl`. */
export function caldavDetailFields(
  calendarUrl: string,
  fields: { serverUrl: string; homeUrl: string; username: string; supportsSync: boolean },
): Record<string, string> {
  return {
    serverUrl: fields.serverUrl,
    homeUrl: fields.homeUrl,
    username: fields.username,
    ...calendarDetailFields(calendarUrl, fields.supportsSync),
  };
}

/** The detail fields that come with a calendar (set again when the target moves to another one). */
export function calendarDetailFields(calendarUrl: string, supportsSync: boolean): Record<string, string> {
  return { host: hostOf(calendarUrl), supportsSync: supportsSync ? '1' : '0' };
}

/** The host a calendar URL's requests go to (`host[:port]`, lower case), the key of its rate limit. */
export function hostOf(url: string): string {
  return new URL(url).host.toLowerCase();
}

/** What a listing of the collection said, kept for the next one. */
export interface ListingState {
  syncToken?: string | undefined;
  ctag?: string | undefined;
}

/**
 * Keeps what a listing answered (the sync token to ask with next time, the ctag) while the target still points
 * at `calendarUrl`. A value the listing did not give is dropped (a token the server refused must not be sent
 * again).
 */
export async function recordListing(
  store: Pick<CalDavTargetStore, 'recordDetails'>,
  id: string,
  calendarUrl: string,
  listing: ListingState,
): Promise<boolean> {
  const set: Record<string, string> = {};
  const remove: string[] = [];
  for (const name of ['syncToken', 'ctag'] as const) {
    const value = listing[name];
    if (value === undefined || value === '') remove.push(name);
    else set[name] = value;
  }
  return store.recordDetails(id, calendarUrl, set, remove);
}
