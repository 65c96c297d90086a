/**
 * The fan-out of change notifications: one job per published change set reads it from the outbox and adds one
 * send job per subscriber whose options keep some of it: for each person's channel that is on (Telegram, MAX,
 * e-mail: the channel list of notify-services.ts), on that channel's queue, with quiet hours and digests; and for
 * each webhook, with the body it will be sent byte for byte. Every send job's id derives from its delivery id, so
 * a fan-out run again (a retry, the sweeper, a crash before the outbox entry was taken out) adds nothing twice.
 * The sweeper re-queues fan-outs of change sets left in the outbox: at a worker's start, and every minute.
 *
 * A person's message that would go out in the quiet hours is held (store/notify-outbox.ts) and one collapsing
 * send per address, source and night, due when the hours end, tells the net change of all that was held; a
 * subscriber who chose a daily digest (e-mail) is held the same way until the next `MAIL_DIGEST_TIME`. A message
 * that may go now while others wait (a class starts before then) joins them and they all go now. One log line
 * per channel and fan-out says how many were held, until when and why (`NOTIFY_QUIET_HOURS`, `MAIL_DIGEST_TIME`).
 * Webhooks tell machines: never held.
 */
import type { BulkJobOptions, Job, Processor } from 'bullmq';
import type { Config } from '../config.ts';
import { tryLock } from '../lib/redis-lock.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import type { Logger } from '../logger.ts';
import { type ChannelAdapter, type ChannelName, DELIVERY_PREFIX } from '../notify/channel.ts';
import { filterFor } from '../notify/filter.ts';
import type { NotifyServices } from '../notify/notify-services.ts';
import { clockOf, deliverAt, heldUntil, MORNING_SPREAD_MS, minuteOfClock, quietUntil } from '../notify/quiet-hours.ts';
import { webhookBody, webhookMessageId } from '../notify/webhooks/payload.ts';
import type { RedisKeys } from '../store/keys.ts';
import { deliveryHash, deliveryId, type HoldResult, heldDeliveryId, type OutboxRef } from '../store/notify-outbox.ts';
import type { SubscriptionStore } from '../store/subscription-store.ts';
import type { ChangeSet, NotifyOptions } from '../timetable/notify-change.ts';
import { type SourceKey, sourceOf } from '../timetable/source.ts';
import {
  type ChannelSendJobData,
  NOTIFY_JOB,
  NOTIFY_SWEEP_AGE_MS,
  NOTIFY_SWEEP_EVERY_MS,
  NOTIFY_SWEEP_SCHEDULER_ID,
  type NotifyFanoutJobData,
  QUEUE,
  type WebhookJobData,
} from './contract.ts';
import {
  channelJobOptions,
  enqueueNotifyFanout,
  FAILED_STACKS,
  KEEP_COMPLETED,
  KEEP_FAILED,
  type Queues,
} from './queues.ts';
import { WEBHOOK_JOB_OPTIONS } from './webhook-delivery.ts';

/** What the fan-out and the sweeper use. */
export interface NotifyFanoutDeps {
  readonly config: Pick<Config, 'timezone' | 'notifyQuietHours' | 'mailDigestTime'>;
  readonly redis: RedisClient;
  readonly keys: RedisKeys;
  readonly queues: Pick<Queues, 'notify' | 'webhook'> & ChannelQueues;
  readonly notify: Pick<NotifyServices, 'outbox' | 'pageUrl'> & {
    readonly channels: readonly Pick<ChannelAdapter, 'name' | 'on' | 'ofSource'>[];
  };
  readonly webhooks: { ofSource(source: SourceKey): Promise<{ id: string }[]> };
  readonly subscriptions: Pick<SubscriptionStore, 'feedOptionsOf'>;
  readonly logger: Logger;
  readonly now: () => number;
}

/** Each person's channel's queue, as the fan-out adds to it (the queue named `QUEUE[channel]`). */
export type ChannelQueues = {
  readonly [channel in ChannelName]?: {
    addBulk(jobs: { name: string; data: ChannelSendJobData; opts?: BulkJobOptions }[]): Promise<unknown>;
  };
};

/** What one fan-out queued: send jobs per channel that is on, and webhook deliveries. */
export type FanoutResult = { [channel in ChannelName]?: number } & {
  webhook: number;
  /** The change set was no longer in the outbox (fanned out already, or expired). */
  gone?: boolean;
};

