/**
 * A push target of any calendar kind as the rest of the service sees it, and how it is laid out in its Redis
 * hash. The secret fields of the hash (the sealed credential, the manage-token digest) never leave
 * `push-target-store.ts`. The hash field names are the ones the first stores wrote (the credential version is
 * `tokenVersion`, CalDAV's calendar URL is `calendarId`), so that data written then reads unchanged.
 *
 * ## Status lifecycle
 *
 * ```
 *   create ───────────────────────────────────────► active
 *   active ─── markStatus('paused', pausedUntil) ──► paused ─────────── recordPush ─────────► active
 *   any ────── markStatus(needs-credential) ───────► needs-credential ─ replaceCredential ──► active
 *   any ────── markStatus('calendar-deleted') ─────► calendar-deleted ─ replaceCalendar ────► active
 *   any ────── remove ─────────────────────────────► gone (every key of the target deleted)
 * ```
 *
 * - `active`: pushes run; the target sits in its kind's due ZSET at its next full reconcile.
 * - `paused`: the server refused us for a while (Google's usage limits, a CalDAV 403 or 507). Push jobs are
 *   skipped until `pausedUntil`; the reconcile moves there, so the scheduler's due scan brings it back, and the
 *   first successful push (`recordPush`) makes it active again.
 * - needs-credential (stored under the kind's own word: `needs-consent` for Google, `needs-password` for
 *   CalDAV): the server refused the credential, or the stored one cannot be decrypted any more. Only a new one
 *   (`replaceCredential`) reactivates it; the mark is conditional on the credential version, so a push that
 *   used an old credential cannot mark the new one.
 * - `calendar-deleted`: the calendar is gone. Only `replaceCalendar` reactivates it; the old index is dropped.
 * - Stopped states leave the due set; reactivating puts the target back, due at once, with
 *   `reconcileRequested` set so that the first push compares with what the calendar really holds.
 * - No transition revives a removed target: every update is a script that does nothing when the hash is gone.
 */

import type { SubscriberOptions } from '../timetable/types.ts';

/** One event (or resource) the server refused, for logs. */
export interface RefusalExample {
  eventId: string;
  message: string;
}

/** What one sync did. `writes` and `reads` count requests sent, refused ones included. */
export interface SyncCounts {
  desired: number;
  inserted: number;
  patched: number;
  /** Events of ours that had been deleted (cancelled) and were brought back. */
  revived: number;
  deleted: number;
  unchanged: number;
  /** Desired ids taken by events without our marker: left alone (indexed as FOREIGN until a reconcile). */
  conflicts: number;
  /**
   * Writes the server refused for good, in this push or in an earlier one and not due again: each event is tried
   * again when it changes or after `REFUSAL_RETRY_MS` (push/refusal-tally.ts; a refused delete after that
   * time, or at once when the class comes back).
   */
  refused: number;
  writes: number;
  reads: number;
}

/**
 * Why a push ran. `refresh`: the source changed; `reconcile`: the periodic full comparison; `connect`: the first
 * push of a new or reconnected target. `reconcile` and `connect` list the calendar before planning. (The push
 * job's payload carries it: jobs/contract.ts.)
 */
export type PushReason = 'refresh' | 'reconcile' | 'connect';

/** What one push did, as recorded on its target. Counts are of events; `writes`/`reads` of requests. */
export interface PushSummary extends SyncCounts {
  /** When the push finished (epoch ms). */
  at: number;
  reason: PushReason;
  durationMs: number;
}

/** A calendar kind's name (`google`, `caldav`), as its layout gives it; the store names no kind itself. */
export type TargetKind = string;

/**
 * Where a target is in its lifecycle (see the module comment). `N` is the kind's "needs a new credential" word
 * (`needs-consent`, `needs-password`), kept as stored so that statuses shown and stored do not change.
 */
export type TargetStatus<N extends string = string> = 'active' | 'paused' | 'calendar-deleted' | N;

/** The states a push failure can move a target into; `active` is reached only through the store's transitions. */
export type StoppedStatus<N extends string = string> = Exclude<TargetStatus<N>, 'active'>;

/** A push target: one source pushed into one calendar of one kind with one credential. */
export interface PushTarget<N extends string = string> {
  /** 22 characters of base64url (see `TARGET_ID`). */
  id: string;
  kind: TargetKind;
  /** The source key, e.g. `group:4242`. */
  source: string;
  /** The calendar: Google's calendar id, or CalDAV's absolute collection URL (ending in `/`). */
  calendarId: string;
  /** Whether we created the calendar (and may delete it on disconnect). */
  calendarOwned: boolean;
  calendarName: string;
  status: TargetStatus<N>;
  /** Why the target is not active (human-readable, never a credential). */
  statusReason?: string;
  /** When the status last changed (epoch ms). */
  statusAt: number;
  /** Set while `paused`: pushes are skipped until then. */
  pausedUntil?: number;
  /** Goes up with every credential stored; guards `markStatus` and the push records. */
  credentialVersion: number;
  createdAt: number;
  lastPushAt?: number;
  lastPush?: PushSummary;
  lastErrorAt?: number;
  lastError?: string;
  /** Why the server refused events (a few examples of the latest push that had new refusals), while any stay. */
  lastRefusals?: RefusalExample[];
  /** The next push must list the calendar and rebuild the index (new target, credential or calendar). */
  reconcileRequested: boolean;
  /** Which request that is (a request made while a push runs has another, so that push cannot clear it). */
  reconcileToken?: string;
  /**
   * The kind's own public hash fields, as stored (Google: `budgetKey`, `googleUser`; CalDAV: `serverUrl`,
   * `host`, `syncToken`…). Each adapter reads them through a typed accessor of its own.
   */
  details: Readonly<Record<string, string>>;
  /**
   * The feed options the calendar follows (subgroup, hidden kinds, reminder, title), as the feed query names
   * them. Absent on targets connected before push followed options: they keep the whole timetable and their
   * events' reminders stay the calendar's. Present (even empty) means the reminders are ours: an alarm sets
   * one, none asks for the calendar's default.
   */
  options?: SubscriberOptions;
}

