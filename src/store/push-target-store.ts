/**
 * Push targets of one calendar kind in Redis; the composition root makes one store per kind from the kind's
 * {@link PushTargetLayout}. One HASH per target holds its public fields (see `push-target-record.ts`, which also
 * describes the status lifecycle), the credential sealed with the secret box (bound to the target id) and the
 * SHA-256 of its manage token. Around it: the source's target SET (read by the publish fan-out), a ZSET of all
 * targets by creation (admin paging), a ZSET by next reconcile (the scheduler's due scan), and, for a kind that
 * has one, a STRING from (owner, source) to the target. Every update after `create` is a script that does
 * nothing once the hash is gone, so no update racing `remove` can bring back half a target.
 */
import { randomBytes } from 'node:crypto';
import type { RedisClient } from '../lib/redis-target.ts';
import { execOrThrow } from '../lib/redis-transaction.ts';
import { SecretBox } from '../security/secret-box.ts';
import { constantTimeEqual, hashToken, randomToken } from '../security/tokens.ts';
import type { SourceKey } from '../timetable/source.ts';
import type { SubscriberOptions } from '../timetable/types.ts';
import { TargetExistsError } from './errors.ts';
import { PushIndex } from './push-index.ts';
import type {
  CalendarChoice,
  NewPushTarget,
  PushGuard,
  PushTargetLayout,
  VersionedSecret,
} from './push-target-layout.ts';
import {
  CORE_FIELDS,
  fromFields,
  optionsField,
  type PushSummary,
  type PushTarget,
  type RefusalExample,
  type StoppedStatus,
  type TargetKind,
  toFields,
} from './push-target-record.ts';

import {
  CLEAR_RECONCILE,
  type DueChange,
  REMOVE_TARGET,
  type TargetUpdate,
  UPDATE_TARGET,
  updateArguments,
} from './target-scripts.ts';

/** Target ids: 16 random bytes (128 bits) as base64url, 22 characters. */
export const TARGET_ID = /^[A-Za-z0-9_-]{22}$/;

/** A new target id, for a caller that needs it before {@link PushTargetStore.create} (a calendar named by it). */
export function newTargetId(): string {
  return randomToken(16);
}

/** Fields cleared whenever a target becomes active again. */
const STOP_FIELDS = ['statusReason', 'pausedUntil'] as const;

/** The fields of a target that pushes again: active, and its first push reconciles. */
const ACTIVE_FIELDS = { status: 'active', reconcileRequested: '1' } as const;

/** The script guard of a {@link PushGuard}. */
function guardOf(guard: PushGuard): Pick<TargetUpdate, 'ifVersion' | 'ifCalendar'> {
  return { ifVersion: guard.credentialVersion, ifCalendar: guard.calendarId };
}

/** Push targets of one kind: create, read, move through the status lifecycle, record pushes, page, remove. */
export class PushTargetStore<N extends string = string> {
  private readonly redis: RedisClient;
  private readonly layout: PushTargetLayout<N>;
  private readonly box: SecretBox;
  private readonly secretFields: ReadonlySet<string>;

  /** `secretKey` is `Config.secretKey`; without it, anything touching a credential throws SecretKeyMissingError. */
  constructor(redis: RedisClient, layout: PushTargetLayout<N>, secretKey: Buffer | undefined) {
    this.redis = redis;
    this.layout = layout;
    this.box = new SecretBox(secretKey);
    this.secretFields = new Set([layout.credential.field, 'manageTokenHash']);
  }

  /** The kind whose targets this store keeps. */
  get kind(): TargetKind {
    return this.layout.kind;
  }

  /** The kind's status of a target that needs a new credential. */
  get needsCredential(): N {
    return this.layout.needsCredential;
  }

  /** Whether credentials can be stored (a `SECRET_KEY` is configured). */
  get canStoreCredentials(): boolean {
    return this.box.available;
  }

  /** The push index of target `id` (its writes answer false once the target is removed). */
  index(id: string): PushIndex {
    return new PushIndex(this.redis, this.layout.keys.target(id), this.layout.keys.index(id));
  }

