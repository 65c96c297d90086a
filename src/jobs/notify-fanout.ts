/**
 * The fan-out of change notifications: one job per published change set reads it from the outbox and adds one
 * send job per subscriber whose options keep some of it (Telegram chats, with their quiet hours; webhooks, with
 * the body they will be sent byte for byte). Every send job's id derives from its delivery id, so a fan-out run
 * again (a retry, the sweeper, a crash before the outbox entry was taken out) adds nothing twice. The sweeper
 * re-queues fan-outs of change sets left in the outbox: at a worker's start, and every minute.
 *
 * A chat's message that would go out in the quiet hours is held (store/notify-outbox.ts) and one collapsing send
 * per chat, source and night, due when the hours end, tells the net change of all that was held; a message that
 * may go now while others wait for the morning (a class starts before then) joins them and they all go now.
 * One log line per fan-out says how many were held, until when and why (`NOTIFY_QUIET_HOURS`).
 */
import type { Job, Processor } from 'bullmq';
import type { Config } from '../config.ts';
import { tryLock } from '../lib/redis-lock.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import type { Logger } from '../logger.ts';
import { filterFor } from '../notify/filter.ts';
import type { NotifyServices } from '../notify/notify-services.ts';
import { clockOf, deliverAt, MORNING_SPREAD_MS, quietUntil } from '../notify/quiet-hours.ts';
import { webhookBody, webhookMessageId } from '../notify/webhooks/payload.ts';
import type { RedisKeys } from '../store/keys.ts';
import { deliveryHash, deliveryId, type HoldResult, heldDeliveryId, type OutboxRef } from '../store/notify-outbox.ts';
import type { SubscriptionStore } from '../store/subscription-store.ts';
import type { ChangeSet, NotifyOptions } from '../timetable/notify-change.ts';
import { type SourceKey, sourceOf } from '../timetable/source.ts';
import {
  NOTIFY_JOB,
  NOTIFY_SWEEP_AGE_MS,
  NOTIFY_SWEEP_EVERY_MS,
  NOTIFY_SWEEP_SCHEDULER_ID,
  type NotifyFanoutJobData,
  QUEUE,
  type TelegramSendJobData,
  type WebhookJobData,
} from './contract.ts';
import {
  enqueueNotifyFanout,
  FAILED_STACKS,
  KEEP_COMPLETED,
  KEEP_FAILED,
  type Queues,
  telegramJobOptions,
} from './queues.ts';
import { WEBHOOK_JOB_OPTIONS } from './webhook-delivery.ts';

/** What the fan-out and the sweeper use. */
export interface NotifyFanoutDeps {
  readonly config: Pick<Config, 'timezone' | 'notifyQuietHours'>;
  readonly redis: RedisClient;
  readonly keys: RedisKeys;
  readonly queues: Pick<Queues, 'notify' | 'telegram' | 'webhook'>;
  readonly notify: Pick<NotifyServices, 'outbox' | 'telegramOn' | 'pageUrl'> & {
    readonly chats: { ofSource(source: SourceKey): Promise<{ chatId: string; options: NotifyOptions }[]> };
  };
  readonly webhooks: { ofSource(source: SourceKey): Promise<{ id: string }[]> };
  readonly subscriptions: Pick<SubscriptionStore, 'feedOptionsOf'>;
  readonly logger: Logger;
  readonly now: () => number;
}

/** What one fan-out queued. */
export interface FanoutResult {
  telegram: number;
  webhook: number;
  /** The change set was no longer in the outbox (fanned out already, or expired). */
  gone?: boolean;
}

/** Send jobs are added in batches of this many (one round trip each). */
const ADD_BATCH = 500;
/**
 * A held collapsing send runs this long after its chat's moment, so that a send of one set due at that very moment
 * (delayed for the morning by a version that did not hold sets) starts first and joins the held sets, rather than
 * racing them and telling its older change after the newer one.
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
 * Adds the send jobs of one change set of the outbox, then takes it out of the outbox. Each subscriber gets the
 * part its options keep (a personal timetable's chats: the subscription's options as they are now); nobody gets
 * an empty message.
 */