/** The hash fields of every target's public part; every other field but the secret ones is a detail. */
export const CORE_FIELDS: ReadonlySet<string> = new Set([
  'id',
  'kind',
  'source',
  'calendarId',
  'calendarOwned',
  'calendarName',
  'status',
  'statusReason',
  'statusAt',
  'pausedUntil',
  'tokenVersion',
  'createdAt',
  'lastPushAt',
  'lastPush',
  'lastErrorAt',
  'lastError',
  'lastRefusals',
  'reconcileRequested',
  'options',
]);

/**
 * Public fields as hash fields (the secret fields are added by the store). `kindField`: whether the hash names
 * its kind (CalDAV's always did; Google's never had the field).
 */
export function toFields(target: PushTarget, kindField: boolean): Record<string, string> {
  const fields: Record<string, string> = {
    id: target.id,
    ...(kindField ? { kind: target.kind } : {}),
    source: target.source,
    calendarId: target.calendarId,
    calendarOwned: target.calendarOwned ? '1' : '0',
    calendarName: target.calendarName,
    status: target.status,
    statusAt: String(target.statusAt),
    createdAt: String(target.createdAt),
    tokenVersion: String(target.credentialVersion),
    reconcileRequested: target.reconcileRequested ? '1' : '0',
    ...target.details,
  };
  if (target.options !== undefined) fields.options = optionsField(target.options);
  if (target.statusReason !== undefined) fields.statusReason = target.statusReason;
  if (target.pausedUntil !== undefined) fields.pausedUntil = String(target.pausedUntil);
  return fields;
}

/**
 * A stored hash back into a target of `kind`. `secret` names the fields left behind (the sealed credential,
 * the manage-token digest); `needsCredential` is the kind's word for that status.
 */
export function fromFields<N extends string>(
  fields: Record<string, string>,
  kind: TargetKind,
  needsCredential: N,
  secret: ReadonlySet<string>,
): PushTarget<N> {
  const details: Record<string, string> = {};
  for (const [name, value] of Object.entries(fields))
    if (!CORE_FIELDS.has(name) && !secret.has(name)) details[name] = value;
  const target: PushTarget<N> = {
    id: fields.id ?? '',
    kind,
    source: fields.source ?? '',
    calendarId: fields.calendarId ?? '',
    calendarOwned: fields.calendarOwned === '1',
    calendarName: fields.calendarName ?? '',
    status: parseStatus(fields.status, needsCredential),
    statusAt: Number(fields.statusAt ?? 0),
    credentialVersion: Number(fields.tokenVersion ?? 0),
    createdAt: Number(fields.createdAt ?? 0),
    reconcileRequested: fields.reconcileRequested !== undefined && fields.reconcileRequested !== '0',
    details,
  };
  if (target.reconcileRequested && fields.reconcileRequested !== undefined)
    target.reconcileToken = fields.reconcileRequested;
  for (const name of ['statusReason', 'lastError'] as const) {
    const value = fields[name];
    if (value !== undefined && value !== '') target[name] = value;
  }
  for (const name of ['pausedUntil', 'lastPushAt', 'lastErrorAt'] as const) {
    const value = fields[name];
    if (value !== undefined && value !== '') target[name] = Number(value);
  }
  const lastPush = parseJson<PushSummary>(fields.lastPush);
  if (lastPush !== undefined) target.lastPush = lastPush;
  const options = parseJson<SubscriberOptions>(fields.options);
  if (options !== undefined) target.options = options;
  const lastRefusals = parseJson<RefusalExample[]>(fields.lastRefusals);
  if (lastRefusals !== undefined) target.lastRefusals = lastRefusals;
  return target;
}

/** A target's options as stored: JSON in the feed query's canonical order, absent values left out. */
export function optionsField(options: SubscriberOptions): string {
  const ordered: SubscriberOptions = {};
  if (options.subgroup !== undefined) ordered.subgroup = options.subgroup;
  if (options.excludeKinds !== undefined && options.excludeKinds.length > 0)
    ordered.excludeKinds = [...options.excludeKinds];
  if (options.alarmMinutes !== undefined) ordered.alarmMinutes = options.alarmMinutes;
  if (options.titleTemplate !== undefined) ordered.titleTemplate = options.titleTemplate;
  return JSON.stringify(ordered);
}

function parseStatus<N extends string>(text: string | undefined, needsCredential: N): TargetStatus<N> {
  if (text === needsCredential) return needsCredential;
  return text === 'paused' || text === 'calendar-deleted' ? text : 'active';
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
