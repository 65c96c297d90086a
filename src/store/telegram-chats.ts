/**
 * Telegram chats and what each is subscribed to, and the `/start` payloads that subscribe them.
 *
 * A chat's subscriptions are one HASH (`tgChat(chatId)`: source → its options as JSON), and each source keeps the
 * SET of its chats (`tgSourceChats(source)`, which the fan-out reads); both change in one MULTI, so neither ever
 * names a subscription the other lacks.
 *
 * A `/start` payload (Telegram allows 64 characters of `A-Za-z0-9_-`) names what to subscribe to:
 * - a public timetable, readable and stateless: `g4242`, `g4242_s1`, `e123_s2`, `g4242_s1_x5` (hidden kinds as
 *   bits: store/telegram-payload.ts);
 * - one whose options hide a kind the readable form cannot name: `o` + 16 characters of the digest of source
 *   and options, stored under `tgLink` for an hour (the same page gives the same payload). Older versions stored
 *   every hidden-kinds link so, for a year, renewed on every page view: such a key keeps a year's lifetime, renewed
 *   when its page makes the link again and when a chat uses it, so a link shared long ago keeps working;
 * - a personal timetable: `p` + 22 random characters, stored under `tgOnce` for an hour and taken with GETDEL, so
 *   it subscribes one chat once. The feed token is never in it: a payload travels through Telegram's servers and
 *   the chat's history, and it must not read the feed.
 * A personal chat's options are the subscription's own, read when a message is made (edits apply), so none are
 * stored for it.
 *
 * MAX dialogs are kept the same way under keys of their own (store/max-chats.ts: {@link ChatKeys}); the payloads
 * are shared, so that one page link's payload subscribes a chat in either messenger.
 */
import { createHash } from 'node:crypto';
import { loadScript } from '../lib/lua-script.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import { randomToken } from '../security/tokens.ts';
import type { NotifyOptions } from '../timetable/notify-change.ts';
import { parseSource, type SourceKey, SUBSCRIPTION_ID, sourceKey, sourceOf } from '../timetable/source.ts';
import type { RedisKeys } from './keys.ts';
import { parsePublicPayload, publicPayload } from './telegram-payload.ts';

export { parsePublicPayload, publicPayload } from './telegram-payload.ts';

/** Telegram's limit on a `/start` payload: at most 64 of these characters. */
export const PAYLOAD = /^[A-Za-z0-9_-]{1,64}$/;
/**
 * How long a stored payload (hidden kinds that a readable one cannot name) lives: the link is followed at once,
 * from the page to Telegram's «Start». Payloads stored by older versions keep their own (longer) lifetime.
 */
export const LINK_TTL_SECONDS = 3600;
/** How long a personal page's one-time payload lives. */
export const ONCE_TTL_SECONDS = 3600;
/** How long older versions kept a stored payload (renewed on use): such a key is still renewed so. */
export const LEGACY_LINK_TTL_SECONDS = 365 * 24 * 3600;
const STORED = /^o[A-Za-z0-9_-]{16}$/;
const ONCE = /^p[A-Za-z0-9_-]{22}$/;

const SUBSCRIBE = loadScript(import.meta.dirname, 'telegram-subscribe');
const LINK_PUT = loadScript(import.meta.dirname, 'telegram-link-put');
const LINK_READ = loadScript(import.meta.dirname, 'telegram-link-read');

/** What {@link TelegramChats.subscribeWithin} did. */
export type SubscribeOutcome = 'added' | 'updated' | 'full';

/** One subscription of a chat. */
export interface ChatSubscription {
  source: SourceKey;
  /** A public source's options; empty for a personal one (its subscription's options apply). */
  options: NotifyOptions;
}

/** A chat subscribed to a source, with its options. */
export interface SourceChat {
  chatId: string;
  options: NotifyOptions;
}

/** What a `/start` payload names. */
export type ResolvedPayload =
  | {
      kind: 'source';
      source: SourceKey;
      options: NotifyOptions;
      /** A one-time payload this call used up: its code and what was left of its lifetime (to give it back). */
      once?: { code: string; subscriptionId: string; leftMs: number };
    }
  /** A one-time or stored payload that was used or has expired (or was never ours). */
  | { kind: 'expired' }
  /** Not a payload of ours at all. */
  | { kind: 'invalid' };

/** Only the options a notification reads, lower-cased and sorted, so equal choices compare equal. */
export function notifyOptionsOf(options: NotifyOptions): NotifyOptions {
  const result: NotifyOptions = {};
  if (options.subgroup !== undefined) result.subgroup = options.subgroup;
  const kinds = [...new Set((options.excludeKinds ?? []).map((kind) => kind.toLocaleLowerCase('ru')))].sort();
  if (kinds.length > 0) result.excludeKinds = kinds;
  return result;
}

/** The stored payload's id of a source and options: the same choice always gives the same id. */
function storedPayloadId(source: SourceKey, options: NotifyOptions): string {
  const digest = createHash('sha256')
    .update(JSON.stringify([source, options]))
    .digest('base64url');
  return `o${digest.slice(0, 16)}`;
}