  /** Stores a new active target in one transaction, due for a reconcile now; the manage token is the only copy. */
  async create(input: NewPushTarget): Promise<{ id: string; manageToken: string }> {
    const id = input.id ?? newTargetId();
    if (!TARGET_ID.test(id)) throw new RangeError('a target id is 22 characters of base64url');
    this.checkDetails(Object.keys(input.details));
    const { keys, owner } = this.layout;
    const manageToken = randomToken();
    const target: PushTarget<N> = {
      id,
      kind: this.layout.kind,
      source: input.source,
      calendarId: input.calendarId,
      calendarOwned: input.calendarOwned,
      calendarName: input.calendarName,
      status: 'active',
      statusAt: input.now,
      credentialVersion: 1,
      createdAt: input.now,
      reconcileRequested: true,
      details: input.details,
      ...(input.options === undefined ? {} : { options: input.options }),
    };
    const sealed = this.box.seal(input.secret, this.layout.credential.context(id));
    // A chosen id is a fresh random one (128 bits); this catches a caller that passes one twice.
    if (input.id !== undefined && (await this.redis.exists(keys.target(id))) === 1)
      throw new TargetExistsError(`target ${id} exists`);
    const multi = this.redis
      .multi()
      .hset(keys.target(id), {
        ...toFields(target, this.layout.kindField),
        [this.layout.credential.field]: sealed,
        manageTokenHash: hashToken(manageToken),
      })
      .sadd(keys.source(input.source), id)
      .zadd(keys.all, input.now, id)
      .zadd(keys.due, input.now, id);
    const ownerValue = owner === undefined ? undefined : input.details[owner.field];
    if (owner !== undefined && ownerValue !== undefined) multi.set(owner.key(ownerValue, input.source), id);
    await execOrThrow(multi);
    return { id, manageToken };
  }

  /** The target, or undefined when there is none (a malformed id included). */
  async get(id: string): Promise<PushTarget<N> | undefined> {
    if (!TARGET_ID.test(id)) return undefined;
    return this.parse(await this.redis.hgetall(this.layout.keys.target(id)));
  }

  /**
   * The decrypted credential and its version; undefined when the target does not exist. The secret box's
   * DecryptionError (tampered, or sealed under another SECRET_KEY) and SecretKeyMissingError pass through.
   */
  async credential(id: string): Promise<VersionedSecret | undefined> {
    if (!TARGET_ID.test(id)) return undefined;
    const [sealed, version] = await this.redis.hmget(
      this.layout.keys.target(id),
      this.layout.credential.field,
      'tokenVersion',
    );
    if (sealed === null || sealed === undefined) return undefined;
    return { secret: this.box.open(sealed, this.layout.credential.context(id)), version: Number(version ?? 0) };
  }

  /**
   * Stores a new credential under the next version and reactivates the target (due now, reconcile requested).
   * `details`, when given, replace those stored (Google's budget key, CalDAV's login). False if the target is gone.
   */
  async replaceCredential(
    id: string,
    secret: string,
    now: number,
    details: Readonly<Record<string, string>> = {},
  ): Promise<boolean> {
    this.checkDetails(Object.keys(details), true);
    const sealed = this.box.seal(secret, this.layout.credential.context(id));
    const set = { ...details, [this.layout.credential.field]: sealed, ...ACTIVE_FIELDS };
    return this.update(id, { set, remove: STOP_FIELDS, bumpVersion: true, due: { kind: 'set', at: now }, now });
  }

  /**
   * Points the target at another calendar (a reconnect after the old one was deleted) and reactivates it: its
   * index and the calendar's details are dropped, a reconcile requested, due now. False if the target is gone.
   */
  async replaceCalendar(id: string, calendar: CalendarChoice, now: number): Promise<boolean> {
    const details = calendar.details ?? {};
    this.checkDetails(Object.keys(details), true);
    const set = {
      ...details,
      calendarId: calendar.calendarId,
      calendarOwned: calendar.calendarOwned ? '1' : '0',
      calendarName: calendar.calendarName,
      ...ACTIVE_FIELDS,
    };
    const dropped = this.layout.calendarDetails.filter((name) => !(name in details));
    const remove = [...STOP_FIELDS, ...dropped];
    return this.update(id, { set, remove, due: { kind: 'set', at: now }, clearIndex: true, now });
  }

  /** Records the name its calendar has now, while the target still points at `calendarId`; false otherwise. */
  async recordCalendarName(id: string, calendarId: string, calendarName: string): Promise<boolean> {
    return this.update(id, { set: { calendarName }, ifCalendar: calendarId });
  }

  /**
   * Sets and drops detail fields (CalDAV's listing state) while the target still points at `calendarId`: what
   * was learnt of a calendar replaced meanwhile is not this one's.
   */
  async recordDetails(
    id: string,
    calendarId: string,
    set: Readonly<Record<string, string>>,
    remove: readonly string[] = [],
  ): Promise<boolean> {
    this.checkDetails([...Object.keys(set), ...remove], true);
    return this.update(id, { set: { ...set }, remove, ifCalendar: calendarId });
  }

  /**
   * Makes the calendar follow `options` from its next push on (the caller enqueues that push: it writes only
   * the difference, as any refresh does). False when the target is gone.
   */
  async updateOptions(id: string, options: SubscriberOptions): Promise<boolean> {
    return this.update(id, { set: { options: optionsField(options) } });
  }

  /** The target an owner (Google's user) connected for `source`, if the kind keeps owners and it still exists. */
  async findByOwner(owner: string, source: SourceKey): Promise<PushTarget<N> | undefined> {
    if (this.layout.owner === undefined) return undefined;
    const id = await this.redis.get(this.layout.owner.key(owner, source));
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
    const stored = await this.redis.hget(this.layout.keys.target(id), 'manageTokenHash');
    return stored !== null && constantTimeEqual(stored, hashToken(token));
  }