/** Send jobs are added in batches of this many (one round trip each). */
const ADD_BATCH = 500;
/**
 * A held collapsing send runs this long after its address's moment, so that a send of one set due at that very
 * moment (delayed for the morning by a version that did not hold sets) starts first and joins the held sets,
 * rather than racing them and telling its older change after the newer one.
 */
export const HELD_SEND_LAG_MS = 2_000;
/** How many change sets one sweep re-queues at most; the next sweep takes the rest. */
const SWEEP_LIMIT = 1_000;

/** The processor of the notify queue: fan-outs, and the sweeper's ticks. */
export function notifyProcessor(ctx: NotifyFanoutDeps): Processor<NotifyFanoutJobData | Record<string, never>> {
  return async (job: Job<NotifyFanoutJobData | Record<string, never>>) => {
    if (job.name === NOTIFY_JOB.sweep) return { requeued: await sweepOutbox(ctx, ctx.now() - NOTIFY_SWEEP_AGE_MS) };
    const data = job.data as NotifyFanoutJobData;
    return fanOutChangeSet(ctx, { source: data.source, stamp: data.stamp });
  };
}

/**
 * Adds the send jobs of one change set of the outbox, then takes it out of the outbox. Each subscriber of each
 * channel that is on gets the part its options keep (a personal timetable's subscribers: the subscription's
 * options as they are now); nobody gets an empty message.
 */
export async function fanOutChangeSet(ctx: NotifyFanoutDeps, ref: OutboxRef): Promise<FanoutResult> {
  const channels = ctx.notify.channels.filter((channel) => channel.on);
  const set = await ctx.notify.outbox.load(ref);
  if (set === undefined) {
    await ctx.notify.outbox.done(ref);
    return { ...Object.fromEntries(channels.map((channel) => [channel.name, 0])), webhook: 0, gone: true };
  }
  const now = ctx.now();
  const pageUrl = ctx.notify.pageUrl(set.source);
  const personal = channels.length === 0 ? undefined : await personalOptions(ctx, set.source);
  const queued: { channel: ChannelName; jobs: QueuedSend[] }[] = [];
  for (const channel of channels) {
    const { jobs, held } = await channelSends(ctx, channel, set, { ref, now, pageUrl, personal });
    queued.push({ channel: channel.name, jobs });
    for (const [reason, count] of Object.entries(held) as [HoldReason, number][])
      if (count > 0) logHeld(ctx, { channel: channel.name, source: set.source, held: count, reason, now });
  }
  const webhook = await webhookSends(ctx, set, ref, { now, pageUrl });
  for (const { channel, jobs } of queued) {
    const queue = ctx.queues[channel];
    if (queue === undefined) throw new Error(`no queue for channel ${channel}`);
    for (let start = 0; start < jobs.length; start += ADD_BATCH)
      await queue.addBulk(jobs.slice(start, start + ADD_BATCH));
  }
  for (let start = 0; start < webhook.length; start += ADD_BATCH)
    await ctx.queues.webhook.addBulk(webhook.slice(start, start + ADD_BATCH));
  await ctx.notify.outbox.done(ref);
  const result: FanoutResult = {
    ...Object.fromEntries(queued.map(({ channel, jobs }) => [channel, jobs.length])),
    webhook: webhook.length,
  };
  if (queued.some(({ jobs }) => jobs.length > 0) || webhook.length > 0)
    ctx.logger.info({ source: set.source, items: set.items.length, ...result }, 'change notifications queued');
  return result;
}

/** One send job as the fan-out adds it. */
interface QueuedSend {
  name: string;
  data: ChannelSendJobData;
  opts: BulkJobOptions;
}

/** How log lines name a channel. */
const CHANNEL_LABEL: Readonly<Record<ChannelName, string>> = { telegram: 'Telegram', max: 'MAX', email: 'E-mail' };

/** Why messages wait: the quiet hours, or the daily digest their subscriber chose. */
type HoldReason = 'quiet-hours' | 'digest';

/**
 * The send jobs of one channel for one change set: one per subscriber whose part is not empty, or, for one whose
 * messages are held (quiet hours, a digest) or wait already, one collapsing send per address, source and moment.
 * Resolves also to how many were held, by why.
 */
