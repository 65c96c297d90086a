/**
 * Google push targets in Redis. One HASH per target (`googleTarget(id)`) holds its public fields (see
 * `target-record.ts`, which also describes the status lifecycle), the refresh token sealed with the secret box
 * (bound to the target id) and the SHA-256 of its manage token. Around it: the source's target SET (read by the
 * publish fan-out), a ZSET of all targets by creation (admin paging), a ZSET by next reconcile (the scheduler's
 * due scan), and, for targets connected through consent, a STRING from (Google user, source) to the target.
 * Every update after `create` is a script that does nothing once the hash is gone, so no update racing
 * `remove` can bring back half a target.
 */
import { randomBytes } from 'node:crypto';
import type { RedisClient } from '../lib/redis-target.ts';
import { execOrThrow } from '../lib/redis-transaction.ts';
import { SecretBox } from '../security/secret-box.ts';
import { constantTimeEqual, hashToken, randomToken } from '../security/tokens.ts';
import type { SourceKey } from '../timetable/source.ts';
import type { RedisKeys } from './keys.ts';
import { fromFields, type PushSummary, type PushTarget, type StoppedStatus, toFields } from './target-record.ts';
import {
  CLEAR_RECONCILE,
  type DueChange,
  REMOVE_TARGET,
  type TargetUpdate,
  UPDATE_TARGET,
  updateArguments,
} from './target-scripts.ts';

export type { PushSummary, PushTarget, StoppedStatus, TargetStatus } from './target-record.ts';

import type { RefusalExample } from './target-record.ts';

/** Target ids: 16 random bytes (128 bits) as base64url, 22 characters. */
export const TARGET_ID = /^[A-Za-z0-9_-]{22}$/;

/** What a new target is made of. */
export interface NewTarget {
  source: SourceKey;
  refreshToken: string;
  calendarId: string;
  calendarOwned: boolean;
  calendarName: string;
  googleUser?: string | undefined;
  budgetKey: string;
  now: number;
}

/**
 * What a push started with: the version of the refresh token it sent (from {@link TargetStore.refreshToken})
 * and the calendar it wrote to. Updates that carry it land only while both are still the target's.
 */
export interface PushGuard {
  tokenVersion?: number | undefined;
  calendarId?: string | undefined;
}

/** The script guard of a {@link PushGuard}. */
function guardOf(guard: PushGuard): Pick<TargetUpdate, 'ifVersion' | 'ifCalendar'> {
  return {
    ifVersion: guard.tokenVersion,
    ifCalendar: guard.calendarId,
  };
}

/** A refresh token with the version it was stored under (pass the version back to `markStatus`). */
export interface VersionedToken {
  token: string;
  version: number;
}

/** Fields cleared whenever a target becomes active again. */
const STOP_FIELDS = ['statusReason', 'pausedUntil'] as const;

/** The fields of a target that pushes again: active, and its first push reconciles. */
const ACTIVE_FIELDS = { status: 'active', reconcileRequested: '1' } as const;

/** The associated data that binds a sealed refresh token to its target. */
function tokenContext(id: string): string {
  return `google-target:${id}:refresh-token`;
}

/** Google push targets: create, read, move through the status lifecycle, record pushes, page, remove. */
export class TargetStore {
  private readonly redis: RedisClient;
  private readonly keys: RedisKeys;
  private readonly box: SecretBox;

  /** `secretKey` is `Config.secretKey`; without it, anything touching a refresh token throws SecretKeyMissingError. */
  constructor(redis: RedisClient, keys: RedisKeys, secretKey: Buffer | undefined) {
    this.redis = redis;
    this.keys = keys;
    this.box = new SecretBox(secretKey);
  }

  /** Whether refresh tokens can be stored (a `SECRET_KEY` is configured). */
  get canStoreTokens(): boolean {
    return this.box.available;
  }

  /** Stores a new active target in one transaction, due for a reconcile now; the manage token is the only copy. */
  async create(input: NewTarget): Promise<{ id: string; manageToken: string }> {
    const id = randomToken(16);
    const manageToken = randomToken();
    const target: PushTarget = {
      id,
      source: input.source,
      calendarId: input.calendarId,
      calendarOwned: input.calendarOwned,
      calendarName: input.calendarName,
      budgetKey: input.budgetKey,
      status: 'active',
      statusAt: input.now,
      createdAt: input.now,
      tokenVersion: 1,
      reconcileRequested: true,
      ...(input.googleUser === undefined ? {} : { googleUser: input.googleUser }),
    };
    const sealed = this.box.seal(input.refreshToken, tokenContext(id));
    const multi = this.redis
      .multi()
      .hset(this.keys.googleTarget(id), {
        ...toFields(target),
        refreshToken: sealed,
        manageTokenHash: hashToken(manageToken),
      })
      .sadd(this.keys.sourceTargets(input.source), id)
      .zadd(this.keys.googleTargets, input.now, id)
      .zadd(this.keys.googleTargetsDue, input.now, id);
    if (input.googleUser !== undefined) multi.set(this.keys.googleUserTarget(input.googleUser, input.source), id);
    await execOrThrow(multi);
    return { id, manageToken };
  }

