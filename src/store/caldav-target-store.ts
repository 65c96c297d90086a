/**
 * CalDAV push targets in Redis, the twin of `target-store.ts` under keys of their own. One HASH per target
 * (`caldavTarget(id)`) holds its public fields (see `caldav-target-record.ts`, which also describes the status
 * lifecycle), the app password sealed with the secret box (bound to the target id) and the SHA-256 of its manage
 * token. Around it: the source's CalDAV target SET (read by the publish fan-out), a ZSET of all targets by
 * creation (admin paging) and a ZSET by next reconcile (the scheduler's due scan). Every update after `create`
 * is one of the Google targets' scripts (`target-*.lua`, which guard on the hash fields `tokenVersion` and
 * `calendarId`: here the credential version and the calendar URL), so no update racing `remove` can bring back
 * half a target.
 */
import { randomBytes } from 'node:crypto';
import type { RedisClient } from '../lib/redis-target.ts';
import { execOrThrow } from '../lib/redis-transaction.ts';
import { SecretBox } from '../security/secret-box.ts';
import { constantTimeEqual, hashToken, randomToken } from '../security/tokens.ts';
import type { SourceKey } from '../timetable/source.ts';
import {
  type CalDavStoppedStatus,
  type CalDavTarget,
  fromFields,
  hostOf,
  type PushSummary,
  type RefusalExample,
  toFields,
} from './caldav-target-record.ts';
import type { RedisKeys } from './keys.ts';
import {
  CLEAR_RECONCILE,
  type DueChange,
  REMOVE_TARGET,
  type TargetUpdate,
  UPDATE_TARGET,
  updateArguments,
} from './target-scripts.ts';

export type { CalDavStoppedStatus, CalDavTarget, CalDavTargetStatus } from './caldav-target-record.ts';

/** Target ids: 16 random bytes (128 bits) as base64url, 22 characters. */
export const CALDAV_TARGET_ID = /^[A-Za-z0-9_-]{22}$/;

/** A new target id, for a caller that needs it before {@link CalDavTargetStore.create} (a calendar named by it). */
export function newCalDavTargetId(): string {
  return randomToken(16);
}

/** What a new target is made of. */
export interface NewCalDavTarget {
  /** The id, when the caller chose it first (from {@link newCalDavTargetId}); else a new one. */
  id?: string | undefined;
  source: SourceKey;
  serverUrl: string;
  calendarUrl: string;
  homeUrl: string;
  calendarOwned: boolean;
  calendarName: string;
  username: string;
  password: string;
  supportsSync: boolean;
  now: number;
}

/**
 * What a push started with: the version of the password it sent (from {@link CalDavTargetStore.password}) and
 * the calendar it wrote to. Updates that carry it land only while both are still the target's.
 */
export interface CalDavPushGuard {
  credentialVersion?: number | undefined;
  calendarUrl?: string | undefined;
}

/** The script guard of a {@link CalDavPushGuard}. */
function guardOf(guard: CalDavPushGuard): Pick<TargetUpdate, 'ifVersion' | 'ifCalendar'> {
  return { ifVersion: guard.credentialVersion, ifCalendar: guard.calendarUrl };
}

/** An app password with the version it was stored under (pass the version back to `markStatus`). */
export interface VersionedPassword {
  password: string;
  version: number;
}

/** What a listing of the collection said, kept for the next one. */
export interface ListingState {
  syncToken?: string | undefined;
  ctag?: string | undefined;
}

/** Thrown by `create` when the chosen id is taken. */
export class CalDavTargetExistsError extends Error {
  override name = 'CalDavTargetExistsError';
}

/** Fields cleared whenever a target becomes active again. */
const STOP_FIELDS = ['statusReason', 'pausedUntil'] as const;

/** The fields of a target that pushes again: active, and its first push reconciles. */
const ACTIVE_FIELDS = { status: 'active', reconcileRequested: '1' } as const;

/** The associated data that binds a sealed app password to its target. */
function passwordContext(id: string): string {
  return `caldav-target:${id}:password`;
}

/** CalDAV push targets: create, read, move through the status lifecycle, record pushes, page, remove. */
export class CalDavTargetStore {
  private readonly redis: RedisClient;
  private readonly keys: RedisKeys;
  private readonly box: SecretBox;