async function channelSends(
  ctx: NotifyFanoutDeps,
  channel: Pick<ChannelAdapter, 'name' | 'ofSource'>,
  set: ChangeSet,
  at: { ref: OutboxRef; now: number; pageUrl: string; personal: NotifyOptions | undefined },
): Promise<{ jobs: QueuedSend[]; held: Record<HoldReason, number> }> {
  const { ref, now, pageUrl, personal } = at;
  const { notifyQuietHours: quiet, timezone, mailDigestTime } = ctx.config;
  const prefix = DELIVERY_PREFIX[channel.name];
  const name = QUEUE[channel.name];
  const digestMinute = minuteOfClock(mailDigestTime);
  const parts: { address: string; part: ChangeSet; at: number; subgroup: number | undefined; digest: boolean }[] = [];
  for (const subscriber of await channel.ofSource(set.source)) {
    const options = personal ?? subscriber.options;
    const part = filterFor(set, options, now);
    if (part.items.length === 0) continue;
    const digest = subscriber.digest === true && digestMinute !== undefined;
    const due = deliverAt(part.items, now, quiet, timezone, subscriber.address, digest ? digestMinute : undefined);
    parts.push({ address: subscriber.address, part, at: due, subgroup: options.subgroup, digest });
  }
  const holdings: HoldResult[] = [];
  for (let start = 0; start < parts.length; start += ADD_BATCH)
    holdings.push(
      ...(await ctx.notify.outbox.holdAll(
        parts.slice(start, start + ADD_BATCH).map(({ address, part, at: due }) => ({
          prefix,
          address,
          ref,
          set: part,
          mode: due > now ? 'always' : 'if-held',
        })),
      )),
    );
  const jobs: QueuedSend[] = [];
  const held: Record<HoldReason, number> = { 'quiet-hours': 0, digest: 0 };
  for (const [index, { address, part, at: due, subgroup: followed, digest }] of parts.entries()) {
    const holding = holdings[index];
    const subgroup = followed === undefined ? {} : { subgroup: followed };
    if (holding === 'done') continue;
    if (holding === 'held') {
      // One collapsing send per address, source and moment: a fan-out run again, or a second set of the night,
      // adds nothing (the same job id), and the job tells whatever is held when it runs.
      const id = heldDeliveryId(prefix, address, set.source);
      if (due > now) held[digest ? 'digest' : 'quiet-hours'] += 1;
      jobs.push({
        name,
        data: {
          deliveryId: id,
          chatId: address,
          set: { ...part, items: [] },
          pageUrl,
          deliverAt: due,
          collapse: true,
          ...subgroup,
        },
        opts: {
          ...channelJobOptions(channel.name),
          jobId: `${prefix}-${deliveryHash(`${id}:${due}`)}`,
          ...(due > now ? { delay: due - now + HELD_SEND_LAG_MS } : {}),
        },
      });
      continue;
    }
    const id = deliveryId(prefix, address, ref);
    jobs.push({
      name,
      data: { deliveryId: id, chatId: address, set: part, pageUrl, deliverAt: due, ...subgroup },
      opts: { ...channelJobOptions(channel.name), jobId: `${prefix}-${deliveryHash(id)}` },
    });
  }
  return { jobs, held };
}

/**
 * The deliveries of one change set to the source's webhooks: machines, so never held, and told of every class
 * still to come (a webhook has no options); one body, sent byte for byte on every attempt.
 */
async function webhookSends(
  ctx: NotifyFanoutDeps,
  set: ChangeSet,
  ref: OutboxRef,
  at: { now: number; pageUrl: string },
): Promise<{ name: string; data: WebhookJobData; opts: BulkJobOptions }[]> {
  const hooks = await ctx.webhooks.ofSource(set.source);
  const shared = filterFor(set, {}, at.now);
  if (shared.items.length === 0) return [];
  const body = webhookBody(shared, at.pageUrl);
  return hooks.map((hook) => {
    const id = deliveryId('wh', hook.id, ref);
    return {
      name: QUEUE.webhook,
      data: { deliveryId: id, hookId: hook.id, webhookId: webhookMessageId(id), body },
      opts: {
        ...WEBHOOK_JOB_OPTIONS,
        removeOnComplete: { ...KEEP_COMPLETED },
        removeOnFail: { ...KEEP_FAILED },
        stackTraceLimit: FAILED_STACKS,
        jobId: `wh-${deliveryHash(id)}`,
      },
    };
  });
}