  /** The target, or undefined when there is none (a malformed id included). */
  async get(id: string): Promise<PushTarget | undefined> {
    if (!TARGET_ID.test(id)) return undefined;
    const fields = await this.redis.hgetall(this.keys.googleTarget(id));
    return fields.id === undefined ? undefined : fromFields(fields);
  }

  /**
   * The decrypted refresh token and its version; undefined when the target does not exist. The secret box's
   * DecryptionError (tampered, or sealed under another SECRET_KEY) and SecretKeyMissingError pass through.
   */
  async refreshToken(id: string): Promise<VersionedToken | undefined> {
    if (!TARGET_ID.test(id)) return undefined;
    const [sealed, version] = await this.redis.hmget(this.keys.googleTarget(id), 'refreshToken', 'tokenVersion');
    if (sealed === null || sealed === undefined) return undefined;
    return { token: this.box.open(sealed, tokenContext(id)), version: Number(version ?? 0) };
  }

  /**
   * Stores a new refresh token under the next version and reactivates the target (due now, reconcile
   * requested). `budgetKey`, when given, replaces the stored one. False if the target is gone.
   */
  async replaceRefreshToken(id: string, token: string, now: number, budgetKey?: string): Promise<boolean> {
    const set: Record<string, string> = { refreshToken: this.box.seal(token, tokenContext(id)), ...ACTIVE_FIELDS };
    if (budgetKey !== undefined) set.budgetKey = budgetKey;
    return this.update(id, { set, remove: STOP_FIELDS, bumpVersion: true, due: { kind: 'set', at: now }, now });
  }

  /**
   * Points the target at another calendar (a reconnect after the old one was deleted) and reactivates it:
   * its index is dropped, a reconcile requested, due now. False if the target is gone.
   */
  async replaceCalendar(
    id: string,
    calendar: { calendarId: string; calendarOwned: boolean; calendarName: string },
    now: number,
  ): Promise<boolean> {
    const set = {
      calendarId: calendar.calendarId,
      calendarOwned: calendar.calendarOwned ? '1' : '0',
      calendarName: calendar.calendarName,
      ...ACTIVE_FIELDS,
    };
    return this.update(id, { set, remove: STOP_FIELDS, due: { kind: 'set', at: now }, clearIndex: true, now });
  }

  /** Records the name its calendar has now, while the target still points at `calendarId`; false otherwise. */
  async recordCalendarName(id: string, calendarId: string, calendarName: string): Promise<boolean> {
    return this.update(id, { set: { calendarName }, ifCalendar: calendarId });
  }

  /** The target a Google user connected for `source`, if it still exists. */
  async findByUser(googleUser: string, source: SourceKey): Promise<PushTarget | undefined> {
    const id = await this.redis.get(this.keys.googleUserTarget(googleUser, source));
    if (id === null) return undefined;
    const target = await this.get(id);
    return target?.source === source ? target : undefined;
  }

  /** A new manage token for the target (the old one stops working); undefined if the target is gone. */
  async rotateManageToken(id: string): Promise<string | undefined> {
    const token = randomToken();
    return (await this.update(id, { set: { manageTokenHash: hashToken(token) } })) ? token : undefined;
  }

  /** Whether `token` is the manage token of target `id`, compared in constant time. */
  async verifyManageToken(id: string, token: string): Promise<boolean> {
    if (!TARGET_ID.test(id)) return false;
    const stored = await this.redis.hget(this.keys.googleTarget(id), 'manageTokenHash');
    return stored !== null && constantTimeEqual(stored, hashToken(token));
  }