  /** `secretKey` is `Config.secretKey`; without it, anything touching a password throws SecretKeyMissingError. */
  constructor(redis: RedisClient, keys: RedisKeys, secretKey: Buffer | undefined) {
    this.redis = redis;
    this.keys = keys;
    this.box = new SecretBox(secretKey);
  }

  /** Whether passwords can be stored (a `SECRET_KEY` is configured). */
  get canStorePasswords(): boolean {
    return this.box.available;
  }

  /** Stores a new active target in one transaction, due for a reconcile now; the manage token is the only copy. */
  async create(input: NewCalDavTarget): Promise<{ id: string; manageToken: string }> {
    const id = input.id ?? newCalDavTargetId();
    if (!CALDAV_TARGET_ID.test(id)) throw new RangeError('a CalDAV target id is 22 characters of base64url');
    const manageToken = randomToken();
    const target: CalDavTarget = {
      id,
      kind: 'caldav',
      source: input.source,
      serverUrl: input.serverUrl,
      calendarUrl: input.calendarUrl,
      homeUrl: input.homeUrl,
      host: hostOf(input.calendarUrl),
      calendarOwned: input.calendarOwned,
      calendarName: input.calendarName,
      username: input.username,
      status: 'active',
      statusAt: input.now,
      credentialVersion: 1,
      supportsSync: input.supportsSync,
      createdAt: input.now,
      reconcileRequested: true,
    };
    const sealed = this.box.seal(input.password, passwordContext(id));
    const key = this.keys.caldavTarget(id);
    // A chosen id is a fresh random one (128 bits); this catches a caller that passes one twice.
    if ((await this.redis.exists(key)) === 1) throw new CalDavTargetExistsError(`target ${id} exists`);
    await execOrThrow(
      this.redis
        .multi()
        .hset(key, { ...toFields(target), password: sealed, manageTokenHash: hashToken(manageToken) })
        .sadd(this.keys.sourceCaldavTargets(input.source), id)
        .zadd(this.keys.caldavTargets, input.now, id)
        .zadd(this.keys.caldavTargetsDue, input.now, id),
    );
    return { id, manageToken };
  }

  /** The target, or undefined when there is none (a malformed id included). */
  async get(id: string): Promise<CalDavTarget | undefined> {
    if (!CALDAV_TARGET_ID.test(id)) return undefined;
    const fields = await this.redis.hgetall(this.keys.caldavTarget(id));
    return fields.id === undefined || fields.source === undefined ? undefined : fromFields(fields);
  }

  /**
   * The decrypted app password and its version; undefined when the target does not exist. The secret box's
   * DecryptionError (tampered, or sealed under another SECRET_KEY) and SecretKeyMissingError pass through.
   */
  async password(id: string): Promise<VersionedPassword | undefined> {
    if (!CALDAV_TARGET_ID.test(id)) return undefined;
    const [sealed, version] = await this.redis.hmget(this.keys.caldavTarget(id), 'password', 'tokenVersion');
    if (sealed === null || sealed === undefined) return undefined;
    return { password: this.box.open(sealed, passwordContext(id)), version: Number(version ?? 0) };
  }

  /**
   * Stores a new app password (and login, when given) under the next version and reactivates the target (due
   * now, reconcile requested). False if the target is gone.
   */
  async replacePassword(id: string, password: string, now: number, username?: string): Promise<boolean> {
    const set: Record<string, string> = { password: this.box.seal(password, passwordContext(id)), ...ACTIVE_FIELDS };
    if (username !== undefined) set.username = username;
    return this.update(id, { set, remove: STOP_FIELDS, bumpVersion: true, due: { kind: 'set', at: now }, now });
  }

  /**
   * Points the target at another calendar (a reconnect after the old one was deleted) and reactivates it: its
   * index, sync token and ctag are dropped, a reconcile requested, due now. False if the target is gone.
   */
  async replaceCalendar(
    id: string,
    calendar: { calendarUrl: string; calendarOwned: boolean; calendarName: string; supportsSync: boolean },
    now: number,
  ): Promise<boolean> {
    const set = {
      calendarId: calendar.calendarUrl,
      host: hostOf(calendar.calendarUrl),
      calendarOwned: calendar.calendarOwned ? '1' : '0',
      calendarName: calendar.calendarName,
      supportsSync: calendar.supportsSync ? '1' : '0',
      ...ACTIVE_FIELDS,
    };
    const remove = [...STOP_FIELDS, 'syncToken', 'ctag'];
    return this.update(id, { set, remove, due: { kind: 'set', at: now }, clearIndex: true, now });
  }

