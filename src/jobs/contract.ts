/**
 * The job contract: queue names, job names, payloads and results, imported by every producer and processor.
 * Payloads carry ids, never credentials. Job and scheduler ids never contain `:`.
 */
import type { RefreshAsk, RefreshReason } from '../store/follow-up-asks.ts';
import type { PushReason, SyncCounts, TargetKind } from '../store/push-target-record.ts';
import type { ChangeSet } from '../timetable/notify-change.ts';
import type { ChangeCounts } from '../timetable/publication.ts';
import type { SourceKey } from '../timetable/source.ts';

/** Queue names (under the `<REDIS_PREFIX>:q` BullMQ prefix). */
export const QUEUE = {
  /** Fetch, compare, expand, render, store, fan out. Rate-limited to `UPSTREAM_RATE_LIMIT` over all workers. */
  refresh: 'refresh',
  /** One job per Google push target whose source changed (see {@link pushQueueName}). */
  push: 'push',
  /** One job per CalDAV push target whose source changed (see {@link pushQueueName}). */
  caldavPush: 'caldav-push',
  /** Per-source scheduler ticks and the reconciler; cheap jobs that never talk to the upstream. */
  schedule: 'schedule',
  /**
   * One job per published change set: reads it from the outbox and adds one send job per subscriber (Telegram
   * chat or webhook) whose options keep some of it; and the sweeper that re-adds change sets left behind.
   */
  notify: 'notify',
  /** One message to one Telegram chat. Rate-limited to `TELEGRAM_RATE_LIMIT` over all workers. */
  telegram: 'telegram',
  /** One signed delivery to one webhook, retried with backoff for about a day. */
  webhook: 'webhook',
  /** One message to one MAX dialog, and the MAX bot's replies. Rate-limited to `MAX_RATE_LIMIT` over all workers. */
  max: 'max',
  /** One change mail (or confirmation mail) to one address. Rate-limited to `MAIL_RATE_LIMIT` over all workers. */
  email: 'email',
} as const;

/** Why a refresh runs, and what one caller asks of it (declared with the follow-up asks, which record them). */
export type { RefreshAsk, RefreshReason };

/** Payload of a refresh job (job name `refresh`). */
export interface RefreshJobData {
  source: SourceKey;
  reason: RefreshReason;
  /** Epoch ms when it was asked for. */
  requestedAt: number;
  /**
   * A `related` refresh: the source whose refresh found the change first (the change record names it). Absent
   * on other reasons, and on a follow-up whose callers asked for different things.
   */
  cause?: SourceKey;
}

/** What a refresh did. */
export type RefreshOutcome = 'published' | 'unchanged' | 'awaiting-confirmation';

/** Result of a refresh job (kept on the job, shown by `GET /admin/jobs/:id`). */
export interface RefreshJobResult {
  outcome: RefreshOutcome;
  /** Occurrences in the feed, cancelled ones included. */
  occurrences: number;
  /** Exact counts of the change that was published, if any. */
  changes?: ChangeCounts;
  /** Push jobs fanned out to Google and CalDAV targets. */
  pushJobs: number;
}

/** Why a push runs (declared with the push targets, which record it). */
export type { PushReason };

/**
 * The push queue of a calendar kind, one per kind: a slow or throttling server delays its own kind's pushes,
 * never another's. `<kind>-push`, except Google's: its queue predates the other kinds and keeps its name, so that
 * jobs queued before an upgrade still run. The job name is the queue's name.
 */
export function pushQueueName(kind: TargetKind): string {
  return kind === 'google' ? QUEUE.push : `${kind}-push`;
}

/** Payload of a push job (on the push queue of the target's kind). */
export interface PushJobData {
  /** The push target's id. */
  target: string;
  /**
   * The target's source, for logs and `GET /admin/jobs/:id` (the target knows its own; a job whose target moved
   * to another source is skipped). Absent from CalDAV jobs queued by earlier releases.
   */
  source?: SourceKey | undefined;
  /**
   * `refresh`: the source changed; `reconcile`: the periodic full comparison; `connect`: the first push of a
   * new or reconnected target. `reconcile` and `connect` list the calendar before comparing.
   */
  reason: PushReason;
  /** Set by the processor: rate-limit rounds spent before the job last made progress (not counted again). */
  roundsBeforeProgress?: number;
}

/** Result of a push job: what it wrote, or why it did nothing. */
export type PushJobResult = { skipped: string } | (SyncCounts & { reconciled: boolean; durationMs: number });

/** Job names on the schedule queue. */
export const SCHEDULE_JOB = {
  /** Produced by a source's job scheduler: asks for one refresh of the source. */
  tick: 'tick',
  /** Produced by the one reconciler scheduler: aligns job schedulers with the active sources. */
  reconcile: 'reconcile',
} as const;

/** Payload of a tick. */
export interface TickJobData {
  source: SourceKey;
}

/** Id of the reconciler's own job scheduler. */
export const RECONCILE_SCHEDULER_ID = 'reconcile';

/** How often the reconciler runs. */
export const RECONCILE_EVERY_MS = 60_000;

/** Id of a source's tick scheduler. */
export function tickSchedulerId(sourceToken: string): string {
  return `tick-${sourceToken}`;
}