export async function fanOutChangeSet(ctx: NotifyFanoutDeps, ref: OutboxRef): Promise<FanoutResult> {
  const set = await ctx.notify.outbox.load(ref);
  if (set === undefined) {
    await ctx.notify.outbox.done(ref);
    return { telegram: 0, webhook: 0, gone: true };
  }
  const now = ctx.now();
  const pageUrl = ctx.notify.pageUrl(set.source);
  const telegram: { name: string; data: TelegramSendJobData; opts: object }[] = [];
  let held = 0;
  if (ctx.notify.telegramOn) {
    const chats = await ctx.notify.chats.ofSource(set.source);
    const personal = await personalOptions(ctx, set.source);
    const parts: { chatId: string; part: ChangeSet; at: number; subgroup: number | undefined }[] = [];
    for (const chat of chats) {
      const options = personal ?? chat.options;
      const part = filterFor(set, options, now);
      if (part.items.length === 0) continue;
      const at = deliverAt(part.items, now, ctx.config.notifyQuietHours, ctx.config.timezone, chat.chatId);
      parts.push({ chatId: chat.chatId, part, at, subgroup: options.subgroup });
    }
    const holdings: HoldResult[] = [];
    for (let start = 0; start < parts.length; start += ADD_BATCH)
      holdings.push(
        ...(await ctx.notify.outbox.holdAll(
          parts.slice(start, start + ADD_BATCH).map(({ chatId, part, at }) => ({
            chatId,
            ref,
            set: part,
            mode: at > now ? 'always' : 'if-held',
          })),
        )),
      );
    for (const [index, { chatId, part, at, subgroup: followed }] of parts.entries()) {
      const holding = holdings[index];
      const subgroup = followed === undefined ? {} : { subgroup: followed };
      if (holding === 'done') continue;
      if (holding === 'held') {
        // One collapsing send per chat, source and moment: a fan-out run again, or a second set of the night,
        // adds nothing (the same job id), and the job tells whatever is held when it runs.
        const id = heldDeliveryId(chatId, set.source);
        if (at > now) held += 1;
        telegram.push({
          name: QUEUE.telegram,
          data: {
            deliveryId: id,
            chatId,
            set: { ...part, items: [] },
            pageUrl,
            deliverAt: at,
            collapse: true,
            ...subgroup,
          },
          opts: {
            ...telegramJobOptions(),
            jobId: `tg-${deliveryHash(`${id}:${at}`)}`,
            ...(at > now ? { delay: at - now + HELD_SEND_LAG_MS } : {}),
          },
        });
        continue;
      }
      const id = deliveryId('tg', chatId, ref);
      telegram.push({
        name: QUEUE.telegram,
        data: { deliveryId: id, chatId, set: part, pageUrl, deliverAt: at, ...subgroup },
        opts: { ...telegramJobOptions(), jobId: `tg-${deliveryHash(id)}` },
      });
    }
  }
  if (held > 0) logHeld(ctx, set.source, held, now);
  const webhook: { name: string; data: WebhookJobData; opts: object }[] = [];
  const hooks = await ctx.webhooks.ofSource(set.source);
  const shared = filterFor(set, {}, now);
  if (shared.items.length > 0) {
    const body = webhookBody(shared, pageUrl);
    for (const hook of hooks) {
      const id = deliveryId('wh', hook.id, ref);
      webhook.push({
        name: QUEUE.webhook,
        data: { deliveryId: id, hookId: hook.id, webhookId: webhookMessageId(id), body },
        opts: {
          ...WEBHOOK_JOB_OPTIONS,
          removeOnComplete: { ...KEEP_COMPLETED },
          removeOnFail: { ...KEEP_FAILED },
          stackTraceLimit: FAILED_STACKS,
          jobId: `wh-${deliveryHash(id)}`,
        },
      });
    }
  }
  for (let start = 0; start < telegram.length; start += ADD_BATCH)
    await ctx.queues.telegram.addBulk(telegram.slice(start, start + ADD_BATCH));
  for (let start = 0; start < webhook.length; start += ADD_BATCH)
    await ctx.queues.webhook.addBulk(webhook.slice(start, start + ADD_BATCH));
  await ctx.notify.outbox.done(ref);
  if (telegram.length + webhook.length > 0)
    ctx.logger.info(
      { source: set.source, items: set.items.length, telegram: telegram.length, webhook: webhook.length },
      'change notifications queued',
    );
  return { telegram: telegram.length, webhook: webhook.length };
}

/**
 * The line saying that messages wait for the morning: when they go (the hours' end; each chat's a stable moment
 * within {@link MORNING_SPREAD_MS} after it), and why, with the setting that turns it off.
 */
function logHeld(ctx: NotifyFanoutDeps, source: SourceKey, held: number, now: number): void {
  const { notifyQuietHours: quiet, timezone } = ctx.config;
  const end = quietUntil(now, quiet, timezone);
  if (quiet === undefined || end === undefined) return;
  const hours = `${clockOf(quiet.fromMinute)}-${clockOf(quiet.toMinute)}`;
  ctx.logger.info(
    {
      source,
      held,
      reason: 'quiet-hours',
      quietHours: hours,
      timezone,
      sendAt: new Date(end).toISOString(),
      spreadMs: MORNING_SPREAD_MS,
      setting: 'NOTIFY_QUIET_HOURS',
    },
    `Telegram messages held for the quiet hours (${hours} ${timezone}): they go at ${new Date(end).toISOString()}, ` +
      'told together as one net change per chat; NOTIFY_QUIET_HOURS=off sends at once',
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
