/**
 * Mailboxes told of changes by e-mail, and sign-ups waiting for their address to be confirmed.
 *
 * An address is personal data: it is stored only sealed with the secret box (bound to its record), found by its
 * keyed digest (HMAC under `SECRET_KEY`, so a digest cannot be checked against guessed addresses without the key),
 * and deleted with its mailbox once the mailbox follows nothing. Everything else names a mailbox by its random id,
 * which is the channel's address (delivery ids, jobs, logs).
 *
 * - A sign-up (`mailPending(id)`) holds the sealed address, the source, its options and the digest choice, for
 *   48 h (Redis expires it: an address never confirmed is forgotten). Its confirmation link's token is
 *   `<id>.<MAC of the id>`: nothing secret is stored for it, and the job that mails it needs only the id.
 * - Confirming makes (or finds) the address's mailbox (`mailbox(id)`, `mailboxOfAddress(digest)`), adds the
 *   subscription to `mailboxSources(id)` (source → options, digest, a nonce) and the mailbox to the source's SET
 *   (`mailSourceBoxes`), which the fan-out reads: only confirmed mailboxes are ever told anything.
 * - Each subscription's unsubscribe token is `<mailbox id>.<MAC of mailbox, source and nonce>`, in every mail's
 *   `List-Unsubscribe` URL: unguessable, nothing stored beyond the nonce, and dead once the subscription is gone
 *   (a new one gets a new nonce).
 */
import { loadScript } from '../lib/lua-script.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import { SecretKeyMissingError } from '../security/errors.ts';
import { SecretBox } from '../security/secret-box.ts';
import { constantTimeEqual, keyedDigest, randomToken } from '../security/tokens.ts';
import type { NotifyOptions } from '../timetable/notify-change.ts';
import { type SourceKey, sourceOf } from '../timetable/source.ts';
import type { RedisKeys } from './keys.ts';
import { notifyOptionsOf } from './telegram-chats.ts';

const CONFIRM = loadScript(import.meta.dirname, 'mailbox-confirm');
const REMOVE = loadScript(import.meta.dirname, 'mailbox-remove');