/** Job names on the notify queue. */
export const NOTIFY_JOB = {
  /** Fans one change set of the outbox out to its subscribers. */
  fanout: 'fanout',
  /** Produced by the sweeper's job scheduler: re-adds fan-out jobs for change sets left in the outbox. */
  sweep: 'sweep',
} as const;

/** Payload of a fan-out job (job name `fanout`): names one change set of the outbox. */
export interface NotifyFanoutJobData {
  source: SourceKey;
  /** The publication's stamp (epoch ms). */
  stamp: number;
}

/**
 * Set by a channel's processor: the rate limits a job of a person's channel has waited out in a row, without using
 * an attempt, since it last used one (`attempt`: its `attemptsMade` then). BullMQ's own counts cannot tell them
 * apart from the job's other waits (a disabled channel, an address's pace, a busy delivery).
 */
export interface RateLimitRounds {
  rounds: number;
  attempt: number;
}

/** Payload of a Telegram send job (job name `telegram`). */
export interface TelegramSendJobData {
  /** `tg:<chatId>:<source>:<stamp>`: one per (chat, change set), the key of its delivery record. */
  deliveryId: string;
  chatId: string;
  /** The change set as this chat's options filter it (never empty when added). */
  set: ChangeSet;
  /** The timetable page the message links to. */
  pageUrl: string;
  /** Epoch ms the message is due (after quiet hours); informational, the job's delay enforces it. */
  deliverAt?: number;
  /** The subgroup the chat follows: its lines need no subgroup mark. Absent: the whole group, marks shown. */
  subgroup?: number;
  /**
   * A collapsing send (quiet hours): it tells the net change of every set held for this chat and source
   * (store/notify-outbox.ts), not `set`, whose items are then empty; `deliveryId` is the held sets' lease.
   */
  collapse?: true;
  rateLimits?: RateLimitRounds;
}

/**
 * A change message to one subscriber of a person's channel (the Telegram, MAX and e-mail queues): `chatId` is the
 * channel's address (a Telegram chat, a MAX dialog's `chat_id`, a mailbox's id), named so for the jobs queued
 * before there was more than one channel.
 */
export type ChannelSendJobData = TelegramSendJobData;

/** Payload of a confirmation mail (job name `confirm` on the e-mail queue): names the pending sign-up. */
export interface EmailConfirmJobData {
  /** The pending sign-up's id: the job reads its sealed address and its link from the store. */
  pendingId: string;
  rateLimits?: RateLimitRounds;
}

/** Job names on the e-mail queue. */
export const EMAIL_JOB = {
  /** One change mail ({@link ChannelSendJobData}). */
  send: 'email',
  /** One confirmation mail ({@link EmailConfirmJobData}). */
  confirm: 'confirm',
} as const;

/** What the e-mail queue carries, told apart by the job's name. */
export type EmailJobData = ChannelSendJobData | EmailConfirmJobData;

/** Job names on the Telegram queue. */
export const TELEGRAM_JOB = {
  /** One change message to one chat ({@link TelegramSendJobData}); its name is the queue's. */
  send: 'telegram',
  /** The bot's answer to one update ({@link TelegramReplyJobData}). */
  reply: 'reply',
} as const;

/** One message of a reply: plain text, cut to Telegram's limit, and rows of callback buttons under it. */
export interface ReplyPart {
  text: string;
  buttons?: { text: string; callback_data: string }[][];
}

/**
 * Payload of the bot's answer to one update (job name `reply`, on the Telegram queue): every message it answers
 * with, sent in order (the job's progress counts those sent, so a retry goes on from the next one). It shares
 * the queue's limiter and each chat's pace with change messages, which go first (a reply is a prioritised job).
 */
export interface TelegramReplyJobData {
  chatId: string;
  parts: ReplyPart[];
  /** Epoch ms the update was handled: a late reply says so, and a very late one only says to ask again. */
  askedAt: number;
  rateLimits?: RateLimitRounds;
}

/** What the Telegram queue carries: change messages and the bot's replies, told apart by the job's name. */
export type TelegramJobData = TelegramSendJobData | TelegramReplyJobData;

/** The id of the reply to one update of one chat: the same update never queues a second one. */
export function replyJobId(chatId: string, updateId: number): string {
  return `reply-${chatId}-${updateId}`;
}

/** Payload of a webhook delivery job (job name `webhook`). */
export interface WebhookJobData {
  /** `wh:<hookId>:<source>:<stamp>`: one per (webhook, change set). */
  deliveryId: string;
  hookId: string;
  /** The `webhook-id` header: the same on every attempt, so receivers can drop a repeat. */
  webhookId: string;
  /** The JSON body, built once and sent byte for byte on every attempt. */
  body: string;
}

/** Id of the notify sweeper's job scheduler. */
export const NOTIFY_SWEEP_SCHEDULER_ID = 'notify-sweep';

/** How often the sweeper runs, and how old an outbox entry must be before it re-adds its fan-out. */
export const NOTIFY_SWEEP_EVERY_MS = 60_000;
export const NOTIFY_SWEEP_AGE_MS = 30_000;
