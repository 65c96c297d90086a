/**
 * Change sets waiting to be told, and what became of each delivery. A change set is written into the outbox in
 * the very transaction that publishes it, so a crash after the publication leaves it there for the fan-out (or
 * the sweeper) to pick up, and a crash before it published nothing. Deliveries are keyed by a digest of their
 * id (`<prefix>:<address>:<source>:<stamp>`: `tg:<chat>:…`, `mx:<dialog>:…`, `em:<mailbox>:…`, `wh:<hook>:…`): a
 * lease while one worker sends, then the outcome, kept for days, so a retried or doubled job never tells anyone
 * twice, whatever the channel.
 *
 * A message to a person that would go out in the quiet hours (or before the daily digest a mailbox chose) is
 * held instead: the address's part of the change set goes into a HASH of that channel, address and source
 * (stamp → set), and one collapsing send job per address, source and moment tells the net change of all of them
 * when the hours end (notify/net-change.ts). That job leases the HASH as a delivery of its own
 * (`<prefix>:<address>:<source>:held`), and settles what it told in one transaction: the sets leave the HASH and
 * each one's own delivery record says how it ended, so a fan-out run again never holds a set twice.
 */
import { createHash } from 'node:crypto';
import type { ChainableCommander } from 'ioredis';
import { isNoScript, loadScript } from '../lib/lua-script.ts';
import { packJson, unpackJson } from '../lib/packed-json.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import type { ChangeSet } from '../timetable/notify-change.ts';
import type { SourceKey } from '../timetable/source.ts';
import type { RedisKeys } from './keys.ts';

/** Takes or renews a delivery's lease unless it is done or leased by another (notify-claim.lua). */
const CLAIM = loadScript(import.meta.dirname, 'notify-claim');
/** Drops a delivery's lease still held by its owner (notify-release.lua). */
const RELEASE = loadScript(import.meta.dirname, 'notify-release');
/** Puts a chat's part of a change set with those it waits with (notify-hold.lua). */
const HOLD = loadScript(import.meta.dirname, 'notify-hold');

/** How long an outbox entry and a delivery's outcome are kept: beyond any retry of its jobs. */
export const NOTIFY_RECORD_TTL_S = 3 * 24 * 3600;

/** How a delivery ended: told, its subscriber gone (blocked the bot, webhook disabled), or nothing left to tell. */
export type DeliveryEnd = 'sent' | 'dropped' | 'empty';

/** What {@link NotifyOutbox.claim} found. */
export type ClaimResult = 'claimed' | 'sent' | 'busy';

/** One change set of the outbox. */
export interface OutboxRef {
  source: SourceKey;
  stamp: number;
}

/**
 * The digest a delivery is known by in Redis and in job ids: 22 characters of base64url SHA-256 (no `:`, as job
 * ids need).
 */
export function deliveryHash(deliveryId: string): string {
  return createHash('sha256').update(deliveryId).digest('base64url').slice(0, 22);
}

/**
 * A channel's prefix in delivery ids: a person's channel's (`tg`, `mx`, `em`: notify/channel.ts names them), or
 * `wh` for webhooks. The prefix keeps one address of two channels (a Telegram chat and a MAX dialog may share a
 * number) two deliveries.
 */
export type DeliveryPrefix = string;

/**
 * The id of one delivery of a change set: `<prefix>:<subscriber>:<source>:<stamp>`. Telegram's (`tg:<chat>:…`)
 * predate the other channels and are what they were, so that deliveries in flight across an upgrade stay one.
 */
export function deliveryId(prefix: DeliveryPrefix, subscriber: string, ref: OutboxRef): string {
  return `${prefix}:${subscriber}:${ref.source}:${ref.stamp}`;
}

/**
 * The delivery id of the change sets held for one address and source on one channel: the lease of their
 * collapsing send, and the name of their HASH (`tg:<chat>:<source>:held` for Telegram, as it always was).
 */
