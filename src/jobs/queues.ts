import { createHash, randomBytes } from 'node:crypto';
import { type Job, type JobsOptions, Queue } from 'bullmq';
import type { Config } from '../config.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import type { ChannelName } from '../notify/channel.ts';
import { FollowUpAsks } from '../store/follow-up-asks.ts';
import type { RedisKeys } from '../store/keys.ts';
import type { TargetKind } from '../store/push-target-record.ts';
import { type SourceKey, sourceToken } from '../timetable/source.ts';
import {
  type EmailJobData,
  NOTIFY_JOB,
  type NotifyFanoutJobData,
  type PushJobData,
  type PushJobResult,
  type PushReason,
  pushQueueName,
  QUEUE,
  type RefreshAsk,
  type RefreshJobData,
  type RefreshJobResult,
  type RefreshReason,
  replyJobId,
  TELEGRAM_JOB,
  type TelegramJobData,
  type TelegramReplyJobData,
  type TickJobData,
  type WebhookJobData,
} from './contract.ts';
import { mergeFollowUps, sameAsk } from './follow-ups.ts';

/** The service's queues, sharing one connection. */
export interface Queues {
  refresh: Queue<RefreshJobData, RefreshJobResult>;
  /** The push queue of each registered calendar kind, by kind. */
  readonly pushQueues: ReadonlyMap<TargetKind, Queue<PushJobData, PushJobResult>>;
  /** The push queue of `kind`; throws for a kind that is not registered (a bug). */
  pushQueue(kind: TargetKind): Queue<PushJobData, PushJobResult>;
  schedule: Queue<TickJobData | Record<string, never>>;
  notify: Queue<NotifyFanoutJobData | Record<string, never>>;
  /** Change messages; also the bot's replies (job name `reply`, see {@link enqueueReply}). */
  telegram: Queue<TelegramJobData>;
  webhook: Queue<WebhookJobData>;
  /** MAX change messages and the MAX bot's replies (job name `reply`), as on the Telegram queue. */
  max: Queue<TelegramJobData>;
  /** Change mails and confirmation mails. */
  email: Queue<EmailJobData>;
  /** What the callers of each pending follow-up refresh asked for (merged by `follow-ups.ts`). */
  followUpAsks: FollowUpAsks;
  close(): Promise<void>;
}

/**
 * Opens the queues on `connection` (which the caller owns and closes), with one push queue per kind of
 * `pushKinds` (the registered calendar kinds). Queue errors are connection errors, which the connection's own
 * listener already logs once per outage; without a listener BullMQ would print a stack trace on every
 * reconnect attempt.
 */
export function createQueues(connection: RedisClient, keys: RedisKeys, pushKinds: readonly TargetKind[]): Queues {
  const options = { connection, prefix: keys.queuePrefix };
  const refresh = new Queue<RefreshJobData, RefreshJobResult>(QUEUE.refresh, options);
  const pushQueues = new Map(
    pushKinds.map((kind) => [kind, new Queue<PushJobData, PushJobResult>(pushQueueName(kind), options)] as const),
  );
  const pushQueue = (kind: TargetKind) => {
    const queue = pushQueues.get(kind);
    if (queue === undefined) throw new Error(`no push queue for calendar kind ${kind}`);
    return queue;
  };
  const schedule = new Queue<TickJobData | Record<string, never>>(QUEUE.schedule, options);
  const notify = new Queue<NotifyFanoutJobData | Record<string, never>>(QUEUE.notify, options);
  const telegram = new Queue<TelegramJobData>(QUEUE.telegram, options);
  const webhook = new Queue<WebhookJobData>(QUEUE.webhook, options);
  const max = new Queue<TelegramJobData>(QUEUE.max, options);
  const email = new Queue<EmailJobData>(QUEUE.email, options);
  const all = [refresh, ...pushQueues.values(), schedule, notify, telegram, webhook, max, email];
  for (const queue of all) queue.on('error', () => undefined);
  return {
    refresh,
    pushQueues,
    pushQueue,
    schedule,
    notify,
    telegram,
    webhook,
    max,
    email,
    followUpAsks: new FollowUpAsks(connection, keys),
    close: async () => {
      await Promise.all(all.map((queue) => queue.close()));
    },
  };
}