/**
 * The line saying that a channel's messages wait: when they go (the quiet hours' end, or the digest time; each
 * address's a stable moment within {@link MORNING_SPREAD_MS} after it), and why, with the setting that changes it.
 */
function logHeld(
  ctx: NotifyFanoutDeps,
  what: { channel: ChannelName; source: SourceKey; held: number; reason: HoldReason; now: number },
): void {
  const { notifyQuietHours: quiet, timezone, mailDigestTime } = ctx.config;
  const { channel, source, held, reason, now } = what;
  if (reason === 'digest') {
    const end = heldUntil(now, quiet, timezone, minuteOfClock(mailDigestTime));
    if (end === undefined) return;
    ctx.logger.info(
      {
        channel,
        source,
        held,
        reason,
        digestTime: mailDigestTime,
        timezone,
        sendAt: new Date(end).toISOString(),
        spreadMs: MORNING_SPREAD_MS,
        setting: 'MAIL_DIGEST_TIME',
      },
      `${CHANNEL_LABEL[channel]} messages held for the daily digest (${mailDigestTime} ${timezone}): they go at ` +
        `${new Date(end).toISOString()}, told together as one net change per subscriber`,
    );
    return;
  }
  const end = quietUntil(now, quiet, timezone);
  if (quiet === undefined || end === undefined) return;
  const hours = `${clockOf(quiet.fromMinute)}-${clockOf(quiet.toMinute)}`;
  ctx.logger.info(
    {
      channel,
      source,
      held,
      reason,
      quietHours: hours,
      timezone,
      sendAt: new Date(end).toISOString(),
      spreadMs: MORNING_SPREAD_MS,
      setting: 'NOTIFY_QUIET_HOURS',
    },
    `${CHANNEL_LABEL[channel]} messages held for the quiet hours (${hours} ${timezone}): they go at ` +
      `${new Date(end).toISOString()}, ` +
      'told together as one net change per subscriber; NOTIFY_QUIET_HOURS=off sends at once',
  );
}

/** A personal timetable's saved options (its chats follow them, edits included); undefined for a public one. */
async function personalOptions(ctx: NotifyFanoutDeps, source: SourceKey): Promise<NotifyOptions | undefined> {
  const ref = sourceOf(source);
  if (ref.kind !== 'personal') return undefined;
  const { options } = await ctx.subscriptions.feedOptionsOf(ref.id);
  return {
    ...(options?.subgroup === undefined ? {} : { subgroup: options.subgroup }),
    ...(options?.excludeKinds === undefined ? {} : { excludeKinds: options.excludeKinds }),
  };
}

/**
 * Queues the fan-out of every change set of the outbox published at or before `before` (epoch ms): those whose
 * fan-out was lost (a crash between the publication and its queueing, a job trimmed). Their job ids are the
 * change sets' own, so one still queued or running is not added twice. Resolves to how many it found.
 */
export async function sweepOutbox(ctx: Pick<NotifyFanoutDeps, 'notify' | 'queues'>, before: number): Promise<number> {
  const due = await ctx.notify.outbox.due(before, SWEEP_LIMIT);
  for (const ref of due) await enqueueNotifyFanout(ctx.queues, ref.source, ref.stamp);
  return due.length;
}

/** Makes sure the sweeper's job scheduler exists (one for the deployment, whichever worker makes it). */
export async function ensureNotifySweeper(ctx: Pick<NotifyFanoutDeps, 'queues' | 'redis' | 'keys'>): Promise<void> {
  const existing = await ctx.queues.notify.getJobScheduler(NOTIFY_SWEEP_SCHEDULER_ID);
  if (existing?.every === NOTIFY_SWEEP_EVERY_MS) return;
  if (!(await tryLock(ctx.redis, ctx.keys.lock('notify-sweeper'), '1', 30_000))) return;
  await ctx.queues.notify.upsertJobScheduler(
    NOTIFY_SWEEP_SCHEDULER_ID,
    { every: NOTIFY_SWEEP_EVERY_MS },
    { name: NOTIFY_JOB.sweep, data: {}, opts: { removeOnComplete: true, removeOnFail: 100 } },
  );
}