export function heldDeliveryId(prefix: DeliveryPrefix, address: string, source: SourceKey): string {
  return `${prefix}:${address}:${source}:held`;
}

/** What {@link NotifyOutbox.holdAll} did: held it, found it told already, or (`if-held`) found nothing waiting. */
export type HoldResult = 'held' | 'done' | 'free';

/** One request of {@link NotifyOutbox.holdAll}. */
export interface HoldRequest {
  /** The channel's prefix in delivery ids. */
  prefix: DeliveryPrefix;
  address: string;
  ref: OutboxRef;
  /** The address's part of the change set, as its options filter it. */
  set: ChangeSet;
  mode: 'always' | 'if-held';
}

/** One change set held for an address. */
export interface HeldSet {
  stamp: number;
  set: ChangeSet;
}

/** The outbox of change sets, and the delivery records that make each delivery happen once. */
export class NotifyOutbox {
  private readonly redis: RedisClient;
  private readonly keys: RedisKeys;

  constructor(redis: RedisClient, keys: RedisKeys) {
    this.redis = redis;
    this.keys = keys;
  }

  /** Queues on `multi` (the publication's own) the store of a change set in the outbox. */
  write(multi: ChainableCommander, set: ChangeSet): ChainableCommander {
    return multi
      .set(this.keys.notifyOutboxItem(set.source, set.stamp), packJson(set), 'EX', NOTIFY_RECORD_TTL_S)
      .zadd(this.keys.notifyOutbox, set.stamp, memberOf(set));
  }

  /** A change set of the outbox; undefined once done, or expired. */
  async load(ref: OutboxRef): Promise<ChangeSet | undefined> {
    const bytes = await this.redis.getBuffer(this.keys.notifyOutboxItem(ref.source, ref.stamp));
    return bytes === null ? undefined : unpackJson<ChangeSet>(bytes);
  }

  /** Takes a change set out of the outbox: its fan-out has queued every delivery. */
  async done(ref: OutboxRef): Promise<void> {
    await this.redis
      .multi()
      .del(this.keys.notifyOutboxItem(ref.source, ref.stamp))
      .zrem(this.keys.notifyOutbox, memberOf(ref))
      .exec();
  }

  /** Change sets still in the outbox published at or before `before` (epoch ms), oldest first, at most `limit`. */
  async due(before: number, limit: number): Promise<OutboxRef[]> {
    const max = Number.isFinite(before) ? String(before) : '+inf';
    const members = await this.redis.zrangebyscore(this.keys.notifyOutbox, '-inf', max, 'LIMIT', 0, limit);
    return members.flatMap((member) => {
      const bar = member.lastIndexOf('|');
      const stamp = Number(member.slice(bar + 1));
      return bar > 0 && Number.isSafeInteger(stamp) ? [{ source: member.slice(0, bar), stamp }] : [];
    });
  }

  /** How many change sets wait in the outbox. */
  async size(): Promise<number> {
    return this.redis.zcard(this.keys.notifyOutbox);
  }

  /**
   * Takes the lease of a delivery for `leaseMs`: `claimed` (taken, or renewed by the same owner), `busy` (another
   * owner's lease is live: try again after it), `sent` (done already: do nothing).
   */
  async claim(id: string, owner: string, leaseMs: number): Promise<ClaimResult> {
    const key = this.keys.notifyDelivery(deliveryHash(id));
    return (await CLAIM.run(this.redis, [key], [owner, String(Math.max(1, Math.round(leaseMs)))])) as ClaimResult;
  }

  /** Records how a delivery ended; from then on every claim of it answers `sent`. */
  async markDone(id: string, _owner: string, outcome: DeliveryEnd): Promise<void> {
    await this.redis.set(this.keys.notifyDelivery(deliveryHash(id)), outcome, 'EX', NOTIFY_RECORD_TTL_S);
  }