/**
 * What a queue keeps of its finished jobs, by count and by age. Redis runs `noeviction`, and a deployment's
 * Redis is sized per source (docs/redis.md): what the queues keep must not grow with the sources, only with
 * what an operator looks at. BullMQ trims the oldest beyond the count whenever a job of the queue finishes,
 * whichever job it is, and drops those past the age then too.
 *
 * Completed jobs are kept an hour, at most 10,000: long enough to look up a job id that `POST /admin/resync`
 * or `resync` answered (17 minutes at least at the default 10 refreshes a second; `resync --wait` and the
 * admin pages' progress read the queue's event stream, not the kept jobs). A completed refresh holds about
 * 1.5 KB (its hash: data, options and outcome, plus its entry in the completed set), 15 MB at most, whatever
 * the number of sources; the outcome it keeps is a few counts (`RefreshJobResult`), never the feed.
 *
 * Failed jobs are what an operator investigates, so they are kept longer: a week, at most 2,000, with the
 * stack of their last attempt only (`FAILED_STACKS`): a university-wide outage fails every source alike, and
 * 2,000 of them say no more than a handful. The source record keeps each source's own last failure anyway.
 */
export const KEEP_COMPLETED = { age: 3600, count: 10_000 } as const;
export const KEEP_FAILED = { age: 7 * 24 * 3600, count: 2_000 } as const;
/** Stack traces a failed job keeps: its last attempt's (BullMQ keeps one per attempt by default). */
export const FAILED_STACKS = 1;

/**
 * Refresh priorities (BullMQ: 1 runs first; a job without one would run before every prioritized job, so every
 * refresh has one). A refresh someone waits for goes before background ones: an admin's resync first, then a
 * first request or a new subscription, then a confirming re-fetch; then a related source's change (seen already,
 * it only has to reach this source's feed), then the rotation and re-renders.
 */
export const REFRESH_PRIORITY: Readonly<Record<RefreshReason, number>> = {
  resync: 1,
  demand: 2,
  subscription: 2,
  confirm: 3,
  related: 5,
  schedule: 6,
  rerender: 6,
};

/**
 * The priority of `resync --all`: every active source at once (18,000 jobs take half an hour at 10/s) must not
 * go before first requests, sign-ups and Google connects, which answer `503` while they wait; it still goes
 * before scheduled ticks. A resync of one source keeps `REFRESH_PRIORITY.resync`.
 */
export const RESYNC_ALL_PRIORITY = 4;

/** The settings a refresh job is queued with (its retries). */
export type RefreshJobSettings = Pick<Config, 'refreshAttempts' | 'refreshBackoffMs'>;

/** Retry and retention options of refresh jobs. */
export function refreshJobOptions(config: RefreshJobSettings): JobsOptions {
  return {
    attempts: config.refreshAttempts,
    backoff: { type: 'exponential', delay: config.refreshBackoffMs, jitter: 0.5 },
    removeOnComplete: { ...KEEP_COMPLETED },
    removeOnFail: { ...KEEP_FAILED },
    stackTraceLimit: FAILED_STACKS,
  };
}

/** How to ask for a refresh. */
export interface RefreshRequest {
  reason: RefreshReason;
  now: number;
  /** The BullMQ priority, when not the reason's own (`REFRESH_PRIORITY`): `resync --all` is a background one. */
  priority?: number;
  /**
   * When a refresh of the source is running, keep one follow-up refresh queued behind it (an admin resync
   * must see data fetched after it asked). Without it, a running or queued refresh answers the request.
   */
  followUp?: boolean;
  /** Run no earlier than this many ms from now (a confirming re-fetch). */
  delayMs?: number;
  /** A `related` refresh: the source whose refresh found the change (kept on the job for its change record). */
  cause?: SourceKey;
  /** The job's id (without `:`) when none is running: a stable one makes repeated requests one job. */
  jobId?: string;
}

/**
 * Rounds of {@link enqueueRefresh} when the source's jobs move under it (a refresh starting or ending between
 * two calls): each round sees a later state, and a handful always suffices unless jobs finish faster than
 * Redis answers; the last round's answer stands.
 */
const MAX_ENQUEUE_ROUNDS = 5;

/**
 * Queues a refresh of `source`, deduplicated per source: at most one refresh is queued and one running, ever.
 * Resolves to the id of the job that will do the work: the new job, the one already queued, or the follow-up
 * that will start when the running one ends. A queued job asked for again gets the most urgent priority and a
 * fetching reason (see {@link hurry}); a follow-up gets the merge of every caller's ask (see `follow-ups.ts`).
 */
