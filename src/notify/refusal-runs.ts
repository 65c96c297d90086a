/**
 * The guard against a wave of refusals, for a channel whose "this address is gone for good" could also be the
 * channel refusing *us* for every address at once: MAX answers `403 chat.denied` to every dialog of a bot that is
 * not through moderation, and a relay that no longer takes our mail may refuse every recipient as unknown. Taken
 * one by one, each refusal would unsubscribe a person (and, for e-mail, delete their address): a wave would lose
 * every subscriber for good.
 *
 * So the channel counts, over every worker, the messages refused as gone since it last had one taken. The first
 * `limit` of a run are the people's own (one who left is unsubscribed, as they should be; in a fan-out, addresses
 * that left are scattered among those that did not: with one in five gone, a run of six comes once in some 15,000
 * messages). A longer run is taken for the channel's trouble: each refusal is then `misconfigured` (the core
 * disables the channel with that reason, keeps every message, and tries one a minute) until a message is taken
 * again, which ends the run: at most `limit` people are unsubscribed by a wave.
 */
import type { RedisClient } from '../lib/redis-target.ts';
import type { ChannelOutcome } from './channel.ts';

/** How long a run is remembered without another refusal. */
const RUN_SECONDS = 3600;

/** How a channel's runs are judged. */
export interface RefusalRunSettings {
  /** Refusals in a row the channel takes for the people's own; beyond them, a wave. */
  readonly limit: number;
  /**
   * The reason a refusal in a wave disables the channel with: `run` refusals in a row, `last` the reason of this
   * one. It says that nobody is unsubscribed until a message is taken again.
   */
  readonly wave: (run: number, last: string) => string;
}

/** The run of refusals since the channel last had a message taken, and the wave it may show. */
export class RefusalRuns {
  private readonly redis: RedisClient;
  private readonly key: string;
  private readonly settings: RefusalRunSettings;

  /** `key`: the channel's count (`RedisKeys.channelRefusals`; MAX's is `mxRefusalsInARow`, the same key). */
  constructor(redis: RedisClient, key: string, settings: RefusalRunSettings) {
    this.redis = redis;
    this.key = key;
    this.settings = settings;
  }

  /** Whether the run is a wave now: only a message taken ends it (a login that works proves nothing of it). */
  async inWave(): Promise<boolean> {
    return Number((await this.redis.get(this.key)) ?? 0) > this.settings.limit;
  }

  /** Counts `outcome` and says what the core should make of it: a refusal in a wave is `misconfigured`. */
  async judge(outcome: ChannelOutcome): Promise<ChannelOutcome> {
    if (outcome.kind === 'sent') {
      await this.redis.del(this.key);
      return outcome;
    }
    if (outcome.kind !== 'gone') return outcome;
    const results = await this.redis.multi().incr(this.key).expire(this.key, RUN_SECONDS).exec();
    const run = Number(results?.[0]?.[1] ?? 0);
    if (run <= this.settings.limit) return outcome;
    return { kind: 'misconfigured', reason: this.settings.wave(run, outcome.reason) };
  }
}
