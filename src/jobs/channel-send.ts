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
 *   mended (or a worker asks it without sending, channel-probe.ts), the first success putting it back on;
 *   `failed` for good drops the message, otherwise it is retried with backoff.
 *
 * The disabled channel's one try, the refusal and the rate limit are the channel's gate ({@link channelGate}),
 * which the bots' replies and the confirmation mails pass too.
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
import type { ChannelDisabled, ChannelStates } from '../store/channel-states.ts';
import type { RedisKeys } from '../store/keys.ts';
import { type DeliveryEnd, deliveryId, heldDeliveryId, type NotifyOutbox } from '../store/notify-outbox.ts';
import type { ChangeSet } from '../timetable/notify-change.ts';
import type { SourceKey } from '../timetable/source.ts';
import type { ChannelSendJobData, RateLimitRounds } from './contract.ts';
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
  const channel = adapter.name;
  const prefix = DELIVERY_PREFIX[channel];
  const gate = channelGate(ctx, channel, tuning);
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
    const { outbox } = ctx.notify;
    // The job's id, not its lock token: the same job run again after its worker died takes its own lease over at
    // once (BullMQ runs one job in one place at a time), while any other job of the same delivery waits.
    const owner = job.id ?? token ?? channel;
    const claim = await outbox.claim(delivery.leaseId, owner, leaseMs);
    if (claim === 'sent') return { outcome: 'done-before' };
    if (claim === 'busy') return delayBy(job, token, BUSY_RETRY_MS);
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
    const leave = () => outbox.release(delivery.leaseId, owner);
    const paceLeft = await takePace(ctx, prefix, address, adapter.paceMs);
    if (paceLeft > 0) {
      await leave();
      return delayBy(job, token, paceLeft);
    }
    // After the pace: a try of a disabled channel that had to wait for its address's turn would send nothing and
    // still hold the channel's one try for a minute.
    const disabled = await gate.admit(job, token, leave);
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
        await gate.accepted(disabled, log);
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
        await leave();
        count('misconfigured');
        return gate.refused(job, token, log, sent.reason);
      case 'rate-limited':
        await leave();
        count('rate-limited');
        return gate.rateLimited(job, log, sent.retryAfterMs);
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
        // An address that left the source while its message was made (`/stop`, an unsubscribe link) is no failure:
        // settled as the check before the send would have, without using an attempt or counting as failed.
        if (!(await adapter.follows(address, set.source))) {
          await delivery.settle('dropped', owner);
          return { outcome: 'unsubscribed' };
        }
        await leave();
        count('failed');
        throw new Error(`${channel} send failed: ${sent.reason}`);
    }
  }
}

/** What a channel's gate uses. */
export interface ChannelGateDeps {
  /** Each channel's queue, which a rate limit pauses. */
  readonly queues: ChannelSendDeps['queues'];
  readonly notify: { readonly states: ChannelSendDeps['notify']['states'] };
  /** Epoch ms: when a channel was disabled (BullMQ's delays use the wall clock). */
  readonly now: () => number;
}

/** A job the gate may put back: BullMQ's, whose data keeps its rate-limit rounds. */
export type GatedJob = Pick<
  Job<{ rateLimits?: RateLimitRounds }>,
  'moveToDelayed' | 'data' | 'updateData' | 'attemptsMade'
>;

/** What a send that failed may be, once its caller has dealt with `sent` and `gone`. */
export type ChannelFailure = Exclude<ChannelOutcome, { kind: 'sent' | 'gone' }>;

/**
 * What every job that sends through a channel passes (change messages, the bots' replies, confirmation mails), so
 * that they all treat the channel alike: while it is disabled one send at a time tries it and the others wait, a
 * refusal of our credentials disables it (said once) and keeps the job, the first success puts it back on (said
 * once), and a rate limit pauses its queue without using an attempt. The methods that put a job back throw what
 * BullMQ expects (`DelayedError`, `RateLimitError`).
 */
