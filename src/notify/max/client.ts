/**
 * A thin client of the MAX Bot API (`MAX_API_ROOT`, https://platform-api2.max.ru) on undici: the seven calls the
 * bot makes, and nothing of a framework. The official `@maxhub/max-bot-api` is not used: its long polling keeps
 * the update marker only in memory (advanced before the handlers ran), so a restart loses or repeats updates; it
 * drops response headers, so a 429's `Retry-After` is never seen; it has no timeouts and no rate limit shared by
 * the deployment's processes; its error handler takes the process over; and it is CommonJS with three
 * dependencies we would not use.
 *
 * - The token goes in a bare `Authorization: <token>` header (MAX no longer takes it in the query), never into a
 *   log line or an error.
 * - Every request over every process takes a token from one Redis bucket of `MAX_RATE_LIMIT` a second first
 *   (lib/rate-limit.ts): sends, replies, polls and the rest all count, as MAX counts them.
 * - Any non-2xx answer throws {@link MaxApiError} (`{code, message}` of MAX's body); a 429 carries the wait:
 *   `Retry-After` when MAX sends one, else a wait growing from a second with each 429 in a row. A call made
 *   with `waitOut429` (everything but a message, whose 429 the send job waits out on its queue) sleeps it and
 *   tries again. No answer, a timeout or a body that is not MAX's JSON throws {@link MaxNetworkError}.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, type Dispatcher, request } from 'undici';
import type { Config } from '../../config.ts';
import { type bucket, TokenBuckets } from '../../lib/rate-limit.ts';
import type { RedisClient } from '../../lib/redis-target.ts';
import { parseRetryAfter } from '../../lib/retry-after.ts';
import type { RedisKeys } from '../../store/keys.ts';
import { MaxApiError, MaxNetworkError } from './errors.ts';
import { botInfoSchema, type MaxBotInfo, parseUpdateList, readMaxJson } from './updates.ts';

/** MAX's limit on a message's text. */
export const MAX_TEXT_LENGTH = 4000;
/** The deadline of a call other than a long poll. */
export const CALL_TIMEOUT_MS = 15_000;
/** A long poll's deadline beyond the `timeout` MAX holds it for. */
const POLL_GRACE_MS = 10_000;
/** The first wait after a 429 without `Retry-After`; it doubles with each one in a row, up to the next. */
const FIRST_429_WAIT_MS = 1_000;
const LONGEST_429_WAIT_MS = 60_000;
/** A call that waits out 429s gives up after this many in a row. */
const MOST_429_WAITS = 8;
/** The largest answer read (a page of 100 updates is far smaller). */
const MAX_ANSWER_BYTES = 8 * 1024 * 1024;

/** A callback button under a message. */
export interface MaxButton {
  text: string;
  payload: string;
}

/** A message to send (`NewMessageBody`). */
export interface MaxNewMessage {
  text: string;
  /** `html` (MAX's tags: b, i, a href, …); absent: plain text. */
  format?: 'html';
  /** Rows of callback buttons under the message. */
  buttons?: MaxButton[][];
  /** Whether the person's phone rings; default true. */
  notify?: boolean;
}

/** A webhook subscription as `GET /subscriptions` lists it. */
export interface MaxSubscription {
  url: string;
  updateTypes: string[];
}