  /**
   * Stops pushes: `paused` until `pausedUntil` (its reconcile moves there), or `needs-consent` /
   * `calendar-deleted` (it leaves the due set). With a guard (what the push started with), only while the
   * target still holds that token and points at that calendar: a push that outlived a reconnect cannot stop
   * the reconnected target. Resolves to whether it marked.
   */
  async markStatus(
    id: string,
    status: StoppedStatus,
    reason: string,
    now: number,
    options: PushGuard & { pausedUntil?: number | undefined } = {},
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
   * (examples of events Google refused in this push) replace the stored ones; those are kept while events
   * stay refused and dropped when none is. Guarded as {@link markStatus}.
   */
  async recordPush(
    id: string,
    summary: PushSummary,
    guard: PushGuard = {},
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
   * `refusals` (examples of events Google refused in it), when there are any, as {@link recordPush} does.
   * Guarded as {@link markStatus}.
   */
  async recordError(
    id: string,
    message: string,
    now: number,
    guard: PushGuard = {},
    refusals: readonly RefusalExample[] = [],
  ): Promise<boolean> {
    const set: Record<string, string> = { lastError: message, lastErrorAt: String(now) };
    if (refusals.length > 0) set.lastRefusals = JSON.stringify(refusals);
    return this.update(id, { set, ...guardOf(guard) });
  }

  /**
   * The next push must list the calendar and rebuild the index. Each request is a new token (see {@link
   * clearReconcileRequest}).
   */
  async requestReconcile(id: string): Promise<boolean> {
    return this.update(id, { set: { reconcileRequested: randomBytes(6).toString('hex') } });
  }

  /**
   * A reconcile ran for the request `token` (the target's `reconcileToken` when the push started). A request
   * made meanwhile has another token and stays: the follow-up push it queued may have been replaced in the
   * queue by a plain refresh push (deduplication keeps only the last), which then reconciles because of it.
   */
  async clearReconcileRequest(id: string, token: string | undefined): Promise<boolean> {
    if (token === undefined || !TARGET_ID.test(id)) return false;
    return (await this.redis.eval(CLEAR_RECONCILE, 1, this.keys.googleTarget(id), token)) === 1;
  }

  /** Moves the target's next full reconcile to `at`; does nothing for a stopped or removed target (not in the set). */
  async scheduleReconcile(id: string, at: number): Promise<void> {
    await this.redis.zadd(this.keys.googleTargetsDue, 'XX', at, id);
  }

  /** Ids of targets whose reconcile is due at `now`, earliest first. */
  async due(now: number, limit: number): Promise<string[]> {
    return this.redis.zrangebyscore(this.keys.googleTargetsDue, '-inf', now, 'LIMIT', 0, limit);
  }

  /** Ids of the targets pushing from `source`. */
  async idsForSource(source: SourceKey): Promise<string[]> {
    return this.redis.smembers(this.keys.sourceTargets(source));
  }

  /** Whether any target pushes from `source` (such a source stays active however rarely its feed is read). */
  async anyForSource(source: SourceKey): Promise<boolean> {
    return (await this.redis.scard(this.keys.sourceTargets(source))) > 0;
  }

  /** A page of all targets, oldest first, with the total count. */
  async page(offset: number, limit: number): Promise<{ total: number; targets: PushTarget[] }> {
    const [total, ids] = await Promise.all([
      this.redis.zcard(this.keys.googleTargets),
      this.redis.zrange(this.keys.googleTargets, String(offset), String(offset + limit - 1)),
    ]);
    const pipeline = this.redis.pipeline();
    for (const id of ids) pipeline.hgetall(this.keys.googleTarget(id));
    const rows = ((await pipeline.exec()) ?? []).map(([, fields]) => (fields ?? {}) as Record<string, string>);
    // A target removed between the two reads has an empty hash: left out.
    const found = rows.filter((fields) => fields.id !== undefined).map(fromFields);
    return { total, targets: found };
  }

  /** Removes the target and everything pointing at it, atomically. True if it existed; safe to repeat. */
  async remove(id: string): Promise<boolean> {
    if (!TARGET_ID.test(id)) return false;
    // Source and Google user never change, so reading them before the script is safe.
    const [source, googleUser] = await this.redis.hmget(this.keys.googleTarget(id), 'source', 'googleUser');
    const keys = [
      this.keys.googleTarget(id),
      this.keys.googleIndex(id),
      source ? this.keys.sourceTargets(source) : this.keys.googleTarget(id),
      this.keys.googleTargets,
      this.keys.googleTargetsDue,
      source && googleUser ? this.keys.googleUserTarget(googleUser, source) : this.keys.googleTarget(id),
    ];
    return (await this.redis.eval(REMOVE_TARGET, keys.length, ...keys, id)) === 1;
  }

  private async update(id: string, update: TargetUpdate): Promise<boolean> {
    if (!TARGET_ID.test(id)) return false;
    const keys = [this.keys.googleTarget(id), this.keys.googleTargetsDue, this.keys.googleIndex(id)];
    return (await this.redis.eval(UPDATE_TARGET, keys.length, ...keys, ...updateArguments(id, update))) === 1;
  }
}
