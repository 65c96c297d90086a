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

/**
 * Where one messenger's chats are counted: the bucket's name and the «told already» key of a chat (a Telegram chat
 * and a MAX dialog may have the same number).
 */
export interface GateKeys {
  bucket(chatId: string): string;
  warned(chatId: string): string;
}

/** Telegram's: the names the gate had before there was another messenger. */
export function telegramGateKeys(keys: Pick<RedisKeys, 'rateLimit' | 'tgFloodWarned'>): GateKeys {
  return { bucket: (chatId) => keys.rateLimit(`telegram-commands:${chatId}`), warned: keys.tgFloodWarned };
}

/** The gate of every chat's commands. */
export class CommandGate {
  private readonly redis: RedisClient;
  private readonly keys: GateKeys;
  private readonly buckets: TokenBuckets;
  private readonly burst: number;

  /** `keys`: RedisKeys (Telegram's chats) or a messenger's own {@link GateKeys}. */
  constructor(redis: RedisClient, keys: Pick<RedisKeys, 'rateLimit' | 'tgFloodWarned'> | GateKeys, burst: number) {
    this.redis = redis;
    this.keys = 'bucket' in keys ? keys : telegramGateKeys(keys);
    this.buckets = new TokenBuckets(redis);
    this.burst = burst;
  }

  /** Counts one command of `chatId` and says what to do with it. */
  async admit(chatId: string): Promise<GateVerdict> {
    const rate = { count: this.burst, periodMs: this.burst * 1000 };
    const wait = await this.buckets.tryTake([bucket(this.keys.bucket(chatId), rate)]);
    if (wait === 0) return 'answer';
    const first = await this.redis.set(this.keys.warned(chatId), '1', 'EX', WARNED_SECONDS, 'NX');
    return first === null ? 'ignore' : 'warn';
  }
}
