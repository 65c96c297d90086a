/**
 * A Google push target as the rest of the service sees it, and how it is laid out in its Redis hash
 * (`keys.googleTarget(id)`). The secret fields of the hash (the sealed refresh token, the manage-token
 * digest) never leave `target-store.ts`.
 *
 * ## Status lifecycle
 *
 * ```
 *   create ───────────────────────────────────────► active
 *   active ─── markStatus('paused', pausedUntil) ──► paused ─────────── recordPush ──────────► active
 *   any ────── markStatus('needs-consent') ────────► needs-consent ──── replaceRefreshToken ─► active
 *   any ────── markStatus('calendar-deleted') ─────► calendar-deleted ─ replaceCalendar ─────► active
 *   any ────── remove ─────────────────────────────► gone (every key of the target deleted)
 * ```
 *
 * - `active`: pushes run; the target sits in `googleTargetsDue` at its next full reconcile.
 * - `paused`: Google answered "Calendar usage limits exceeded" (403 quotaExceeded). Push jobs are skipped
 *   until `pausedUntil`; the target's reconcile is moved to `pausedUntil`, so the scheduler's due scan
 *   brings it back then, and the first successful push (`recordPush`) makes it active again.
 * - `needs-consent`: Google refused the refresh token (revoked, expired, scope missing) or the stored token
 *   cannot be decrypted any more. Nothing retries; only a new token (`replaceRefreshToken`, from a new
 *   consent or an admin) reactivates it. The mark is conditional on `tokenVersion`, so a push that used an
 *   old token cannot mark the new one.
 * - `calendar-deleted`: the owner deleted the calendar (or it is no longer reachable). Only
 *   `replaceCalendar` (a reconnect creating a new calendar) reactivates it; the old index is dropped.
 * - Stopped states (`needs-consent`, `calendar-deleted`) leave `googleTargetsDue`, so the scheduler does not
 *   enqueue pushes that would only be skipped; reactivating puts the target back, due at once, with
 *   `reconcileRequested` set so the first push compares with what the calendar really holds.
 * - No transition revives a removed target: every update is a script that does nothing when the hash is gone.
 */

/** One event Google refused, for logs. */
export interface RefusalExample {
  eventId: string;
  message: string;
}

/** What one sync did. `writes` and `reads` count API requests sent, refused ones included. */
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
   * Writes Google refused for good, in this push or in an earlier one and not due again: each event is tried
   * again when it changes or after `REFUSAL_RETRY_MS` (google/sync-target.ts; a refused delete after that
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

/** Where a target is in its lifecycle (see the module comment). */
export type TargetStatus = 'active' | 'paused' | 'needs-consent' | 'calendar-deleted';

/** The states a push failure can move a target into; `active` is reached only through the store's own transitions. */
export type StoppedStatus = Exclude<TargetStatus, 'active'>;

/** What one push did, as recorded on its target. Counts are of events; `writes`/`reads` of API requests. */
export interface PushSummary extends SyncCounts {
  /** When the push finished (epoch ms). */
  at: number;
  reason: PushReason;
  durationMs: number;
}

/** A Google push target: one source pushed into one Google calendar with one refresh token. */
export interface PushTarget {
  /** 22 characters of base64url (see `TARGET_ID`). */
  id: string;
  /** The source key, e.g. `group:4242`. */
  source: string;
  calendarId: string;
  /** Whether we created the calendar (and may delete it on disconnect). */
  calendarOwned: boolean;
  calendarName: string;
  /** The request budget this target's Google requests count against (`user:<sub>` or `token:<hash16>`). */
  budgetKey: string;
  /** Google's user id (`sub`), when known. */
  googleUser?: string;
  status: TargetStatus;
  /** Why the target is not active (human-readable, never a token). */
  statusReason?: string;
  /** When the status last changed (epoch ms). */
  statusAt: number;
  /** Set while `paused`: pushes are skipped until then. */
  pausedUntil?: number;
  createdAt: number;
  lastPushAt?: number;
  lastPush?: PushSummary;
  lastErrorAt?: number;
  lastError?: string;
  /**
   * Why Google refused events (a few examples of the latest push, completed or failed, that had new refusals), while
   * any stay refused.
   */
  lastRefusals?: RefusalExample[];
  /** Goes up with every refresh token stored; guards `markStatus`. */
  tokenVersion: number;
  /** The next push must list the calendar and rebuild the index (new target, new token, new calendar). */
  reconcileRequested: boolean;
  /** Which request that is (a request made while a push runs has another, so that push cannot clear it). */
  reconcileToken?: string;
}

/** Public fields as hash fields (the secret fields are added by the store). */
export function toFields(target: PushTarget): Record<string, string> {
  const fields: Record<string, string> = {
    id: target.id,
    source: target.source,
    calendarId: target.calendarId,
    calendarOwned: target.calendarOwned ? '1' : '0',
    calendarName: target.calendarName,
    budgetKey: target.budgetKey,
    status: target.status,
    statusAt: String(target.statusAt),
    createdAt: String(target.createdAt),
    tokenVersion: String(target.tokenVersion),
    reconcileRequested: target.reconcileRequested ? '1' : '0',
  };
  if (target.googleUser !== undefined) fields.googleUser = target.googleUser;
  if (target.statusReason !== undefined) fields.statusReason = target.statusReason;
  if (target.pausedUntil !== undefined) fields.pausedUntil = String(target.pausedUntil);
  return fields;
}

/** A stored hash back into a target; the secret fields are left behind. */
export function fromFields(fields: Record<string, string>): PushTarget {
  const target: PushTarget = {
    id: fields.id ?? '',
    source: fields.source ?? '',
    calendarId: fields.calendarId ?? '',
    calendarOwned: fields.calendarOwned === '1',
    calendarName: fields.calendarName ?? '',
    budgetKey: fields.budgetKey ?? '',
    status: parseStatus(fields.status),
    statusAt: Number(fields.statusAt ?? 0),
    createdAt: Number(fields.createdAt ?? 0),
    tokenVersion: Number(fields.tokenVersion ?? 0),
    reconcileRequested: fields.reconcileRequested !== undefined && fields.reconcileRequested !== '0',
  };
  if (target.reconcileRequested && fields.reconcileRequested !== undefined)
    target.reconcileToken = fields.reconcileRequested;
  copyText(fields, target, 'googleUser');
  copyText(fields, target, 'statusReason');
  copyText(fields, target, 'lastError');
  copyNumber(fields, target, 'pausedUntil');
  copyNumber(fields, target, 'lastPushAt');
  copyNumber(fields, target, 'lastErrorAt');
  const lastPush = parseJson<PushSummary>(fields.lastPush);
  if (lastPush !== undefined) target.lastPush = lastPush;
  const lastRefusals = parseJson<RefusalExample[]>(fields.lastRefusals);
  if (lastRefusals !== undefined) target.lastRefusals = lastRefusals;
  return target;
}

const STATUSES: readonly TargetStatus[] = ['active', 'paused', 'needs-consent', 'calendar-deleted'];

function parseStatus(text: string | undefined): TargetStatus {
  return STATUSES.find((status) => status === text) ?? 'active';
}

function copyText(
  fields: Record<string, string>,
  target: PushTarget,
  name: 'googleUser' | 'statusReason' | 'lastError',
): void {
  const value = fields[name];
  if (value !== undefined) target[name] = value;
}

function copyNumber(
  fields: Record<string, string>,
  target: PushTarget,
  name: 'pausedUntil' | 'lastPushAt' | 'lastErrorAt',
): void {
  const value = fields[name];
  if (value !== undefined && value !== '') target[name] = Number(value);
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