  /** Records the name its calendar has now, while the target still points at `calendarUrl`; false otherwise. */
  async recordCalendarName(id: string, calendarUrl: string, calendarName: string): Promise<boolean> {
    return this.update(id, { set: { calendarName }, ifCalendar: calendarUrl });
  }

  /**
   * Keeps what a listing of the collection answered (the sync token to ask with next time, the ctag), while the
   * target still points at `calendarUrl`: a listing of a calendar replaced meanwhile is not this one's. A value
   * the listing did not give is dropped (a token the server refused must not be sent again).
   */
  async recordListing(id: string, calendarUrl: string, listing: ListingState): Promise<boolean> {
    const set: Record<string, string> = {};
    const remove: string[] = [];
    for (const name of ['syncToken', 'ctag'] as const) {
      const value = listing[name];
      if (value === undefined || value === '') remove.push(name);
      else set[name] = value;
    }
    return this.update(id, { set, remove, ifCalendar: calendarUrl });
  }

  /** A new manage token for the target (the old one stops working); undefined if the target is gone. */
  async rotateManageToken(id: string): Promise<string | undefined> {
    const token = randomToken();
    return (await this.update(id, { set: { manageTokenHash: hashToken(token) } })) ? token : undefined;
  }

  /** Whether `token` is the manage token of target `id`, compared in constant time. */
  async verifyManageToken(id: string, token: string): Promise<boolean> {
    if (!CALDAV_TARGET_ID.test(id)) return false;
    const stored = await this.redis.hget(this.keys.caldavTarget(id), 'manageTokenHash');
    return stored !== null && constantTimeEqual(stored, hashToken(token));
  }

  /**
   * Stops pushes: `paused` until `pausedUntil` (its reconcile moves there), or `needs-password` /
   * `calendar-deleted` (it leaves the due set). With a guard (what the push started with), only while the target
   * still holds that password and points at that calendar: a push that outlived a new password cannot stop the
   * target again. Resolves to whether it marked.
   */
  async markStatus(
    id: string,
    status: CalDavStoppedStatus,
    reason: string,
    now: number,
    options: CalDavPushGuard & { pausedUntil?: number | undefined } = {},
  ): Promise<boolean> {
    const set: Record<string, string> = { status, statusReason: reason };
    const until = status === 'paused' ? options.pausedUntil : undefined;
    if (until !== undefined) set.pausedUntil = String(until);
    const due: DueChange =
      status !== 'paused' ? { kind: 'remove' } : until === undefined ? { kind: 'keep' } : { kind: 'set', at: until };
    return this.update(id, { set, remove: until === undefined ? ['pausedUntil'] : [], due, now, ...guardOf(options) });
  }

  /**
   * Records a successful push: the target is active (a pause is over), its last error cleared. `refusals`
   * (examples of resources the server refused in this push) replace the stored ones; those are kept while
   * resources stay refused and dropped when none is. Guarded as {@link markStatus}.
   */
  async recordPush(
    id: string,
    summary: PushSummary,
    guard: CalDavPushGuard = {},
    refusals: readonly RefusalExample[] = [],
  ): Promise<boolean> {
    const set: Record<string, string> = {
      lastPush: JSON.stringify(summary),
      lastPushAt: String(summary.at),
      status: 'active',
    };
    if (refusals.length > 0) set.lastRefusals = JSON.stringify(refusals);
    const remove = [...STOP_FIELDS, 'lastError', 'lastErrorAt', ...(summary.refused === 0 ? ['lastRefusals'] : [])];
    // NX: an active target is always in the due set; this only repairs one that was not.
    return this.update(id, {
      set,
      remove,
      due: { kind: 'set', at: summary.at, nx: true },
      now: summary.at,
      ...guardOf(guard),
    });
  }

