/**
 * Records when personal feed tokens are used (their feed fetched), so that a sign-up beyond the live token
 * limit revokes the least recently used token rather than the URL a calendar polls. Calendars poll often:
 * each token is written at most once per interval per process, remembered in memory (a bounded map; one
 * forgotten only costs one more write).
 */
import { LRUCache } from 'lru-cache';
import { isRedisFailure } from '../lib/redis-failure.ts';
import type { Logger } from '../logger.ts';
import { hashToken } from '../security/tokens.ts';

/** How often one token's use is written, at most: an hour, far finer than sign-ups on new devices. */
export const TOKEN_USE_EVERY_MS = 60 * 60_000;
/** Tokens whose last write this process remembers. */
const MAX_RECORDS = 50_000;

/** What the recorder writes to: the subscription store's use record. */
export interface TokenUseSink {
  recordTokenUse(id: string, token: string, now: number): Promise<void>;
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
  /** When each token (by hash: tokens are not kept) was last written, ctx clock. */
  private readonly written = new LRUCache<string, number>({ max: MAX_RECORDS });

  constructor(ctx: TokenUseDeps, sink: TokenUseSink, everyMs = TOKEN_USE_EVERY_MS) {
    this.ctx = ctx;
    this.sink = sink;
    this.everyMs = everyMs;
  }

  /** Notes that `token` of subscription `id` was used now; writes unless it was written less than an interval ago. */
  record(id: string, token: string): void {
    const now = this.ctx.now();
    const key = hashToken(token);
    const last = this.written.get(key);
    if (last !== undefined && now - last < this.everyMs) return;
    this.written.set(key, now);
    this.sink.recordTokenUse(id, token, now).catch((error: unknown) => {
      // While Redis is away every request would log this again; a use recorded an hour late is harmless.
      if (isRedisFailure(error)) return;
      this.written.delete(key);
      this.ctx.logger.warn({ err: error, subscription: id }, 'could not record a feed token use');
    });
  }
}
