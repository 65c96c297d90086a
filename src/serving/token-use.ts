/**
 * Records when personal feed tokens are used (their feed fetched) and by what kind of client, so that a sign-up
 * through the API beyond the live token limit revokes the least recently used token rather than the URL a
 * calendar polls, and so that the owner sees on the personal page which calendar reads which URL. Calendars
 * poll often: each token is written at most once per interval per kind of client per process, remembered in
 * memory (a bounded map; one forgotten only costs one more write).
 *
 * The client is kept as one word of {@link FEED_CLIENTS}, read from the User-Agent: never the header itself
 * (it is the client's to fill, and a person reading their page needs a name, not a header).
 */
import { LRUCache } from 'lru-cache';
import { isRedisFailure } from '../lib/redis-failure.ts';
import type { Logger } from '../logger.ts';
import { hashToken } from '../security/tokens.ts';

/** How often one token's use is written, at most: an hour, far finer than sign-ups on new devices. */
export const TOKEN_USE_EVERY_MS = 60 * 60_000;
/** Tokens whose last write this process remembers. */
const MAX_RECORDS = 50_000;

/** The kinds of client a feed URL is told to have been read by (stored as these words). */
export const FEED_CLIENTS = [
  'google',
  'apple',
  'outlook',
  'thunderbird',
  'yandex',
  'davx5',
  'browser',
  'other',
] as const;
export type FeedClient = (typeof FEED_CLIENTS)[number];

/** User-Agent patterns, the first that matches naming the client (calendar apps before the browsers they embed). */
const CLIENT_PATTERNS: readonly [RegExp, FeedClient][] = [
  [/Google-Calendar-Importer|Google-Calendar|GoogleCalendar|Google Calendar/i, 'google'],
  [/Yandex/i, 'yandex'],
  [/Thunderbird|Lightning/i, 'thunderbird'],
  [/DAVx5|DAVdroid|ICSx5|ICSdroid|ICSx⁵|DAVx⁵/i, 'davx5'],
  [/Outlook|Microsoft Office|Microsoft Exchange|MSOffice|Microsoft\.Exchange/i, 'outlook'],
  [/dataaccessd|CalendarAgent|iCal\/|Calendar\/\d|iOS\/\d|macOS\/\d|Mac OS X\/\d.*\(/i, 'apple'],
  [/Mozilla\/|Chrome\/|Safari\/|Firefox\//i, 'browser'],
];

/** The kind of client a User-Agent names ({@link FEED_CLIENTS}); `other` for none or one not recognised. */
export function clientKind(userAgent: string | undefined): FeedClient {
  const text = (userAgent ?? '').slice(0, 512);
  for (const [pattern, client] of CLIENT_PATTERNS) if (pattern.test(text)) return client;
  return 'other';
}

/** What the recorder writes to: the subscription store's use record. */
export interface TokenUseSink {
  recordTokenUse(id: string, token: string, now: number, client: FeedClient): Promise<void>;
}

/** What {@link TokenUseRecorder} reads the time from and logs with. */
export interface TokenUseDeps {
  readonly now: () => number;
  readonly logger: Pick<Logger, 'warn'>;
}

/** Throttled, fire-and-forget records of token use. */
export class TokenUseRecorder {
  private readonly ctx: TokenUseDeps;
  private readonly sink: TokenUseSink;
  private readonly everyMs: number;
  /** When each token (by hash: tokens are not kept) and kind of client was last written, ctx clock. */
  private readonly written = new LRUCache<string, number>({ max: MAX_RECORDS });

  constructor(ctx: TokenUseDeps, sink: TokenUseSink, everyMs = TOKEN_USE_EVERY_MS) {
    this.ctx = ctx;
    this.sink = sink;
    this.everyMs = everyMs;
  }

  /**
   * Notes that `token` of subscription `id` was read now by the client whose User-Agent is `userAgent`; writes
   * unless it was written for that kind of client less than an interval ago.
   */
  record(id: string, token: string, userAgent?: string): void {
    const now = this.ctx.now();
    const client = clientKind(userAgent);
    const key = `${hashToken(token)} ${client}`;
    const last = this.written.get(key);
    if (last !== undefined && now - last < this.everyMs) return;
    this.written.set(key, now);
    this.sink.recordTokenUse(id, token, now, client).catch((error: unknown) => {
      // While Redis is away every request would log this again; a use recorded an hour late is harmless.
      if (isRedisFailure(error)) return;
      this.written.delete(key);
      this.ctx.logger.warn({ err: error, subscription: id }, 'could not record a feed token use');
    });
  }
}