  /**
   * Records a failed push (the status is left alone: the caller decides whether it stops the target), and
   * `refusals`, when there are any, as {@link recordPush} does. Guarded as {@link markStatus}.
   */
  async recordError(
    id: string,
    message: string,
    now: number,
    guard: CalDavPushGuard = {},
    refusals: readonly RefusalExample[] = [],
  ): Promise<boolean> {
    const set: Record<string, string> = { lastError: message, lastErrorAt: String(now) };
    if (refusals.length > 0) set.lastRefusals = JSON.stringify(refusals);
    return this.update(id, { set, ...guardOf(guard) });
  }

  /** The next push must list the calendar and rebuild the index. Each request is a new token. */
  async requestReconcile(id: string): Promise<boolean> {
    return this.update(id, { set: { reconcileRequested: randomBytes(6).toString('hex') } });
  }

  /** A reconcile ran for the request `token`; a request made meanwhile has another token and stays. */
  async clearReconcileRequest(id: string, token: string | undefined): Promise<boolean> {
    if (token === undefined || !CALDAV_TARGET_ID.test(id)) return false;
    return (await this.redis.eval(CLEAR_RECONCILE, 1, this.keys.caldavTarget(id), token)) === 1;
  }

  /** Moves the target's next full reconcile to `at`; does nothing for a stopped or removed target (not in the set). */
  async scheduleReconcile(id: string, at: number): Promise<void> {
    await this.redis.zadd(this.keys.caldavTargetsDue, 'XX', at, id);
  }

  /** Ids of targets whose reconcile is due at `now`, earliest first. */
  async due(now: number, limit: number): Promise<string[]> {
    return this.redis.zrangebyscore(this.keys.caldavTargetsDue, '-inf', now, 'LIMIT', 0, limit);
  }

  /** Ids of the CalDAV targets pushing from `source`. */
  async idsForSource(source: SourceKey): Promise<string[]> {
    return this.redis.smembers(this.keys.sourceCaldavTargets(source));
  }

  /** Whether any CalDAV target pushes from `source` (such a source stays active however rarely its feed is read). */
  async anyForSource(source: SourceKey): Promise<boolean> {
    return (await this.redis.scard(this.keys.sourceCaldavTargets(source))) > 0;
  }

  /** A page of all targets, oldest first, with the total count. */
  async page(offset: number, limit: number): Promise<{ total: number; targets: CalDavTarget[] }> {
    const [total, ids] = await Promise.all([
      this.redis.zcard(this.keys.caldavTargets),
      this.redis.zrange(this.keys.caldavTargets, String(offset), String(offset + limit - 1)),
    ]);
    const pipeline = this.redis.pipeline();
    for (const id of ids) pipeline.hgetall(this.keys.caldavTarget(id));
    const rows = ((await pipeline.exec()) ?? []).map(([, fields]) => (fields ?? {}) as Record<string, string>);
    // A target removed between the two reads has an empty hash: left out.
    const found = rows.filter((fields) => fields.id !== undefined && fields.source !== undefined).map(fromFields);
    return { total, targets: found };
  }

  /** Removes the target and everything pointing at it, atomically. True if it existed; safe to repeat. */
  async remove(id: string): Promise<boolean> {
    if (!CALDAV_TARGET_ID.test(id)) return false;
    // The source never changes, so reading it before the script is safe.
    const source = await this.redis.hget(this.keys.caldavTarget(id), 'source');
    const hash = this.keys.caldavTarget(id);
    const keys = [
      hash,
      this.keys.caldavIndex(id),
      source ? this.keys.sourceCaldavTargets(source) : hash,
      this.keys.caldavTargets,
      this.keys.caldavTargetsDue,
      // The script's account mapping, which CalDAV targets do not have: the hash (gone by then) stands in.
      hash,
    ];
    return (await this.redis.eval(REMOVE_TARGET, keys.length, ...keys, id)) === 1;
  }

  private async update(id: string, update: TargetUpdate): Promise<boolean> {
    if (!CALDAV_TARGET_ID.test(id)) return false;
    const keys = [this.keys.caldavTarget(id), this.keys.caldavTargetsDue, this.keys.caldavIndex(id)];
    return (await this.redis.eval(UPDATE_TARGET, keys.length, ...keys, ...updateArguments(id, update))) === 1;
  }
}
