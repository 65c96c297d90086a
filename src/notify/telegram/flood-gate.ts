/**
 * How many commands of one chat the bot answers: `TELEGRAM_COMMAND_BURST` at once, then one a second (a token
 * bucket per chat, shared by every process through Redis). A command beyond that is not answered: the chat is
 * told «Слишком часто: подождите секунду» once, and not again for {@link WARNED_SECONDS}. Answers are sent one a
 * second per chat anyway (the reply queue), so answering a flood would only queue minutes of replies; dropping
 * the excess keeps what a chat gets near what it asked for last.
 */
import { bucket, TokenBuckets } from '../../lib/rate-limit.ts';
import type { RedisClient } from '../../lib/redis-target.ts';
import type { RedisKeys } from '../../store/keys.ts';

/** What to do with a command: answer it, answer «Слишком часто» instead, or nothing. */
export type GateVerdict = 'answer' | 'warn' | 'ignore';

/** A chat is told «Слишком часто» at most once in this long. */
export const WARNED_SECONDS = 10;

/** The words a chat flooding commands gets, once. */
export const TOO_OFTEN = 'Слишком часто: подождите секунду. Я отвечаю на одну команду в секунду.';

/** The gate of every chat's commands. */
export class CommandGate {
  private readonly redis: RedisClient;
  private readonly keys: Pick<RedisKeys, 'rateLimit' | 'tgFloodWarned'>;
  private readonly buckets: TokenBuckets;
  private readonly burst: number;

  constructor(redis: RedisClient, keys: Pick<RedisKeys, 'rateLimit' | 'tgFloodWarned'>, burst: number) {
    this.redis = redis;
    this.keys = keys;
    this.buckets = new TokenBuckets(redis);
    this.burst = burst;
  }

  /** Counts one command of `chatId` and says what to do with it. */
  async admit(chatId: string): Promise<GateVerdict> {
    const rate = { count: this.burst, periodMs: this.burst * 1000 };
    const wait = await this.buckets.tryTake([bucket(this.keys.rateLimit(`telegram-commands:${chatId}`), rate)]);
    if (wait === 0) return 'answer';
    const first = await this.redis.set(this.keys.tgFloodWarned(chatId), '1', 'EX', WARNED_SECONDS, 'NX');
    return first === null ? 'ignore' : 'warn';
  }
}
