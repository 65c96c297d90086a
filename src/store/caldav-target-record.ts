/**
 * A CalDAV push target as the rest of the service sees it, and how it is laid out in its Redis hash
 * (`keys.caldavTarget(id)`). The secret fields of the hash (the sealed app password, the manage-token digest)
 * never leave `caldav-target-store.ts`.
 *
 * The hash keeps two fields under the names the Google target's hash gives them, so that the guarded updates of
 * `target-*.lua` serve both kinds unchanged: the calendar URL is stored as `calendarId` and the credential
 * version as `tokenVersion`.
 *
 * ## Status lifecycle
 *
 * ```
 *   create ───────────────────────────────────────► active
 *   active ─── markStatus('paused', pausedUntil) ──► paused ─────────── recordPush ─────► active
 *   any ────── markStatus('needs-password') ───────► needs-password ─── replacePassword ─► active
 *   any ────── markStatus('calendar-deleted') ─────► calendar-deleted ─ replaceCalendar ─► active
 *   any ────── remove ─────────────────────────────► gone (every key of the target deleted)
 * ```
 *
 * - `active`: pushes run; the target sits in `caldavTargetsDue` at its next full reconcile.
 * - `paused`: the server refused us for a while (403 on the calendar, 507 storage full), with its reason.
 *   Pushes are skipped until `pausedUntil`, when the scheduler's due scan brings the target back.
 * - `needs-password`: the server answered 401 (the app password was revoked or changed), or the stored one
 *   cannot be decrypted any more. Only a new password (`replacePassword`) reactivates it; the mark is
 *   conditional on the credential version, so a push that used an old password cannot mark the new one.
 * - `calendar-deleted`: the calendar is gone (404/410, or no calendar any more). Only `replaceCalendar`
 *   reactivates it; the old index is dropped.
 * - Stopped states leave the due set; reactivating puts the target back, due at once, with
 *   `reconcileRequested` set so that the first push lists what the calendar really holds.
 * - No transition revives a removed target: every update is a script that does nothing when the hash is gone.
 */
import type { PushSummary, RefusalExample } from './target-record.ts';

export type { PushReason, PushSummary, RefusalExample, SyncCounts } from './target-record.ts';

/** Where a CalDAV target is in its lifecycle (see the module comment). */
export type CalDavTargetStatus = 'active' | 'paused' | 'needs-password' | 'calendar-deleted';

/** The states a push failure can move a target into; `active` is reached only through the store's own transitions. */
export type CalDavStoppedStatus = Exclude<CalDavTargetStatus, 'active'>;

/** A CalDAV push target: one source pushed into one calendar collection with one login and app password. */
export interface CalDavTarget {
  /** 22 characters of base64url. */
  id: string;
  kind: 'caldav';
  /** The source key, e.g. `group:4242`. */
  source: string;
  /** The server URL the person gave (`https://caldav.yandex.ru`), where discovery started. */
  serverUrl: string;
  /** Absolute URL of the calendar collection, ending in `/`; resources are `<calendarUrl>tts-<id>.ics`. */
  calendarUrl: string;
  /** The account's calendar home (where MKCALENDAR made our calendar). */
  homeUrl: string;
  /** Host (and port, if any) of the calendar URL: the per-host rate limit and cool-down are keyed by it. */
  host: string;
  /** Whether we created the calendar (and may delete it on disconnect). */
  calendarOwned: boolean;
  calendarName: string;
  /** The login (not a secret; the app password is, and is kept apart). */
  username: string;
  status: CalDavTargetStatus;
  /** Why the target is not active (human-readable, the server's own words where it gave any; never a password). */
  statusReason?: string;
  /** When the status last changed (epoch ms). */
  statusAt: number;
  /** Set while `paused`: pushes are skipped until then. */
  pausedUntil?: number;
  /** Goes up with every password stored; guards `markStatus`. */
  credentialVersion: number;
  /** Whether the collection offers RFC 6578 sync-collection. */
  supportsSync: boolean;
  /** The sync token of the last listing (`DAV:sync-token`), to ask for changes since. */
  syncToken?: string;
  /** The collection's `CS:getctag` at the last listing. */
  ctag?: string;
  createdAt: number;
  lastPushAt?: number;
  lastPush?: PushSummary;
  lastErrorAt?: number;
  lastError?: string;
  /** Why the server refused resources (a few examples of the latest push that had new refusals). */
  lastRefusals?: RefusalExample[];
  /** The next push must list the calendar and rebuild the index (new target, new password, new calendar). */
  reconcileRequested: boolean;
  /** Which request that is (a request made while a push runs has another, so that push cannot clear it). */
  reconcileToken?: string;
}