export async function enqueueRefresh(
  queues: Queues,
  config: RefreshJobSettings,
  source: SourceKey,
  request: RefreshRequest,
): Promise<string> {
  const token = sourceToken(source);
  const own: RefreshAsk = {
    reason: request.reason,
    priority: request.priority ?? REFRESH_PRIORITY[request.reason],
    ...(request.delayMs === undefined ? {} : { delayMs: request.delayMs }),
  };
  let answer = '';
  for (let round = 1; round <= MAX_ENQUEUE_ROUNDS; round += 1) {
    const running = request.followUp ? await runningJob(queues, token) : undefined;
    // Every follow-up of one running job gets the same id, so that ids answered to several callers all resolve.
    const jobId =
      running === undefined
        ? (request.jobId ?? `${token}-${request.now.toString(36)}-${randomBytes(3).toString('hex')}`)
        : followUpJobId(token, running);
    const ask = running === undefined ? own : (mergeFollowUps(await queues.followUpAsks.record(jobId, own)) ?? own);
    const followUp = request.followUp === true;
    // The cause is kept only while the job is the related refresh it names (a merged follow-up may be another).
    const cause = ask.reason === 'related' ? request.cause : undefined;
    const id = await addRefresh(queues, config, source, { ask, jobId, requestedAt: request.now, followUp, cause });
    if (running !== undefined && id === running) {
      // Stored as the follow-up. Another caller may have stored its own ask over ours since; whoever recorded
      // last queues the merge after recording, so ours stands only if it is still the merge of all asks.
      answer = jobId;
      if (sameAsk(mergeFollowUps(await queues.followUpAsks.list(jobId)), ask)) return jobId;
      continue;
    }
    answer = id;
    if (id === jobId && running === undefined) return id;
    // Answered by a job already queued (or by the follow-up, queued since the running job ended).
    const queued = await queues.refresh.getJob(id);
    if (queued !== undefined && (await hurry(queued, ask, request.now))) return id;
    // A job that started between our two calls may have fetched before the request: queue behind it.
    if (!request.followUp) return id;
  }
  return answer;
}

/** Adds the refresh job; resolves to the id BullMQ answers (another job's when deduplicated into it). */
async function addRefresh(
  queues: Queues,
  config: RefreshJobSettings,
  source: SourceKey,
  job: { ask: RefreshAsk; jobId: string; requestedAt: number; followUp: boolean; cause: SourceKey | undefined },
): Promise<string> {
  const { ask, jobId } = job;
  const added = await queues.refresh.add(
    'refresh',
    { source, reason: ask.reason, requestedAt: job.requestedAt, ...(job.cause ? { cause: job.cause } : {}) },
    {
      ...refreshJobOptions(config),
      priority: ask.priority,
      jobId,
      ...(ask.delayMs === undefined ? {} : { delay: ask.delayMs }),
      // No `reschedule`: a request must never pull a delayed confirmation or retry forward.
      deduplication: { id: sourceToken(source), ...(job.followUp ? { keepLastIfActive: true } : {}) },
    },
  );
  return added.id ?? jobId;
}

/**
 * Makes a queued job that answers a request do what the request needs: a re-render only renders the stored
 * snapshot again, without fetching, so one a fetching request is deduplicated into becomes a fetching refresh
 * of that reason; and it gets the request's priority when higher (an admin's resync of a source whose
 * scheduled tick waits must not wait behind every other tick). A job never slows down. Resolves to false when
 * the job started or ended meanwhile: it is left alone.
 */
async function hurry(job: Job<RefreshJobData, RefreshJobResult>, ask: RefreshAsk, now: number): Promise<boolean> {
  const state = await job.getState();
  if (state !== 'waiting' && state !== 'prioritized' && state !== 'delayed') return false;
  if (job.data.reason === 'rerender' && ask.reason !== 'rerender')
    await job.updateData({ ...job.data, reason: ask.reason, requestedAt: now });
  // Priority 0 is a job queued before priorities existed: it already runs before every prioritized one.
  if (job.priority !== 0 && job.priority > ask.priority) {
    // It may have been removed since (finished and trimmed): nothing is left to hurry.
    await job.changePriority({ priority: ask.priority }).catch(() => undefined);
  }
  return true;
}

/**
 * The id of the follow-up refresh queued behind the running job `runningId` of a source: the same for every
 * caller, so that all of them can look it up, and it exists only once the running job has ended.
 */
export function followUpJobId(token: string, runningId: string): string {
  return `${token}-after-${createHash('sha1').update(runningId).digest('hex').slice(0, 12)}`;
}

/**
 * Whether a refresh of `source` is queued or running: a request for it now is answered by that job, so joining
 * it asks the university nothing more.
 */
export async function refreshPending(queues: Queues, source: SourceKey): Promise<boolean> {
  const current = await queues.refresh.getDeduplicationJobId(sourceToken(source));
  if (current === null) return false;
  const state = await queues.refresh.getJobState(current);
  return state === 'waiting' || state === 'prioritized' || state === 'delayed' || state === 'active';
}

