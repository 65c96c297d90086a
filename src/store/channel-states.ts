/**
 * Which notification channels are disabled, and why: a channel whose own credentials the other side refuses (a
 * revoked bot token, SMTP AUTH refused) is disabled with the reason until a send or an ask succeeds again. One
 * HASH per channel, present only while it is disabled, so that the deployment agrees on it across processes, and
 * only the change of state (not every job that meets it) is logged. While it is disabled, one send or ask at a time
 * tries it (the channel's try, {@link ChannelStates.takeProbe}).
 */
import type { RedisClient } from '../lib/redis-target.ts';
import type { RedisKeys } from './keys.ts';

/** A disabled channel: why, and since when (epoch ms). */
export interface ChannelDisabled {
  reason: string;
  since: number;
}

/** The disabled-with-reason state of the notification channels. */
export class ChannelStates {
  private readonly redis: RedisClient;
  private readonly keys: Pick<RedisKeys, 'channelState' | 'channelProbe'>;

  constructor(redis: RedisClient, keys: Pick<RedisKeys, 'channelState' | 'channelProbe'>) {
    this.redis = redis;
    this.keys = keys;
  }

  /**
   * Disables `channel` with `reason` at `now`; resolves to true when this call disabled it (it was on), false
   * when it was disabled already (the first reason and moment are kept).
   */
  async disable(channel: string, reason: string, now: number): Promise<boolean> {
    const key = this.keys.channelState(channel);
    const results = await this.redis
      .multi()
      .hsetnx(key, 'state', 'disabled')
      .hsetnx(key, 'reason', reason)
      .hsetnx(key, 'since', String(now))
      .exec();
    const [error, first] = results?.[0] ?? [new Error('Redis transaction was aborted')];
    if (error) throw error;
    return Number(first) === 1;
  }

  /** Puts `channel` back on; resolves to true when it was disabled. */
  async enable(channel: string): Promise<boolean> {
    return (await this.redis.del(this.keys.channelState(channel))) === 1;
  }

  /** Why `channel` is disabled and since when; undefined when it is on. */
  async disabled(channel: string): Promise<ChannelDisabled | undefined> {
    const fields = await this.redis.hgetall(this.keys.channelState(channel));
    if (fields.state !== 'disabled') return undefined;
    const since = Number(fields.since);
    return { reason: fields.reason ?? '', since: Number.isFinite(since) ? since : 0 };
  }

  /**
   * Takes the one try of a disabled channel for `ms`: true for the caller that may send to see whether the
   * channel is mended, false while another's try is live.
   */
  async takeProbe(channel: string, ms: number): Promise<boolean> {
    return (await this.redis.set(this.keys.channelProbe(channel), '1', 'PX', Math.max(1, ms), 'NX')) === 'OK';
  }

  /** Ms left until the live try of `channel` expires (0 when none is live). */
  async probeLeft(channel: string): Promise<number> {
    return Math.max(0, await this.redis.pttl(this.keys.channelProbe(channel)));
  }
}
