/**
 * The send job of every person's channel (Telegram, MAX, e-mail): one message telling one address what one
 * publication changed. The fan-out filtered the change set for the address and named the job after the delivery;
 * this job makes the delivery happen once, whatever the channel (its adapter, notify/channel.ts, only knows its
 * subscribers and how to send one message):
 *
 * - the delivery's record (store/notify-outbox.ts) is claimed first: `sent` (a re-added or doubled job) does
 *   nothing, a live lease of another job waits for it;
 * - classes that have started meanwhile (quiet hours, a digest, a queue that was behind) are dropped; nothing
 *   left, nothing sent; an address that unsubscribed meanwhile (`/stop`) gets nothing;
 * - one message per address per the channel's pace (`<prefix>:pace:<address>`, over all workers); the queue's
 *   limiter keeps the channel's total under its rate setting;
 * - by the channel's answer: `rate-limited` pauses the channel's queue without using an attempt; `gone` (blocked
 *   the bot, no dialog, a mailbox refused for good) unsubscribes the address from everything and drops the
 *   delivery with whatever is held for it; `misconfigured` (the channel refuses *us*: a revoked token, SMTP AUTH
 *   refused) disables the channel with the reason (store/channel-states.ts), logged once, and puts the job back
 *   for later: nothing is dropped, and while the channel is disabled one send a minute tries whether it is
 *   mended, the first success putting it back on; `failed` for good drops the message, otherwise it is retried
 *   with backoff.
 *
 * The record says `sent` right after the channel accepted the message. A worker killed before that (while the
 * request is in flight) leaves the lease, which the same job's retry takes over at once: told once unless the
 * channel had already accepted the message, one round trip's window in which a repeat is preferred to a loss.
 *
 * A collapsing send (`collapse`: the quiet hours' end, a digest's time, or a message that may go now while others
 * wait) leases the sets held for its address and source instead, tells their net change (notify/net-change.ts)
 * from what the address last heard, and settles exactly the sets it read: told, dropped or empty, each one's
 * delivery record saying so. A net change of nothing sends nothing. Sets held while it was sending stay for the
 * next collapsing send. A send of one set that finds sets held for its address and source joins them and sends as
 * a collapsing one, so that nothing overtakes them.
 */
import { DelayedError, type Job, type Processor, type Queue, UnrecoverableError } from 'bullmq';
import type { Counter } from 'prom-client';
import type { RedisClient } from '../lib/redis-target.ts';
import type { Logger } from '../logger.ts';
import { type ChannelAdapter, type ChannelName, type ChannelOutcome, DELIVERY_PREFIX } from '../notify/channel.ts';
import { netChange } from '../notify/net-change.ts';
import type { ChannelStates } from '../store/channel-states.ts';
import type { RedisKeys } from '../store/keys.ts';
import { type DeliveryEnd, deliveryId, heldDeliveryId, type NotifyOutbox } from '../store/notify-outbox.ts';
import type { ChangeSet } from '../timetable/notify-change.ts';
import type { SourceKey } from '../timetable/source.ts';
import type { ChannelSendJobData } from './contract.ts';
import { mayWaitAgain, waitOutRateLimit } from './failure.ts';

/** How a channel's messages ended, as the metrics count them. */
export type ChannelMessageOutcome = 'sent' | 'gone' | 'dropped' | 'failed' | 'rate-limited' | 'misconfigured';

/** The channel series the core counts into (runtime/metrics.ts). */
export interface ChannelMetrics {
  /** Messages by channel and how they ended. */
  readonly channelMessages: Pick<Counter<'channel' | 'outcome'>, 'inc'>;
}

/** What the channel send processor uses. */
export interface ChannelSendDeps {
  readonly logger: Logger;
  readonly redis: RedisClient;
  readonly keys: Pick<RedisKeys, 'channelPace'>;
  /** Each channel's queue, which a rate limit pauses. */
  readonly queues: { readonly [channel in ChannelName]?: Pick<Queue, 'rateLimit'> };
  readonly notify: {
    readonly outbox: Pick<NotifyOutbox, 'claim' | 'markDone' | 'release' | 'holdAll' | 'held' | 'settleHeld'>;
    readonly states: Pick<ChannelStates, 'disable' | 'enable' | 'disabled' | 'takeProbe' | 'probeLeft'>;
  };
  readonly metrics: ChannelMetrics;
  /** Epoch ms. */
  readonly now: () => number;
}