/** The id of the source's refresh job if it is running right now. */
async function runningJob(queues: Queues, token: string): Promise<string | undefined> {
  const current = await queues.refresh.getDeduplicationJobId(token);
  if (current === null) return undefined;
  return (await queues.refresh.getJobState(current)) === 'active' ? current : undefined;
}

/**
 * Retry and retention options of push jobs. Transient failures retry with backoff; rate limits do not use
 * attempts (the push queue is paused, or the job delayed: jobs/push-failure.ts), and permanent failures end
 * the job at once.
 */
export function pushJobOptions(): JobsOptions {
  return {
    attempts: 8,
    backoff: { type: 'exponential', delay: 5_000, jitter: 0.5 },
    removeOnComplete: { ...KEEP_COMPLETED },
    removeOnFail: { ...KEEP_FAILED },
    stackTraceLimit: FAILED_STACKS,
  };
}

/**
 * The deduplication id of a target's push jobs, `<queue>-<target>` (`push-<id>`, `caldav-push-<id>`): also how
 * the admin API and the state pages find a pending push.
 */
export function pushDeduplicationId(kind: TargetKind, target: string): string {
  return `${pushQueueName(kind)}-${target}`;
}

/**
 * Queues a push of `target` (of calendar kind `kind`) on its kind's queue, deduplicated per target: while one
 * is queued, it answers the request; while one runs, exactly one follow-up is kept behind it (the running one
 * may have read the old timetable). Resolves to the id of the job that will do the work. A `reconcile` asked
 * for while a plain push is queued is carried by the target's `reconcileRequested` flag, which callers set
 * first.
 */
export async function enqueuePush(
  queues: Pick<Queues, 'pushQueue'>,
  kind: TargetKind,
  target: string,
  source: SourceKey,
  reason: PushReason,
): Promise<string> {
  const queue = queues.pushQueue(kind);
  const job = await queue.add(
    queue.name,
    { target, source, reason },
    { ...pushJobOptions(), deduplication: { id: pushDeduplicationId(kind, target), keepLastIfActive: true } },
  );
  return job.id ?? '';
}

/** The id of a change set's fan-out job: the same for every producer (publication, sweeper), so it runs once. */
export function notifyFanoutJobId(source: SourceKey, stamp: number): string {
  return `nf-${sourceToken(source)}-${stamp.toString(36)}`;
}

/**
 * Queues the fan-out of one change set of the outbox. Its id is the change set's, so the publication and the
 * sweeper adding it again is harmless.
 */
export async function enqueueNotifyFanout(
  queues: Pick<Queues, 'notify'>,
  source: SourceKey,
  stamp: number,
): Promise<void> {
  await queues.notify.add(
    NOTIFY_JOB.fanout,
    { source, stamp },
    {
      jobId: notifyFanoutJobId(source, stamp),
      attempts: 8,
      backoff: { type: 'exponential', delay: 2_000, jitter: 0.5 },
      removeOnComplete: { ...KEEP_COMPLETED },
      removeOnFail: { ...KEEP_FAILED },
      stackTraceLimit: FAILED_STACKS,
    },
  );
}

/**
 * Options of a Telegram send job: network failures and Telegram's 5xx retry with backoff; a 429 waits out its
 * `retry_after` without using an attempt; a blocked chat ends the job.
 */
export function telegramJobOptions(): JobsOptions {
  return pushJobOptions();
}

/**
 * Options of a channel's send jobs (jobs/channel-send.ts): a failure for now retries with backoff; a rate limit,
 * a disabled channel and the address's pace put the job back without using an attempt. Messengers retry as
 * Telegram does (about 20 minutes in all); a mail's 4xx (greylisting, a full mailbox, a relay that is behind) is
 * worth retrying for longer, as mail servers do: ten attempts from 30 s, about eight hours in all.
 */
export function channelJobOptions(channel: ChannelName): JobsOptions {
  if (channel !== 'email') return telegramJobOptions();
  return { ...pushJobOptions(), attempts: 10, backoff: { type: 'exponential', delay: 30_000, jitter: 0.5 } };
}

/** A reply's priority: BullMQ takes jobs without one (change messages) first. */
const REPLY_PRIORITY = 10;

/**
 * Queues the bot's answer to one update: sent under the queue's limiter and the chat's pace, retried on failure.
 * Its id is the update's, so the same update queued twice (a retry after Redis stalled) is answered once.
 */
export async function enqueueReply(
  queues: Pick<Queues, 'telegram'>,
  data: TelegramReplyJobData,
  updateId: number,
): Promise<void> {
  await queues.telegram.add(TELEGRAM_JOB.reply, data, {
    ...telegramJobOptions(),
    jobId: replyJobId(data.chatId, updateId),
    priority: REPLY_PRIORITY,
  });
}