/** The host a calendar URL's requests go to (`host[:port]`, lower case), the key of its rate limit. */
export function hostOf(url: string): string {
  return new URL(url).host.toLowerCase();
}

/** Public fields as hash fields (the secret fields are added by the store). */
export function toFields(target: CalDavTarget): Record<string, string> {
  const fields: Record<string, string> = {
    id: target.id,
    kind: 'caldav',
    source: target.source,
    serverUrl: target.serverUrl,
    calendarId: target.calendarUrl,
    homeUrl: target.homeUrl,
    host: target.host,
    calendarOwned: target.calendarOwned ? '1' : '0',
    calendarName: target.calendarName,
    username: target.username,
    status: target.status,
    statusAt: String(target.statusAt),
    createdAt: String(target.createdAt),
    tokenVersion: String(target.credentialVersion),
    supportsSync: target.supportsSync ? '1' : '0',
    reconcileRequested: target.reconcileRequested ? '1' : '0',
  };
  if (target.statusReason !== undefined) fields.statusReason = target.statusReason;
  if (target.pausedUntil !== undefined) fields.pausedUntil = String(target.pausedUntil);
  if (target.syncToken !== undefined) fields.syncToken = target.syncToken;
  if (target.ctag !== undefined) fields.ctag = target.ctag;
  return fields;
}

/** A stored hash back into a target; the secret fields are left behind. */
export function fromFields(fields: Record<string, string>): CalDavTarget {
  const calendarUrl = fields.calendarId ?? '';
  const target: CalDavTarget = {
    id: fields.id ?? '',
    kind: 'caldav',
    source: fields.source ?? '',
    serverUrl: fields.serverUrl ?? '',
    calendarUrl,
    homeUrl: fields.homeUrl ?? '',
    host: fields.host ?? '',
    calendarOwned: fields.calendarOwned === '1',
    calendarName: fields.calendarName ?? '',
    username: fields.username ?? '',
    status: parseStatus(fields.status),
    statusAt: Number(fields.statusAt ?? 0),
    credentialVersion: Number(fields.tokenVersion ?? 0),
    supportsSync: fields.supportsSync === '1',
    createdAt: Number(fields.createdAt ?? 0),
    reconcileRequested: fields.reconcileRequested !== undefined && fields.reconcileRequested !== '0',
  };
  if (target.reconcileRequested && fields.reconcileRequested !== undefined)
    target.reconcileToken = fields.reconcileRequested;
  for (const name of ['statusReason', 'lastError', 'syncToken', 'ctag'] as const) {
    const value = fields[name];
    if (value !== undefined && value !== '') target[name] = value;
  }
  for (const name of ['pausedUntil', 'lastPushAt', 'lastErrorAt'] as const) {
    const value = fields[name];
    if (value !== undefined && value !== '') target[name] = Number(value);
  }
  const lastPush = parseJson<PushSummary>(fields.lastPush);
  if (lastPush !== undefined) target.lastPush = lastPush;
  const lastRefusals = parseJson<RefusalExample[]>(fields.lastRefusals);
  if (lastRefusals !== undefined) target.lastRefusals = lastRefusals;
  return target;
}

const STATUSES: readonly CalDavTargetStatus[] = ['active', 'paused', 'needs-password', 'calendar-deleted'];

function parseStatus(text: string | undefined): CalDavTargetStatus {
  return STATUSES.find((status) => status === text) ?? 'active';
}

/** Our own JSON; a value that does not parse (hand-edited) reads as absent rather than failing the read. */
function parseJson<T>(text: string | undefined): T | undefined {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as T;
  } catch {
    return undefined;
  }
}