/** Tuning that tests change. */
export interface ChannelSendTuning {
  /** How long a claimed delivery stays leased: longer than a send may take. */
  leaseMs?: number;
  /** How long a send waits while its channel is disabled, and how often one send tries whether it is mended. */
  disabledRetryMs?: number;
}

/** What a send job came to. */
export type ChannelSendResult =
  | { outcome: 'sent'; messageId: string }
  | { outcome: DeliveryEnd | 'done-before' | 'unsubscribed' };

/** A delivery's lease: well beyond any channel's send timeout (Telegram's 15 s). */
export const DELIVERY_LEASE_MS = 60_000;
/** While a channel is disabled, one send tries this often whether it is mended; the others wait as long. */
export const DISABLED_RETRY_MS = 60_000;
/** How long a job waits for another job's live lease of the same delivery before looking again. */
const BUSY_RETRY_MS = 5_000;

/**
 * The send processor of `adapter`'s change messages (jobs of {@link ChannelSendJobData}). A channel whose queue
 * carries other jobs too (the bot's replies, confirmation mails) calls it for its change messages.
 */
export function channelSendProcessor(
  ctx: ChannelSendDeps,
  adapter: ChannelAdapter,
  tuning: ChannelSendTuning = {},
): Processor<ChannelSendJobData, ChannelSendResult> {
  const leaseMs = tuning.leaseMs ?? DELIVERY_LEASE_MS;
  const disabledRetryMs = tuning.disabledRetryMs ?? DISABLED_RETRY_MS;
  const channel = adapter.name;
  const prefix = DELIVERY_PREFIX[channel];
  const count = (outcome: ChannelMessageOutcome) => ctx.metrics.channelMessages.inc({ channel, outcome });
  return async (job, token, signal) => {
    const { chatId: address, set } = job.data;
    const log = ctx.logger.child({ channel, jobId: job.id, source: set.source, attempt: job.attemptsMade + 1 });
    if (job.data.collapse) return deliver(job, token, signal, log, heldSets(job.data));
    // A message that could go on its own while sets wait for this address and source joins them, so that the
    // address hears the net change in order: one delayed before sets were held (queued by a version that sent
    // each set of the night on its own), or one that waited for its address's turn while a set was held.
    const ref = { source: set.source, stamp: set.stamp };
    const [joined] = await ctx.notify.outbox.holdAll([{ prefix, address, ref, set, mode: 'if-held' }]);
    if (joined === 'held') {
      log.info({ stamp: set.stamp }, 'a change message joins those held for its address: told together');
      return deliver(job, token, signal, log, heldSets(job.data));
    }
    return deliver(job, token, signal, log.child({ stamp: set.stamp }), oneSet(job.data));
  };

  /** A delivery of one change set: its own record. */
  function oneSet({ deliveryId: id, set }: ChannelSendJobData): Delivery {
    return {
      leaseId: id,
      read: async (now) => {
        const items = set.items.filter((item) => item.startsAt > now);
        return items.length === 0 ? undefined : { told: { ...set, items }, messageOf: id };
      },
      settle: (outcome, owner) => ctx.notify.outbox.markDone(id, owner, outcome),
    };
  }

  /**
   * A collapsing delivery: the net change of the sets held for one address and source, under their own lease; it
   * settles exactly the sets it read (sets held meanwhile stay for the next collapsing send).
   */
  function heldSets({ chatId: address, set }: ChannelSendJobData): Delivery {
    const { outbox } = ctx.notify;
    const leaseId = heldDeliveryId(prefix, address, set.source);
    let stamps: number[] = [];
    return {
      leaseId,
      read: async (now) => {
        const held = await outbox.held(prefix, address, set.source);
        stamps = held.map((each) => each.stamp);
        const net = netChange(held.map((each) => each.set));
        const items = (net?.items ?? []).filter((item) => item.startsAt > now);
        if (net === undefined || items.length === 0) return undefined;
        // Named after the newest set it tells: the same on a retry that reads the same sets, and never a name
        // an earlier message of this address and source had.
        const messageOf = deliveryId(prefix, address, { source: set.source, stamp: Math.max(...stamps) });
        return { told: { ...net, items }, messageOf, logged: { stamps } };
      },
      settle: async (outcome, owner) => {
        await outbox.settleHeld(prefix, address, set.source, stamps, outcome);
        await outbox.release(leaseId, owner);
      },
    };
  }

  /**
   * Makes one delivery happen once: claims its lease, reads what is left to tell, checks that the address still
   * follows the source and that the channel is on (or this send is the one trying it), takes the address's turn,
   * sends, and settles the delivery by the channel's answer.
   */
  async function deliver(
    job: Job<ChannelSendJobData, ChannelSendResult>,
    token: string | undefined,
    signal: AbortSignal | undefined,
    log: Logger,
    delivery: Delivery,
  ): Promise<ChannelSendResult> {
    const { chatId: address, set, pageUrl, subgroup } = job.data;
    const { outbox, states } = ctx.notify;
    // The job's id, not its lock token: the same job run again after its worker died takes its own lease over at
    // once (BullMQ runs one job in one place at a time), while any other job of the same delivery waits.
    const owner = job.id ?? token ?? channel;
    const claim = await outbox.claim(delivery.leaseId, owner, leaseMs);
    if (claim === 'sent') return { outcome: 'done-before' };
    if (claim === 'busy') return delay(job, token, ctx.now() + BUSY_RETRY_MS);
    const now = ctx.now();
    const content = await delivery.read(now);
    if (content === undefined) {
      await delivery.settle('empty', owner);
      return { outcome: 'empty' };
    }
    const { told, messageOf, logged } = content;
    if (!(await adapter.follows(address, set.source))) {
      await delivery.settle('dropped', owner);
      return { outcome: 'unsubscribed' };
    }
    // While the channel is disabled, one send at a time tries it; the others wait without using an attempt.
    const disabled = await states.disabled(channel);
    if (disabled !== undefined && !(await states.takeProbe(channel, disabledRetryMs))) {
      await outbox.release(delivery.leaseId, owner);
      const spread = Math.floor(Math.random() * (disabledRetryMs / 10));
      return delay(job, token, now + Math.max(await states.probeLeft(channel), 1_000) + spread);
    }
    const paceLeft = await takePace(ctx, prefix, address, adapter.paceMs);
    if (paceLeft > 0) {
      await outbox.release(delivery.leaseId, owner);
      return delay(job, token, now + paceLeft);
    }
    const sent = await adapter.send(
      {
        address,
        deliveryId: messageOf,
        source: set.source,
        told,
        pageUrl,
        ...(subgroup === undefined ? {} : { subgroup }),
      },
      signal,
    );
    const items = told.items.length;
    switch (sent.kind) {
      case 'sent':
        await delivery.settle('sent', owner);
        count('sent');
        log.debug({ messageId: sent.messageId, items, ...logged }, `told a ${channel} subscriber of changes`);
        if (disabled !== undefined && (await states.enable(channel)))
          log.warn({ disabledSince: new Date(disabled.since).toISOString() }, `${channel} works again: channel on`);
        return { outcome: 'sent', messageId: sent.messageId };
      case 'gone': {
        const left = await adapter.unsubscribe(address);
        await delivery.settle('dropped', owner);
        count('gone');
        // What waits for the address's other sources would find it unsubscribed later: drop it now.
        const dropped = await dropHeld(outbox, prefix, address, left);
        log.info(
          { reason: sent.reason, sources: left.length, heldDropped: dropped, ...logged },
          `${channel} address is gone: unsubscribed it`,
        );
        return { outcome: 'dropped' };
      }
      case 'misconfigured':
        await outbox.release(delivery.leaseId, owner);
        count('misconfigured');
        if (await states.disable(channel, sent.reason, ctx.now()))
          log.error(
            { reason: sent.reason },
            `${channel} refuses our credentials: channel disabled, its messages wait until a send succeeds`,
          );
        return delay(job, token, now + disabledRetryMs);
      case 'rate-limited':
        await outbox.release(delivery.leaseId, owner);
        count('rate-limited');
        return rateLimited(job, log, sent);
      default:
        if (sent.permanent) {
          // Sending it again cannot help. Settled as dropped, so that the next change for this address is told on
          // its own, not rebuilt into the same refused message with what was held.
          await delivery.settle('dropped', owner);
          count('dropped');
          log.error(
            { reason: sent.reason, items, outcome: 'dropped', ...logged },
            `${channel} refused a change message: dropped it`,
          );
          throw new UnrecoverableError(`${channel} refused the message: ${sent.reason}`);
        }
        await outbox.release(delivery.leaseId, owner);
        count('failed');
        throw new Error(`${channel} send failed: ${sent.reason}`);
    }
  }

  /** A send the channel rate-limited: its queue waits, and the job goes back without using an attempt. */
  async function rateLimited(
    job: Pick<Job, 'attemptsStarted' | 'attemptsMade'>,
    log: Pick<Logger, 'warn'>,
    sent: Extract<ChannelOutcome, { kind: 'rate-limited' }>,
  ): Promise<never> {
    const rounds = job.attemptsStarted - job.attemptsMade;
    if (!mayWaitAgain(rounds)) throw new Error(`${channel} rate limit, ${rounds} times in a row`);
    const queue = ctx.queues[channel];
    if (queue === undefined) throw new Error(`no queue for channel ${channel}`);
    log.warn({ pauseMs: sent.retryAfterMs }, `${channel} rate limit: ${channel} queue paused`);
    throw await waitOutRateLimit(queue, sent.retryAfterMs);
  }
}