  /**
   * Stops pushes: `paused` until `pausedUntil` (its reconcile moves there), or needs-credential /
   * `calendar-deleted` (it leaves the due set). With a guard (what the push started with), only while the
   * target still holds that credential and points at that calendar: a push that outlived a reconnect cannot
   * stop the reconnected target. Resolves to whether it marked.
   */
  async markStatus(
    id: string,
    status: StoppedStatus<N>,
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
   * (examples of events the server refused in this push) replace the stored ones; those are kept while events
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
    const due: DueChange = { kind: 'set', at: summary.at, nx: true };
    return this.update(id, { set, remove, due, now: summary.at, ...guardOf(guard) });
  }

  /**
   * Records a failed push (the status is left alone: the caller decides whether it stops the target), and
   * `refusals`, when there are any, as {@link recordPush} does. Guarded as {@link markStatus}.
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
    return (await CLEAR_RECONCILE.run(this.redis, [this.layout.keys.target(id)], [token])) === 1;
  }

  /** Moves the target's next full reconcile to `at`; does nothing for a stopped or removed target (not in the set). */
  async scheduleReconcile(id: string, at: number): Promise<void> {
    await this.redis.zadd(this.layout.keys.due, 'XX', at, id);
  }

  /** Ids of targets whose reconcile is due at `now`, earliest first. */
  async due(now: number, limit: number): Promise<string[]> {
    return this.redis.zrangebyscore(this.layout.keys.due, '-inf', now, 'LIMIT', 0, limit);
  }

  /** Ids of the targets pushing from `source`. */
  async idsForSource(source: SourceKey): Promise<string[]> {
    return this.redis.smembers(this.layout.keys.source(source));
  }

  /** Whether any target pushes from `source` (such a source stays active however rarely its feed is read). */
  async anyForSource(source: SourceKey): Promise<boolean> {
    return (await this.redis.scard(this.layout.keys.source(source))) > 0;
  }

  /** A page of all targets, oldest first, with the total count. */
  async page(offset: number, limit: number): Promise<{ total: number; targets: PushTarget<N>[] }> {
    const { keys } = this.layout;
    const [total, ids] = await Promise.all([
      this.redis.zcard(keys.all),
      this.redis.zrange(keys.all, String(offset), String(offset + limit - 1)),
    ]);
    const pipeline = this.redis.pipeline();
    for (const id of ids) pipeline.hgetall(keys.target(id));
    const rows = ((await pipeline.exec()) ?? []).map(([, fields]) => (fields ?? {}) as Record<string, string>);
    // A target removed between the two reads has an empty hash: left out.
    const found = rows.flatMap((fields) => this.parse(fields) ?? []);
    return { total, targets: found };
  }

  /** Removes the target and everything pointing at it, atomically. True if it existed; safe to repeat. */
  async remove(id: string): Promise<boolean> {
    if (!TARGET_ID.test(id)) return false;
    const { keys, owner } = this.layout;
    const hash = keys.target(id);
    // Source and owner never change, so reading them before the script is safe.
    const [source, ownerValue] = await this.redis.hmget(hash, 'source', owner?.field ?? 'source');
    const scriptKeys = [
      hash,
      keys.index(id),
      source ? keys.source(source) : hash,
      keys.all,
      keys.due,
      // The owner mapping, or the hash (gone by then) standing in for a kind or target without one.
      owner !== undefined && source && ownerValue ? owner.key(ownerValue, source) : hash,
    ];
    return (await REMOVE_TARGET.run(this.redis, scriptKeys, [id])) === 1;
  }

  /**
   * Throws unless `names` are detail fields: never a field of every target's or a secret one, and, once a target
   * exists (`stored`), never its owner, which the owner lookup key was made from and `remove` deletes by.
   */
  private checkDetails(names: readonly string[], stored = false): void {
    for (const name of names) {
      const owner = stored && name === this.layout.owner?.field;
      if (CORE_FIELDS.has(name) || this.secretFields.has(name) || owner)
        throw new RangeError(`${name} is not a detail`);
    }
  }

  private parse(fields: Record<string, string>): PushTarget<N> | undefined {
    if (fields.id === undefined || fields.source === undefined) return undefined;
    return fromFields(fields, this.layout.kind, this.layout.needsCredential, this.secretFields);
  }

  private async update(id: string, update: TargetUpdate): Promise<boolean> {
    if (!TARGET_ID.test(id)) return false;
    const { keys } = this.layout;
    const scriptKeys = [keys.target(id), keys.due, keys.index(id)];
    return (await UPDATE_TARGET.run(this.redis, scriptKeys, updateArguments(id, update))) === 1;
  }
}
