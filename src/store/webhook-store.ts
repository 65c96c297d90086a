/**
 * Webhooks of integrators in Redis. One HASH per hook (`webhook(id)`): its source, URL, state (active or
 * disabled, with the reason), creation time, and its signing secret sealed with the secret box (bound to the hook
 * id): the secret is shown once, when the hook is created, and only the delivery reads it back. Around it: the
 * SET of a source's **active** hooks (what the fan-out reads, so a disabled hook gets nothing), a ZSET of all hooks
 * by creation, and a LIST per hook of its last delivery attempts.
 */

import { loadScript } from '../lib/lua-script.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import { execOrThrow } from '../lib/redis-transaction.ts';
import { SecretBox } from '../security/secret-box.ts';
import { randomToken } from '../security/tokens.ts';
import type { SourceKey } from '../timetable/source.ts';
import type { RedisKeys } from './keys.ts';

const DISABLE = loadScript(import.meta.dirname, 'webhook-disable');
const RECORD_ATTEMPT = loadScript(import.meta.dirname, 'webhook-record-attempt');

/** Webhook ids: 16 random bytes (128 bits) as base64url, 22 characters. */
export const WEBHOOK_ID = /^[A-Za-z0-9_-]{22}$/;

/** How many delivery attempts a hook keeps, newest first. */
export const WEBHOOK_LOG_LENGTH = 20;

/** A hook's state: `active` gets deliveries; `disabled` (410 Gone, or failing for a day) gets none. */
export type WebhookState = 'active' | 'disabled';

/** A webhook as shown (never its secret). */
export interface Webhook {
  id: string;
  source: SourceKey;
  url: string;
  state: WebhookState;
  /** Why it was disabled. */
  reason?: string | undefined;
  createdAt: number;
  disabledAt?: number | undefined;
}

/** One delivery attempt, as the log keeps it: an HTTP status, or the error that kept one from coming. */
export interface WebhookAttempt {
  /** The delivery's `webhook-id` (the same on every attempt of one delivery). */
  webhookId: string;
  /** Epoch ms when the attempt started. */
  at: number;
  /** 1 for the first attempt. */
  attempt: number;
  status?: number | undefined;
  error?: string | undefined;
  /** How long the attempt took. */
  ms: number;
}

/** The associated data that binds a sealed secret to its hook. */
function secretContext(id: string): string {
  return `webhook:${id}:secret`;
}

/** Webhooks: create, read, disable, record attempts, delete. */
export class WebhookStore {
  private readonly redis: RedisClient;
  private readonly keys: RedisKeys;
  private readonly box: SecretBox;

  /** `secretKey` is `Config.secretKey`; without it `create` and `secretOf` throw SecretKeyMissingError. */
  constructor(redis: RedisClient, keys: RedisKeys, secretKey: Buffer | undefined) {
    this.redis = redis;
    this.keys = keys;
    this.box = new SecretBox(secretKey);
  }

  /** Whether secrets can be stored (a `SECRET_KEY` is configured). */
  get canStoreSecrets(): boolean {
    return this.box.available;
  }

  /** Stores a new active hook with its secret (sealed) in one transaction. */
  async create(input: { source: SourceKey; url: string; secret: string; now: number }): Promise<Webhook> {
    const id = randomToken(16);
    const hook: Webhook = { id, source: input.source, url: input.url, state: 'active', createdAt: input.now };
    await execOrThrow(
      this.redis
        .multi()
        .hset(this.keys.webhook(id), {
          id,
          source: input.source,
          url: input.url,
          state: 'active',
          createdAt: String(input.now),
          secret: this.box.seal(input.secret, secretContext(id)),
        })
        .sadd(this.keys.webhooksOfSource(input.source), id)
        .zadd(this.keys.webhooks, input.now, id),
    );
    return hook;
  }

  /** The hook, or undefined when there is none (a malformed id included). */
  async get(id: string): Promise<Webhook | undefined> {
    if (!WEBHOOK_ID.test(id)) return undefined;
    const fields = await this.redis.hgetall(this.keys.webhook(id));
    if (fields.id === undefined || fields.source === undefined || fields.url === undefined) return undefined;
    return {
      id: fields.id,
      source: fields.source,
      url: fields.url,
      state: fields.state === 'disabled' ? 'disabled' : 'active',
      reason: fields.reason,
      createdAt: Number(fields.createdAt ?? 0),
      disabledAt: fields.disabledAt === undefined ? undefined : Number(fields.disabledAt),
    };
  }

  /**
   * The decrypted secret of a hook, for signing a delivery; undefined when the hook is gone. The secret box's
   * DecryptionError and SecretKeyMissingError pass through. Never log what it returns.
   */
  async secretOf(id: string): Promise<string | undefined> {
    if (!WEBHOOK_ID.test(id)) return undefined;
    const sealed = await this.redis.hget(this.keys.webhook(id), 'secret');
    return sealed === null ? undefined : this.box.open(sealed, secretContext(id));
  }

  /** The active hooks of a source (what a change of it is delivered to). */
  async ofSource(source: SourceKey): Promise<Webhook[]> {
    const ids = await this.redis.smembers(this.keys.webhooksOfSource(source));
    const hooks = await Promise.all(ids.sort().map((id) => this.get(id)));
    return hooks.filter((hook): hook is Webhook => hook !== undefined && hook.state === 'active');
  }

  /** Whether a source has an active hook (a change of a source nobody listens to is not kept). */
  async hasAny(source: SourceKey): Promise<boolean> {
    return (await this.redis.scard(this.keys.webhooksOfSource(source))) > 0;
  }

  /** Stops deliveries to a hook as of `now` (epoch ms), keeping why; false when it is gone. */
  async disable(id: string, reason: string, now: number): Promise<boolean> {
    const hook = await this.get(id);
    if (hook === undefined) return false;
    const keys = [this.keys.webhook(id), this.keys.webhooksOfSource(hook.source)];
    return (await DISABLE.run(this.redis, keys, [id, reason, String(now)])) === 1;
  }

  /** Keeps one attempt in the hook's log (the last {@link WEBHOOK_LOG_LENGTH}); false when the hook is gone. */
  async recordAttempt(id: string, attempt: WebhookAttempt): Promise<boolean> {
    const keys = [this.keys.webhook(id), this.keys.webhookLog(id)];
    const json = JSON.stringify(attempt);
    return (await RECORD_ATTEMPT.run(this.redis, keys, [json, String(WEBHOOK_LOG_LENGTH)])) === 1;
  }

  /** The hook's last attempts, newest first. */
  async log(id: string): Promise<WebhookAttempt[]> {
    if (!WEBHOOK_ID.test(id)) return [];
    const entries = await this.redis.lrange(this.keys.webhookLog(id), 0, WEBHOOK_LOG_LENGTH - 1);
    return entries.map((entry) => JSON.parse(entry) as WebhookAttempt);
  }

  /** Removes a hook with its log; false when there was none. */
  async delete(id: string): Promise<boolean> {
    const hook = await this.get(id);
    if (hook === undefined) return false;
    await execOrThrow(
      this.redis
        .multi()
        .del(this.keys.webhook(id), this.keys.webhookLog(id))
        .srem(this.keys.webhooksOfSource(hook.source), id)
        .zrem(this.keys.webhooks, id),
    );
    return true;
  }
}