/** One delivery as {@link channelSendProcessor}'s `deliver` makes it. */
interface Delivery {
  /** The delivery record it leases: the set's own, or the held sets' of its address and source. */
  leaseId: string;
  /**
   * What to tell, read once the lease is taken: the classes still to come, and the delivery id the message is
   * known by (`ChannelMessage.deliveryId`); undefined when none is.
   */
  read(now: number): Promise<{ told: ChangeSet; messageOf: string; logged?: Record<string, unknown> } | undefined>;
  /** Records how it ended and gives the lease up. */
  settle(outcome: DeliveryEnd, owner: string): Promise<void>;
}

/** Drops what is held for an address that is gone, for each of `sources`; resolves to how many sets it dropped. */
async function dropHeld(
  outbox: Pick<NotifyOutbox, 'held' | 'settleHeld'>,
  prefix: string,
  address: string,
  sources: readonly SourceKey[],
): Promise<number> {
  let dropped = 0;
  for (const source of sources) {
    const stamps = (await outbox.held(prefix, address, source)).map((each) => each.stamp);
    await outbox.settleHeld(prefix, address, source, stamps, 'dropped');
    dropped += stamps.length;
  }
  return dropped;
}

/**
 * Takes the address's turn: 0 when this job may send now, else the ms until the address's last message is a pace
 * old. A channel without a pace sends at once.
 */
async function takePace(
  ctx: Pick<ChannelSendDeps, 'redis' | 'keys'>,
  prefix: string,
  address: string,
  paceMs: number,
): Promise<number> {
  if (paceMs <= 0) return 0;
  const key = ctx.keys.channelPace(prefix, address);
  if ((await ctx.redis.set(key, '1', 'PX', paceMs, 'NX')) === 'OK') return 0;
  const left = await ctx.redis.pttl(key);
  return Math.max(left, 50);
}

/** Puts the job back until `at` without using an attempt. */
export async function delay(
  job: { moveToDelayed(timestamp: number, token?: string): Promise<void> },
  token: string | undefined,
  at: number,
): Promise<never> {
  await job.moveToDelayed(at, token);
  throw new DelayedError();
}