/** Runs a MULTI and gives each command's answer, throwing the first command error. */
async function execResults(multi: ReturnType<RedisClient['multi']>): Promise<unknown[]> {
  const results = await multi.exec();
  if (results === null) throw new Error('Redis transaction was aborted');
  const failed = results.find(([error]) => error !== null);
  if (failed) throw failed[0] as Error;
  return results.map(([, value]) => value);
}

/** The stored options of one chat's subscription, read back leniently (an unreadable value is no option). */
function readOptions(json: string): NotifyOptions {
  try {
    const value = JSON.parse(json) as unknown;
    if (typeof value !== 'object' || value === null) return {};
    const { subgroup, excludeKinds } = value as { subgroup?: unknown; excludeKinds?: unknown };
    const options: NotifyOptions = {};
    if (typeof subgroup === 'number') options.subgroup = subgroup;
    if (Array.isArray(excludeKinds)) options.excludeKinds = excludeKinds.filter((kind) => typeof kind === 'string');
    return options;
  } catch {
    return {};
  }
}

/** Where one messenger keeps its chats: a chat's subscriptions (HASH) and a source's chats (SET). */
export interface ChatKeys {
  chat(chatId: string): string;
  sourceChats(source: SourceKey): string;
}

/** The Telegram chats' subscriptions and payloads (another messenger's chats with its own {@link ChatKeys}). */
export class TelegramChats {
  private readonly redis: RedisClient;
  private readonly keys: RedisKeys;
  private readonly chatKeys: ChatKeys;

  /** `chatKeys`: where the chats are kept; default Telegram's (`tg:chat:…`, `tg:source-chats:…`). */
  constructor(redis: RedisClient, keys: RedisKeys, chatKeys?: ChatKeys) {
    this.redis = redis;
    this.keys = keys;
    this.chatKeys = chatKeys ?? { chat: keys.tgChat, sourceChats: keys.tgSourceChats };
  }

  /**
   * Subscribes a chat to a source with these options (a second `/start` of the same source replaces its options).
   * True when the chat was not subscribed to it before.
   */
  async subscribe(input: { chatId: string; source: SourceKey; options: NotifyOptions }): Promise<boolean> {
    const options = sourceOf(input.source).kind === 'personal' ? {} : notifyOptionsOf(input.options);
    const multi = this.redis.multi();
    multi.hset(this.chatKeys.chat(input.chatId), input.source, JSON.stringify(options));
    multi.sadd(this.chatKeys.sourceChats(input.source), input.chatId);
    const [added] = await execResults(multi);
    return added === 1;
  }

  /**
   * Subscribes a chat as {@link subscribe} does, unless it follows `maxSources` others already (one script: two
   * `/start` at once cannot both take the last place); a source it follows only gets its new options.
   */
  async subscribeWithin(
    input: { chatId: string; source: SourceKey; options: NotifyOptions },
    maxSources: number,
  ): Promise<SubscribeOutcome> {
    const options = sourceOf(input.source).kind === 'personal' ? {} : notifyOptionsOf(input.options);
    const keys = [this.chatKeys.chat(input.chatId), this.chatKeys.sourceChats(input.source)];
    const done = await SUBSCRIBE.run(this.redis, keys, [
      input.source,
      JSON.stringify(options),
      input.chatId,
      maxSources,
    ]);
    return done === 1 ? 'added' : done === 0 ? 'updated' : 'full';
  }

  /** Whether a chat follows a source. */
  async follows(chatId: string, source: SourceKey): Promise<boolean> {
    return (await this.redis.hexists(this.chatKeys.chat(chatId), source)) === 1;
  }

  /**
   * Sets (or, `undefined`, clears: the whole group) the subgroup a chat follows of a public source it is
   * subscribed to, keeping its other options; false when it is not subscribed to it (or it is personal: its
   * subscription's options apply).
   */
  async setSubgroup(chatId: string, source: SourceKey, subgroup: number | undefined): Promise<boolean> {
    if (sourceOf(source).kind === 'personal') return false;
    const json = await this.redis.hget(this.chatKeys.chat(chatId), source);
    if (json === null) return false;
    const { subgroup: _old, ...rest } = readOptions(json);
    await this.subscribe({ chatId, source, options: subgroup === undefined ? rest : { ...rest, subgroup } });
    return true;
  }

  /** Unsubscribes a chat from one source, or from all (blocked bot, `/stop all`); the sources it left. */
  async unsubscribe(chatId: string, source?: SourceKey): Promise<SourceKey[]> {
    const sources = source === undefined ? await this.redis.hkeys(this.chatKeys.chat(chatId)) : [source];
    if (sources.length === 0) return [];
    const multi = this.redis.multi();
    multi.hdel(this.chatKeys.chat(chatId), ...sources);
    for (const each of sources) multi.srem(this.chatKeys.sourceChats(each), chatId);
    const [removed] = await execResults(multi);
    return removed === 0 ? [] : sources;
  }