/** Options of {@link MaxClient}. */
export interface MaxClientOptions {
  token: string;
  /** `MAX_API_ROOT`. */
  apiRoot: string;
  /** The deployment's shared bucket: Redis, its key and `MAX_RATE_LIMIT`; absent, no rate is kept (tests). */
  rate?: { redis: RedisClient; key: string; perSecond: number } | undefined;
  /** Default: an Agent of the client's own, closed by {@link MaxClient.close}. */
  dispatcher?: Dispatcher;
  /** Sleeps between 429s (tests); default a real, abortable sleep. */
  sleepFor?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

interface Call {
  method: 'GET' | 'POST' | 'DELETE';
  path: string;
  query?: Record<string, string>;
  json?: unknown;
  timeoutMs?: number;
  signal?: AbortSignal | undefined;
  /** Sleep through a 429 and try again (not for messages: their queue waits). */
  waitOut429?: boolean;
}

/** The MAX Bot API as one bot. */
export class MaxClient {
  private readonly token: string;
  private readonly root: URL;
  private readonly dispatcher: Dispatcher;
  private readonly ownDispatcher: Agent | undefined;
  private readonly buckets: TokenBuckets | undefined;
  private readonly rateBucket: ReturnType<typeof bucket> | undefined;
  private readonly sleepFor: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** 429s in a row without `Retry-After`: the next one waits twice as long. */
  private limitedInARow = 0;

  constructor(options: MaxClientOptions) {
    if (!/^[\x21-\x7e]+$/.test(options.token))
      throw new TypeError('the MAX bot token has characters a header cannot hold');
    this.token = options.token;
    this.root = new URL(options.apiRoot.endsWith('/') ? options.apiRoot : `${options.apiRoot}/`);
    this.ownDispatcher = options.dispatcher ? undefined : new Agent({ connections: 16, connectTimeout: 10_000 });
    this.dispatcher = options.dispatcher ?? (this.ownDispatcher as Agent);
    if (options.rate) {
      this.buckets = new TokenBuckets(options.rate.redis);
      // A bucket of one: requests a 1/rate apart at most, so that no second of any worker's clock holds more than
      // the rate (a fuller bucket would let a burst and the next second's rate through together).
      const perSecond = options.rate.perSecond;
      this.rateBucket = { key: options.rate.key, ratePerMs: perSecond / 1000, capacity: 1 };
    }
    this.sleepFor = options.sleepFor ?? ((ms, signal) => sleep(ms, undefined, signal ? { signal } : undefined));
  }

  /** `GET /me`: the bot itself. */
  async me(signal?: AbortSignal): Promise<MaxBotInfo> {
    return botInfoSchema.parse(await this.call({ method: 'GET', path: 'me', signal, waitOut429: true }));
  }

  /**
   * `POST /messages?chat_id=`: sends one message to a dialog; its `mid`. Text over {@link MAX_TEXT_LENGTH} is
   * refused here (the callers cut theirs): MAX would answer 400. A 429 throws (the send job waits it out).
   */
  async send(chatId: string, message: MaxNewMessage, signal?: AbortSignal): Promise<{ mid: string }> {
    if (message.text.length > MAX_TEXT_LENGTH)
      throw new RangeError(`a MAX message holds ${MAX_TEXT_LENGTH} characters`);
    const body = await this.call({
      method: 'POST',
      path: 'messages',
      query: { chat_id: chatId, disable_link_preview: 'true' },
      json: messageBody(message),
      signal,
    });
    const mid = (body as { message?: { body?: { mid?: unknown } } } | undefined)?.message?.body?.mid;
    return { mid: typeof mid === 'string' ? mid : '' };
  }

  /**
   * `GET /updates`: the updates after `marker` (passing it commits those before it), held by MAX up to
   * `timeoutSeconds` while there are none; without a marker MAX gives only what it has not given yet (or just
   * the latest). Returns the page and the marker to pass next.
   */
  async updates(
    options: { marker?: string | undefined; timeoutSeconds: number; limit: number; types: readonly string[] },
    signal?: AbortSignal,
  ): Promise<{ updates: unknown[]; marker: string | undefined }> {
    const query: Record<string, string> = {
      timeout: String(options.timeoutSeconds),
      limit: String(options.limit),
      types: options.types.join(','),
    };
    if (options.marker !== undefined) query.marker = options.marker;
    const body = await this.call({
      method: 'GET',
      path: 'updates',
      query,
      timeoutMs: options.timeoutSeconds * 1000 + POLL_GRACE_MS,
      signal,
      waitOut429: true,
    });
    try {
      return parseUpdateList(body);
    } catch {
      throw new MaxNetworkError('MAX answered GET /updates with something that is not a list of updates');
    }
  }