  /** Gives a delivery's lease back (when `owner` still holds it), so that its retry may claim it at once. */
  async release(id: string, owner: string): Promise<boolean> {
    return Number(await RELEASE.run(this.redis, [this.keys.notifyDelivery(deliveryHash(id))], [owner])) === 1;
  }

  /**
   * Holds each `set` (an address's part of the change set `ref` on the channel of `prefix`) for a collapsing send,
   * in one round trip: `always` in the quiet hours or until a digest; `if-held` when the message could go now, so
   * that it joins sets already waiting rather than overtake them. The answers are in the order asked.
   */
  async holdAll(requests: readonly HoldRequest[]): Promise<HoldResult[]> {
    if (requests.length === 0) return [];
    const calls = requests.map(({ prefix, address, ref, set, mode }) => ({
      keys: [
        this.heldKey(prefix, address, ref.source),
        this.keys.notifyDelivery(deliveryHash(deliveryId(prefix, address, ref))),
      ],
      args: [String(ref.stamp), packJson(set), NOTIFY_RECORD_TTL_S, mode],
    }));
    const pipeline = this.redis.pipeline();
    for (const { keys, args } of calls) pipeline.evalsha(HOLD.sha, keys.length, ...keys, ...args);
    const results = (await pipeline.exec()) ?? [];
    const answers: HoldResult[] = [];
    for (const [index, call] of calls.entries()) {
      const [error, value] = results[index] ?? [new Error('Redis gave no answer')];
      // A node that does not know the script yet (a restart, a failover): run that one with its text.
      if (error && isNoScript(error)) answers.push((await HOLD.run(this.redis, call.keys, call.args)) as HoldResult);
      else if (error) throw error;
      else answers.push(value as HoldResult);
    }
    return answers;
  }

  /** The sets held for an address and source on the channel of `prefix`, oldest first. */
  async held(prefix: DeliveryPrefix, address: string, source: SourceKey): Promise<HeldSet[]> {
    const fields = await this.redis.hgetallBuffer(this.heldKey(prefix, address, source));
    return Object.entries(fields)
      .map(([stamp, bytes]) => ({ stamp: Number(stamp), set: unpackJson<ChangeSet>(bytes) }))
      .filter((each) => Number.isSafeInteger(each.stamp))
      .sort((a, b) => a.stamp - b.stamp);
  }

  /**
   * Records how the held sets `stamps` of an address and source ended, in one transaction: each one's delivery
   * record says `outcome`, and they leave the held HASH (sets held meanwhile stay for the next send).
   */
  async settleHeld(
    prefix: DeliveryPrefix,
    address: string,
    source: SourceKey,
    stamps: readonly number[],
    outcome: DeliveryEnd,
  ): Promise<void> {
    if (stamps.length === 0) return;
    const multi = this.redis.multi().hdel(this.heldKey(prefix, address, source), ...stamps.map(String));
    for (const stamp of stamps)
      multi.set(
        this.keys.notifyDelivery(deliveryHash(deliveryId(prefix, address, { source, stamp }))),
        outcome,
        'EX',
        NOTIFY_RECORD_TTL_S,
      );
    const results = await multi.exec();
    const failed = results?.find(([error]) => error !== null);
    if (results === null || failed)
      throw (failed?.[0] as Error | undefined) ?? new Error('Redis transaction was aborted');
  }

  private heldKey(prefix: DeliveryPrefix, address: string, source: SourceKey): string {
    return this.keys.notifyHeld(deliveryHash(heldDeliveryId(prefix, address, source)));
  }

  /** How a delivery stands: its outcome, `leased`, or undefined when nobody has claimed it. */
  async state(id: string): Promise<DeliveryEnd | 'leased' | undefined> {
    const value = await this.redis.get(this.keys.notifyDelivery(deliveryHash(id)));
    if (value === null) return undefined;
    return value.startsWith('lease:') ? 'leased' : (value as DeliveryEnd);
  }
}

function memberOf(ref: OutboxRef): string {
  return `${ref.source}|${ref.stamp}`;
}