/** How long a sign-up waits for its confirmation: after that its address is forgotten. */
export const PENDING_TTL_SECONDS = 48 * 3600;
/** The most timetables one mailbox may follow. */
export const MAX_SOURCES_PER_MAILBOX = 20;
/** Mailbox and sign-up ids: 16 random bytes (128 bits) as base64url. */
export const MAILBOX_ID = /^[A-Za-z0-9_-]{22}$/;
const TOKEN = /^([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/;

const ADDRESS_PURPOSE = 'mail-address';
const CONFIRM_PURPOSE = 'mail-confirm';
const UNSUBSCRIBE_PURPOSE = 'mail-unsubscribe';

/** A sign-up waiting for its confirmation, its address opened. Never log `address`. */
export interface PendingSignUp {
  id: string;
  address: string;
  source: SourceKey;
  options: NotifyOptions;
  digest: boolean;
  createdAt: number;
}

/** One subscription of a mailbox. */
export interface MailboxSubscription {
  source: SourceKey;
  /** A public source's options; empty for a personal one (its subscription's options apply). */
  options: NotifyOptions;
  /** A daily digest instead of a mail per change. */
  digest: boolean;
}

/** A mailbox subscribed to a source. */
export interface SourceMailbox {
  mailboxId: string;
  options: NotifyOptions;
  digest: boolean;
}

/** What confirming a sign-up did. */
export type ConfirmOutcome =
  | { kind: 'added' | 'updated'; mailboxId: string; source: SourceKey }
  /** The mailbox follows {@link MAX_SOURCES_PER_MAILBOX} others already: nothing changed, the sign-up is kept. */
  | { kind: 'full'; source: SourceKey }
  /** No such sign-up: used already, or older than 48 h. */
  | { kind: 'expired' };

interface StoredSubscription {
  o?: unknown;
  d?: unknown;
  n?: unknown;
}

/** The mailboxes and the sign-ups. */
export class Mailboxes {
  private readonly redis: RedisClient;
  private readonly keys: RedisKeys;
  private readonly box: SecretBox;
  private readonly secretKey: Buffer | undefined;

  /** `secretKey` is `Config.secretKey`; without it, anything touching an address throws SecretKeyMissingError. */
  constructor(redis: RedisClient, keys: RedisKeys, secretKey: Buffer | undefined) {
    this.redis = redis;
    this.keys = keys;
    this.box = new SecretBox(secretKey);
    this.secretKey = secretKey === undefined ? undefined : Buffer.from(secretKey);
  }

  /** Whether addresses can be stored (a `SECRET_KEY` is configured). */
  get canStoreAddresses(): boolean {
    return this.box.available;
  }

  /** The keyed digest of a normalised address (lib/mail-address.ts): what it is found and limited by. */
  addressHash(address: string): string {
    return this.mac(ADDRESS_PURPOSE, address, 'hex');
  }

  /** Stores a sign-up for 48 h; resolves to its id (what the confirmation job names). */
  async createPending(input: {
    address: string;
    source: SourceKey;
    options: NotifyOptions;
    digest: boolean;
    now: number;
  }): Promise<string> {
    const id = randomToken(16);
    const key = this.keys.mailPending(id);
    const record = {
      address: this.box.seal(input.address, pendingContext(id)),
      hash: this.addressHash(input.address),
      source: input.source,
      options: JSON.stringify(optionsFor(input.source, input.options)),
      digest: input.digest ? '1' : '0',
      created: String(input.now),
    };
    const results = await this.redis.multi().hset(key, record).expire(key, PENDING_TTL_SECONDS).exec();
    const failed = results?.find(([error]) => error !== null);
    if (results === null || failed) throw failed?.[0] ?? new Error('Redis transaction was aborted');
    return id;
  }

  /** A sign-up with its address opened; undefined when there is none (used, expired, or a malformed id). */
  async pending(id: string): Promise<PendingSignUp | undefined> {
    if (!MAILBOX_ID.test(id)) return undefined;
    const fields = await this.redis.hgetall(this.keys.mailPending(id));
    if (fields.address === undefined || fields.source === undefined) return undefined;
    return {
      id,
      address: this.box.open(fields.address, pendingContext(id)),
      source: fields.source,
      options: readOptions(parseJson(fields.options)),
      digest: fields.digest === '1',
      createdAt: Number(fields.created ?? 0),
    };
  }

  /** Forgets a sign-up at once (its address refused for good: nobody can confirm it). */
  async forgetPending(id: string): Promise<void> {
    if (MAILBOX_ID.test(id)) await this.redis.del(this.keys.mailPending(id));
  }

  /** The token of a sign-up's confirmation link. */
  confirmToken(pendingId: string): string {
    return `${pendingId}.${this.mac(CONFIRM_PURPOSE, pendingId)}`;
  }

  /** The sign-up a confirmation token names, when the token is one of ours (it may have expired since). */
  pendingIdOf(token: string): string | undefined {
    const match = TOKEN.exec(token);
    if (match === null || !this.canStoreAddresses) return undefined;
    const [, id, mac] = match as unknown as [string, string, string];
    return constantTimeEqual(mac, this.mac(CONFIRM_PURPOSE, id)) ? id : undefined;
  }

  /**
   * Confirms a sign-up: its address's mailbox (a new one for a new address) follows the source with the
   * sign-up's options, and the sign-up is used up. One script decides, so two confirmations at once of one
   * address make one mailbox.
   */
  async confirm(pendingId: string, now: number): Promise<ConfirmOutcome> {
    const signUp = await this.pending(pendingId);
    if (signUp === undefined) return { kind: 'expired' };
    const hash = this.addressHash(signUp.address);
    const record = JSON.stringify({ o: signUp.options, d: signUp.digest });
    for (let round = 0; round < 3; round += 1) {
      const id = (await this.redis.get(this.keys.mailboxOfAddress(hash))) ?? randomToken(16);
      const keys = [
        this.keys.mailPending(pendingId),
        this.keys.mailboxOfAddress(hash),
        this.keys.mailbox(id),
        this.keys.mailboxSources(id),
        this.keys.mailSourceBoxes(signUp.source),
      ];
      const sealed = this.box.seal(signUp.address, mailboxContext(id));
      const args = [id, sealed, hash, now, signUp.source, record, randomToken(16), MAX_SOURCES_PER_MAILBOX];
      const done = await CONFIRM.run(this.redis, keys, args);
      if (done === 'moved') continue;
      if (done === 'expired') return { kind: 'expired' };
      if (done === 'full') return { kind: 'full', source: signUp.source };
      return { kind: done === 'updated' ? 'updated' : 'added', mailboxId: id, source: signUp.source };
    }
    throw new Error('the mailbox of an address kept changing while a sign-up was confirmed');
  }

  /** The mailboxes subscribed to a source, with their options (SSCAN: a large set never blocks Redis). */
  async ofSource(source: SourceKey): Promise<SourceMailbox[]> {
    const found: SourceMailbox[] = [];
    let cursor = '0';
    do {
      const [next, batch] = await this.redis.sscan(this.keys.mailSourceBoxes(source), cursor, 'COUNT', 500);
      cursor = next;
      if (batch.length === 0) continue;
      const pipeline = this.redis.pipeline();
      for (const id of batch) pipeline.hget(this.keys.mailboxSources(id), source);
      const answers = (await pipeline.exec()) ?? [];
      for (const [index, mailboxId] of batch.entries()) {
        const json = answers[index]?.[1];
        // A mailbox that left between the two reads is not told.
        if (typeof json !== 'string') continue;
        const stored = parseJson(json) as StoredSubscription | undefined;
        found.push({ mailboxId, options: readOptions(stored?.o), digest: stored?.d === true });
      }
    } while (cursor !== '0');
    return found;
  }

  /** Whether any confirmed mailbox follows a source. */
  async hasAny(source: SourceKey): Promise<boolean> {
    return (await this.redis.scard(this.keys.mailSourceBoxes(source))) > 0;
  }

  /** Whether a mailbox follows a source. */
  async follows(mailboxId: string, source: SourceKey): Promise<boolean> {
    if (!MAILBOX_ID.test(mailboxId)) return false;
    return (await this.redis.hexists(this.keys.mailboxSources(mailboxId), source)) === 1;
  }

  /** A mailbox's subscriptions, sorted by source. */
  async subscriptionsOf(mailboxId: string): Promise<MailboxSubscription[]> {
    if (!MAILBOX_ID.test(mailboxId)) return [];
    const fields = await this.redis.hgetall(this.keys.mailboxSources(mailboxId));
    return Object.entries(fields)
      .map(([source, json]) => {
        const stored = parseJson(json) as StoredSubscription | undefined;
        return { source, options: readOptions(stored?.o), digest: stored?.d === true };
      })
      .sort((a, b) => (a.source < b.source ? -1 : a.source > b.source ? 1 : 0));
  }

  /** A mailbox's address, opened (only to send a mail to it; never log it); undefined once it is deleted. */
  async addressOf(mailboxId: string): Promise<string | undefined> {
    if (!MAILBOX_ID.test(mailboxId)) return undefined;
    const sealed = await this.redis.hget(this.keys.mailbox(mailboxId), 'address');
    return sealed === null ? undefined : this.box.open(sealed, mailboxContext(mailboxId));
  }

  /** The unsubscribe token of a mailbox's subscription to a source; undefined when it does not follow it. */
  async unsubscribeToken(mailboxId: string, source: SourceKey): Promise<string | undefined> {
    if (!MAILBOX_ID.test(mailboxId)) return undefined;
    const json = await this.redis.hget(this.keys.mailboxSources(mailboxId), source);
    const nonce = json === null ? undefined : (parseJson(json) as StoredSubscription | undefined)?.n;
    if (typeof nonce !== 'string') return undefined;
    return `${mailboxId}.${this.unsubscribeMac(mailboxId, source, nonce)}`;
  }

  /** The subscription an unsubscribe token names; undefined when it is not one of ours or it is gone. */
  async resolveUnsubscribe(token: string): Promise<{ mailboxId: string; source: SourceKey } | undefined> {
    const match = TOKEN.exec(token);
    if (match === null || !this.canStoreAddresses) return undefined;
    const [, mailboxId, mac] = match as unknown as [string, string, string];
    const fields = await this.redis.hgetall(this.keys.mailboxSources(mailboxId));
    let found: SourceKey | undefined;
    // Every subscription is compared, in constant time each: how long it takes says nothing of which matched.
    for (const [source, json] of Object.entries(fields)) {
      const nonce = (parseJson(json) as StoredSubscription | undefined)?.n;
      if (typeof nonce !== 'string') continue;
      if (constantTimeEqual(mac, this.unsubscribeMac(mailboxId, source, nonce))) found = source;
    }
    return found === undefined ? undefined : { mailboxId, source: found };
  }

  /**
   * Unsubscribes a mailbox from one source, or from all (its address refused for good); once it follows nothing
   * its address is deleted. Resolves to the sources it left.
   */
  async unsubscribe(mailboxId: string, source?: SourceKey): Promise<SourceKey[]> {
    if (!MAILBOX_ID.test(mailboxId)) return [];
    const left: SourceKey[] = [];
    // A subscription confirmed while this runs is removed by the next round (all), or stays (one source).
    for (let round = 0; round < 3; round += 1) {
      const sources = source === undefined ? await this.redis.hkeys(this.keys.mailboxSources(mailboxId)) : [source];
      const hash = await this.redis.hget(this.keys.mailbox(mailboxId), 'hash');
      const keys = [
        this.keys.mailbox(mailboxId),
        this.keys.mailboxSources(mailboxId),
        // No digest: the mailbox is gone already, and the script only deletes the index while it names this one.
        this.keys.mailboxOfAddress(hash ?? 'none'),
        ...sources.map((each) => this.keys.mailSourceBoxes(each)),
      ];
      const [removed, remaining] = (await REMOVE.run(this.redis, keys, [mailboxId, ...sources])) as [number, number];
      if (removed > 0) left.push(...sources);
      if (source !== undefined || remaining === 0) break;
    }
    return [...new Set(left)];
  }

  /**
   * Unsubscribes every mailbox from a source that is no more (a deleted personal timetable), deleting each one
   * left with nothing, its address with it. Resolves to how many mailboxes followed it.
   */
  async forgetSource(source: SourceKey): Promise<number> {
    const key = this.keys.mailSourceBoxes(source);
    let left = 0;
    let cursor = '0';
    do {
      const [next, batch] = await this.redis.sscan(key, cursor, 'COUNT', 500);
      cursor = next;
      for (const mailboxId of batch) if ((await this.unsubscribe(mailboxId, source)).length > 0) left += 1;
    } while (cursor !== '0');
    // What is left (an id that is none of ours, which `unsubscribe` skips) goes with the SET.
    await this.redis.del(key);
    return left;
  }

  private mac(purpose: string, value: string, encoding: 'hex' | 'base64url' = 'base64url'): string {
    if (this.secretKey === undefined) throw new SecretKeyMissingError();
    const hex = keyedDigest(this.secretKey, purpose, value);
    return encoding === 'hex' ? hex : Buffer.from(hex, 'hex').toString('base64url');
  }

  private unsubscribeMac(mailboxId: string, source: SourceKey, nonce: string): string {
    return this.mac(UNSUBSCRIBE_PURPOSE, `${mailboxId}\n${source}\n${nonce}`);
  }
}

/** The associated data binding a sign-up's sealed address to it. */
function pendingContext(id: string): string {
  return `mail-pending:${id}:address`;
}

/** The associated data binding a mailbox's sealed address to it. */
function mailboxContext(id: string): string {
  return `mailbox:${id}:address`;
}

/** The options stored for a subscription: none for a personal source (its subscription's own apply). */
function optionsFor(source: SourceKey, options: NotifyOptions): NotifyOptions {
  return sourceOf(source).kind === 'personal' ? {} : notifyOptionsOf(options);
}

function parseJson(json: string | undefined): unknown {
  if (json === undefined) return undefined;
  try {
    return JSON.parse(json) as unknown;
  } catch {
    return undefined;
  }
}

/** Stored options read back leniently (an unreadable value is no option). */
function readOptions(value: unknown): NotifyOptions {
  if (typeof value !== 'object' || value === null) return {};
  const { subgroup, excludeKinds } = value as { subgroup?: unknown; excludeKinds?: unknown };
  const options: NotifyOptions = {};
  if (typeof subgroup === 'number') options.subgroup = subgroup;
  if (Array.isArray(excludeKinds)) {
    const kinds = excludeKinds.filter((kind): kind is string => typeof kind === 'string');
    if (kinds.length > 0) options.excludeKinds = kinds;
  }
  return options;
}