  /** `POST /subscriptions`: MAX POSTs updates of `types` to `url` with `secret` in `X-Max-Bot-Api-Secret`. */
  async subscribe(url: string, types: readonly string[], secret: string, signal?: AbortSignal): Promise<void> {
    await this.expectSuccess(
      await this.call({
        method: 'POST',
        path: 'subscriptions',
        json: { url, update_types: types, secret },
        signal,
        waitOut429: true,
      }),
      'POST /subscriptions',
    );
  }

  /** `GET /subscriptions`: the webhooks MAX calls. */
  async subscriptions(signal?: AbortSignal): Promise<MaxSubscription[]> {
    const body = (await this.call({ method: 'GET', path: 'subscriptions', signal, waitOut429: true })) as {
      subscriptions?: { url?: unknown; update_types?: unknown }[];
    };
    return (body?.subscriptions ?? []).flatMap((each) =>
      typeof each?.url === 'string'
        ? [{ url: each.url, updateTypes: Array.isArray(each.update_types) ? each.update_types.map(String) : [] }]
        : [],
    );
  }

  /** `DELETE /subscriptions?url=`: MAX stops calling `url` (long polling works again once none is left). */
  async unsubscribe(url: string, signal?: AbortSignal): Promise<void> {
    await this.expectSuccess(
      await this.call({ method: 'DELETE', path: 'subscriptions', query: { url }, signal, waitOut429: true }),
      'DELETE /subscriptions',
    );
  }

  /**
   * `POST /answers?callback_id=`: answers a button press: `notification` shows briefly, `message` replaces the
   * pressed message (its text, and buttons: none takes them away).
   */
  async answer(
    callbackId: string,
    answer: { notification?: string; message?: MaxNewMessage },
    signal?: AbortSignal,
  ): Promise<void> {
    const json: Record<string, unknown> = {};
    if (answer.notification !== undefined) json.notification = answer.notification;
    if (answer.message !== undefined) json.message = messageBody(answer.message);
    await this.expectSuccess(
      await this.call({
        method: 'POST',
        path: 'answers',
        query: { callback_id: callbackId },
        json,
        signal,
        waitOut429: true,
      }),
      'POST /answers',
    );
  }

  /** Closes the client's own connections. */
  async close(): Promise<void> {
    await this.ownDispatcher?.close();
  }

  /** A `{success: false}` answer (MAX says why in `message`) is an error like any other. */
  private expectSuccess(body: unknown, what: string): void {
    const { success, message } = (body ?? {}) as { success?: unknown; message?: unknown };
    if (success === false)
      throw new MaxApiError(200, 'not.successful', `${what}: ${this.redact(String(message ?? 'no reason given'))}`);
  }

  /** One call: the shared rate, the request, MAX's answer read; 429s slept through when asked to. */
  private async call(call: Call): Promise<unknown> {
    for (let waited = 0; ; waited += 1) {
      try {
        return await this.once(call);
      } catch (error) {
        if (!(call.waitOut429 && error instanceof MaxApiError && error.status === 429)) throw error;
        if (waited + 1 >= MOST_429_WAITS) throw error;
        await this.sleepFor(error.retryAfterMs ?? FIRST_429_WAIT_MS, call.signal);
      }
    }
  }