export interface ChannelGate {
  /**
   * Lets a send through, resolving to the channel's disabled state as found (undefined: on); while the channel is
   * disabled only its one try goes through, and any other job is put back (after `leave`, which gives up what the
   * job holds) until the try is over, without using an attempt.
   */
  admit(job: GatedJob, token: string | undefined, leave?: () => Promise<unknown>): Promise<ChannelDisabled | undefined>;
  /** A send the channel took: a channel that was disabled when it was admitted is on again. */
  accepted(disabled: ChannelDisabled | undefined, log: Pick<Logger, 'warn'>): Promise<void>;
  /** The channel refused our credentials: disabled with `reason`, the job put back for later. */
  refused(job: GatedJob, token: string | undefined, log: Pick<Logger, 'error'>, reason: string): Promise<never>;
  /** The channel asked to wait: its queue pauses, and the job goes back without using an attempt (20 in a row). */
  rateLimited(job: GatedJob, log: Pick<Logger, 'warn'>, retryAfterMs: number): Promise<never>;
  /**
   * Any other failure of `what` (a reply, a confirmation mail): a rate limit or a refusal as above, one for good
   * ends the job, one for now is retried with backoff.
   */
  failed(job: GatedJob, token: string | undefined, log: Logger, sent: ChannelFailure, what: string): Promise<never>;
}

/** The gate of `channel`'s sends (see {@link ChannelGate}). */
export function channelGate(
  ctx: ChannelGateDeps,
  channel: ChannelName,
  tuning: Pick<ChannelSendTuning, 'disabledRetryMs'> = {},
): ChannelGate {
  const disabledRetryMs = tuning.disabledRetryMs ?? DISABLED_RETRY_MS;
  const { states } = ctx.notify;
  const gate: ChannelGate = {
    admit: async (job, token, leave) => {
      const disabled = await states.disabled(channel);
      if (disabled === undefined || (await states.takeProbe(channel, disabledRetryMs))) return disabled;
      await leave?.();
      const spread = Math.floor(Math.random() * (disabledRetryMs / 10));
      return delayBy(job, token, Math.max(await states.probeLeft(channel), 1_000) + spread);
    },
    accepted: async (disabled, log) => {
      if (disabled !== undefined && (await states.enable(channel)))
        log.warn({ disabledSince: new Date(disabled.since).toISOString() }, `${channel} works again: channel on`);
    },
    refused: async (job, token, log, reason) => {
      if (await states.disable(channel, reason, ctx.now()))
        log.error(
          { reason },
          `${channel} refuses our credentials: channel disabled, its messages wait until it is mended`,
        );
      return delayBy(job, token, disabledRetryMs);
    },
    rateLimited: async (job, log, retryAfterMs) => {
      // Counted in the job's data: BullMQ's `attemptsStarted` also counts every other wait without an attempt, so
      // after a disabled spell each rate limit would use an attempt, and a mended channel's backlog would be lost.
      const kept = job.data.rateLimits;
      const rounds = (kept !== undefined && kept.attempt === job.attemptsMade ? kept.rounds : 0) + 1;
      if (!mayWaitAgain(rounds)) throw new Error(`${channel} rate limit, ${rounds} times in a row`);
      const queue = ctx.queues[channel];
      if (queue === undefined) throw new Error(`no queue for channel ${channel}`);
      await job.updateData({ ...job.data, rateLimits: { rounds, attempt: job.attemptsMade } });
      log.warn({ pauseMs: retryAfterMs, rounds }, `${channel} rate limit: ${channel} queue paused`);
      throw await waitOutRateLimit(queue, retryAfterMs);
    },
    failed: async (job, token, log, sent, what) => {
      switch (sent.kind) {
        case 'rate-limited':
          return gate.rateLimited(job, log, sent.retryAfterMs);
        case 'misconfigured':
          return gate.refused(job, token, log, sent.reason);
        default:
          if (sent.permanent) throw new UnrecoverableError(`${channel} refused ${what} for good: ${sent.reason}`);
          throw new Error(`${channel} could not send ${what}: ${sent.reason}`);
      }
    },
  };
  return gate;
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

/**
 * Puts the job back for `ms` without using an attempt. BullMQ's delays run on the wall clock, whatever clock the
 * service is given (a test's simulated one would park the job for years).
 */
export async function delayBy(
  job: { moveToDelayed(timestamp: number, token?: string): Promise<void> },
  token: string | undefined,
  ms: number,
): Promise<never> {
  await job.moveToDelayed(Date.now() + ms, token);
  throw new DelayedError();
}