  /** Unsubscribes every chat from a source that is no more (a deleted personal timetable); how many followed it. */
  async forgetSource(source: SourceKey): Promise<number> {
    const key = this.chatKeys.sourceChats(source);
    let left = 0;
    let cursor = '0';
    do {
      const [next, batch] = await this.redis.sscan(key, cursor, 'COUNT', 500);
      cursor = next;
      if (batch.length === 0) continue;
      const multi = this.redis.multi();
      for (const chatId of batch) multi.hdel(this.chatKeys.chat(chatId), source);
      const removed = await execResults(multi);
      left += removed.filter((count) => count === 1).length;
    } while (cursor !== '0');
    await this.redis.del(key);
    return left;
  }

  /** A chat's subscriptions, sorted by source. */
  async ofChat(chatId: string): Promise<ChatSubscription[]> {
    const fields = await this.redis.hgetall(this.chatKeys.chat(chatId));
    return Object.entries(fields)
      .map(([source, json]) => ({ source, options: readOptions(json) }))
      .sort((a, b) => (a.source < b.source ? -1 : a.source > b.source ? 1 : 0));
  }

  /** The chats subscribed to a source, with their options (SSCAN: a large set never blocks Redis). */
  async ofSource(source: SourceKey): Promise<SourceChat[]> {
    const chats: SourceChat[] = [];
    let cursor = '0';
    do {
      const [next, batch] = await this.redis.sscan(this.chatKeys.sourceChats(source), cursor, 'COUNT', 500);
      cursor = next;
      if (batch.length === 0) continue;
      const pipeline = this.redis.pipeline();
      for (const chatId of batch) pipeline.hget(this.chatKeys.chat(chatId), source);
      const answers = (await pipeline.exec()) ?? [];
      for (const [index, chatId] of batch.entries()) {
        const json = answers[index]?.[1];
        // A chat that left between the two reads is not told.
        if (typeof json === 'string') chats.push({ chatId, options: readOptions(json) });
      }
    } while (cursor !== '0');
    return chats;
  }

  /** Whether any chat is subscribed to a source. */
  async hasAny(source: SourceKey): Promise<boolean> {
    return (await this.redis.scard(this.chatKeys.sourceChats(source))) > 0;
  }

  /**
   * The payload of a public source's page with these options: readable when it can be, else a stored one that
   * lives {@link LINK_TTL_SECONDS} (one an older version stored under the same id keeps its year, renewed).
   */
  async linkPayload(source: SourceKey, options: NotifyOptions): Promise<string> {
    const chosen = notifyOptionsOf(options);
    const readable = publicPayload(source, chosen);
    if (readable !== undefined) return readable;
    const id = storedPayloadId(source, chosen);
    await LINK_PUT.run(
      this.redis,
      [this.keys.tgLink(id)],
      [JSON.stringify({ source, options: chosen }), LINK_TTL_SECONDS, LEGACY_LINK_TTL_SECONDS],
    );
    return id;
  }

  /** A one-time payload subscribing a chat to a personal subscription, valid for {@link ONCE_TTL_SECONDS}. */
  async oncePayload(subscriptionId: string): Promise<string> {
    if (!SUBSCRIPTION_ID.test(subscriptionId)) throw new Error('not a subscription id');
    const code = `p${randomToken(16)}`;
    await this.redis.set(this.keys.tgOnce(code), subscriptionId, 'EX', ONCE_TTL_SECONDS);
    return code;
  }

  /**
   * Gives back a one-time payload that {@link resolvePayload} used up but that subscribed nobody (the chat
   * follows as many timetables as it may): it works again for the rest of its lifetime.
   */
  async giveBack(once: { code: string; subscriptionId: string; leftMs: number }): Promise<void> {
    await this.redis.set(this.keys.tgOnce(once.code), once.subscriptionId, 'PX', once.leftMs, 'NX');
  }

  /** What a payload names; a one-time payload is used up by this call (see {@link giveBack}). */
  async resolvePayload(payload: string): Promise<ResolvedPayload> {
    if (!PAYLOAD.test(payload)) return { kind: 'invalid' };
    const readable = parsePublicPayload(payload);
    if (readable !== undefined) return { kind: 'source', ...readable };
    if (ONCE.test(payload)) {
      const [leftMs, id] = (await execResults(
        this.redis.multi().pttl(this.keys.tgOnce(payload)).getdel(this.keys.tgOnce(payload)),
      )) as [number, string | null];
      if (id === null || !SUBSCRIPTION_ID.test(id)) return { kind: 'expired' };
      return {
        kind: 'source',
        source: `personal:${id}`,
        options: {},
        once: { code: payload, subscriptionId: id, leftMs: Math.max(leftMs, 1) },
      };
    }
    if (STORED.test(payload)) {
      const json = await LINK_READ.run(
        this.redis,
        [this.keys.tgLink(payload)],
        [LINK_TTL_SECONDS, LEGACY_LINK_TTL_SECONDS],
      );
      if (typeof json !== 'string') return { kind: 'expired' };
      try {
        const { source, options } = JSON.parse(json) as { source: unknown; options: unknown };
        const parsed = sourceKey(parseSource(source));
        return { kind: 'source', source: parsed, options: readOptions(JSON.stringify(options)) };
      } catch {
        return { kind: 'expired' };
      }
    }
    return { kind: 'invalid' };
  }
}