  private async once(call: Call): Promise<unknown> {
    if (this.buckets && this.rateBucket)
      await this.buckets.take([this.rateBucket], call.signal ? { signal: call.signal } : {});
    const url = new URL(call.path, this.root);
    if (call.query) for (const [name, value] of Object.entries(call.query)) url.searchParams.set(name, value);
    const timeout = AbortSignal.timeout(call.timeoutMs ?? CALL_TIMEOUT_MS);
    const signal = call.signal ? AbortSignal.any([call.signal, timeout]) : timeout;
    const headers: Record<string, string> = { authorization: this.token, accept: 'application/json' };
    if (call.json !== undefined) headers['content-type'] = 'application/json';
    const what = `${call.method} /${call.path}`;
    let status: number;
    let text: string;
    let retryAfter: string | string[] | undefined;
    try {
      const answer = await request(url, {
        method: call.method,
        headers,
        ...(call.json === undefined ? {} : { body: JSON.stringify(call.json) }),
        dispatcher: this.dispatcher,
        signal,
      });
      status = answer.statusCode;
      retryAfter = answer.headers['retry-after'];
      text = await readText(answer.body);
    } catch (error) {
      call.signal?.throwIfAborted();
      const why = timeout.aborted ? 'no answer in time' : error instanceof Error ? error.message : String(error);
      throw new MaxNetworkError(`${what}: ${this.redact(why)}`, { cause: error });
    }
    let body: unknown;
    try {
      body = text === '' ? undefined : readMaxJson(text);
    } catch {
      if (status >= 200 && status < 300) throw new MaxNetworkError(`${what}: MAX answered ${status} with no JSON`);
    }
    if (status >= 200 && status < 300) {
      this.limitedInARow = 0;
      return body;
    }
    const { code, message } = (body ?? {}) as { code?: unknown; message?: unknown };
    const codeText = typeof code === 'string' ? code : status === 401 ? 'verify.token' : 'unexpected.response';
    const messageText = this.redact(typeof message === 'string' ? message : `${what} failed`);
    if (status !== 429) {
      this.limitedInARow = 0;
      throw new MaxApiError(status, codeText, messageText);
    }
    const asked = parseRetryAfter(retryAfter, Date.now());
    const own = Math.min(FIRST_429_WAIT_MS * 2 ** this.limitedInARow, LONGEST_429_WAIT_MS);
    if (asked === undefined) this.limitedInARow += 1;
    throw new MaxApiError(status, codeText, messageText, asked ?? own);
  }

  private redact(text: string): string {
    return text.split(this.token).join('<token>');
  }
}

/** `NewMessageBody` of a message. */
function messageBody(message: MaxNewMessage): Record<string, unknown> {
  const buttons = message.buttons?.filter((row) => row.length > 0) ?? [];
  return {
    text: message.text,
    ...(message.format === undefined ? {} : { format: message.format }),
    ...(message.notify === undefined ? {} : { notify: message.notify }),
    attachments:
      buttons.length === 0
        ? []
        : [
            {
              type: 'inline_keyboard',
              payload: {
                buttons: buttons.map((row) =>
                  row.map((button) => ({ type: 'callback', text: button.text, payload: button.payload })),
                ),
              },
            },
          ],
  };
}

/** The answer's body as text, at most {@link MAX_ANSWER_BYTES}. */
async function readText(body: AsyncIterable<Buffer | Uint8Array | string>): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk);
    size += buffer.length;
    if (size > MAX_ANSWER_BYTES) throw new Error('the answer is too large');
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The settings a client is made of. */
export type MaxClientSettings = Pick<Config, 'maxBotToken' | 'maxApiRoot' | 'maxRateLimit'>;

/** The name of the deployment's one bucket of MAX requests (`rateLimit('max-api')`). */
export const MAX_RATE_BUCKET = 'max-api';

/** The client of the bot the settings name, taking every request from the deployment's bucket; throws without a token. */
export function maxClientOf(
  config: MaxClientSettings,
  redis: RedisClient,
  keys: Pick<RedisKeys, 'rateLimit'>,
): MaxClient {
  if (config.maxBotToken === undefined) throw new Error('MAX_BOT_TOKEN is not set');
  return new MaxClient({
    token: config.maxBotToken,
    apiRoot: config.maxApiRoot,
    rate: { redis, key: keys.rateLimit(MAX_RATE_BUCKET), perSecond: config.maxRateLimit },
  });
}
