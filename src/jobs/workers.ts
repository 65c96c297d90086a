/**
 * The worker role's BullMQ workers: refresh (rate-limited over all workers), schedule, one push queue per
 * calendar kind, change notification fan-outs, Telegram messages (with a bot) and webhook deliveries.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Processor, WorkerOptions } from 'bullmq';
import type { Config } from '../config.ts';
import { withDeadline } from '../lib/deadline.ts';
import { RedisUnavailableError } from '../lib/errors.ts';
import { closeRedis, connectRedis } from '../lib/redis-connection.ts';
import { redisFailure } from '../lib/redis-failure.ts';
import type { RedisOutageLog } from '../lib/redis-outage.ts';
import type { RedisTarget } from '../lib/redis-target.ts';
import type { ChannelAdapter, ChannelName } from '../notify/channel.ts';
import { isEmailChannel } from '../notify/email/channel.ts';
import { maxClientOf } from '../notify/max/client.ts';
import type { NotifyServices } from '../notify/notify-services.ts';
import type { PushAdapter } from '../push/adapter.ts';
import { packLegacyState } from '../store/state-packing.ts';
import { Worker } from './bullmq-worker.ts';
import { ChannelProbes } from './channel-probe.ts';
import type { ChannelSendDeps, ChannelSendTuning } from './channel-send.ts';
import { pushQueueName, QUEUE } from './contract.ts';
import { type EmailQueueDeps, emailProcessor } from './email-send.ts';
import { dropRetiredFeedForms, type FeedFormsDeps } from './feed-forms-migration.ts';
import { FreshnessPacer, type PacerDeps, type PacerTuning } from './freshness-pacer.ts';
import { beat, forgetWorker, type HeartbeatDeps } from './heartbeats.ts';
import { type MaxSendDeps, type MaxSendTuning, maxSendProcessor } from './max-send.ts';
import { ensureNotifySweeper, type NotifyFanoutDeps, notifyProcessor, sweepOutbox } from './notify-fanout.ts';
import { type PushDeps, pushProcessor } from './push.ts';
import { RedisFullGuard } from './redis-full-guard.ts';
import { discardUnknownDemand, type RefreshDeps, refreshProcessor } from './refresh.ts';
import { ensureReconcileScheduler, type ScheduleDeps, scheduleProcessor } from './schedule.ts';
import { type TelegramSendDeps, type TelegramSendTuning, telegramSendProcessor } from './telegram-send.ts';
import { type SeedTermCountsDeps, seedTermCounts } from './term-starts.ts';
import { type WebhookDeliveryDeps, webhookBackoff, webhookDeliveryProcessor } from './webhook-delivery.ts';

/**
 * What the worker role uses: what every processor it runs uses, the start-up and background work (seeding the
 * counts, shrinking stored forms, heartbeats), and the process's Redis outage log.
 */
export type WorkersDeps = RefreshDeps &
  ScheduleDeps &
  PushDeps &
  WebhookDeliveryDeps &
  NotifyFanoutDeps &
  TelegramSendDeps &
  MaxSendDeps &
  ChannelSendDeps &
  EmailQueueDeps &
  SeedTermCountsDeps &
  HeartbeatDeps &
  FeedFormsDeps &
  PacerDeps & {
    readonly config: Pick<
      Config,
      | 'refreshPolicy'
      | 'workerConcurrency'
      | 'upstreamRateLimit'
      | 'pushConcurrency'
      | 'redisPrefix'
      | 'webhookAllowPrivate'
      | 'telegramRateLimit'
      | 'maxRateLimit'
      | 'mailRateLimit'
    >;
    readonly redisOutage: RedisOutageLog;
    /** Every registered calendar kind: one push worker each. */
    readonly pushKinds: readonly PushAdapter[];
    /** Every registered channel: one send worker each that is on. */
    readonly notify: Pick<NotifyServices, 'channels'>;
  };

/** Tuning that tests shorten; production uses the defaults. */
export interface WorkerTuning {
  /** How long a job's lock lasts without renewal; a crashed worker's job is picked up after about this long. */
  lockDurationMs?: number;
  /** How often workers look for jobs whose lock expired. */
  stalledIntervalMs?: number;
  heartbeatMs?: number;
  /** First wait of a push (its queue paused, or the job delayed) after a rate limit without `Retry-After`. */
  pushRateLimitBaseMs?: number;
  /** How often a full Redis is asked whether it has room again (see `redis-full-guard.ts`). */
  redisFullProbeMs?: number;
  /** The waits between webhook delivery attempts (default about a day in all, `WEBHOOK_BACKOFF_MS`). */
  webhookBackoffMs?: readonly number[];
  /** The deadline of one webhook delivery attempt (default 15 s). */
  webhookTimeoutMs?: number;
  /**
   * Every channel's send jobs: the lease, the wait of a disabled channel (default 60 s each), which is also how
   * often a disabled channel is asked whether it is mended.
   */
  channels?: ChannelSendTuning;
  /** The Telegram send job's sender (default: grammY at `TELEGRAM_API_ROOT`), and what `channels` tunes. */
  telegram?: TelegramSendTuning;
  /** The MAX send job's client (default: `MAX_API_ROOT` on the shared rate), and what `channels` tunes. */
  max?: MaxSendTuning;
  /** The freshness pacer's step and lease (adaptive policy). */
  pacer?: PacerTuning;
}

/** Running workers. */
export interface WorkerSet {
  readonly id: string;
  /** This process's freshness pacer (adaptive policy), which queues background refreshes while it leads. */
  readonly pacer: FreshnessPacer | undefined;
  /**
   * Stops taking jobs, waits for running ones to finish, then closes the workers' connections, all within about
   * `budgetMs` (default {@link DEFAULT_CLOSE_BUDGET_MS}). Jobs still running when the wait is over (Redis down
   * or paused, a slow university) are left as a crash leaves them: BullMQ runs them again once their lock
   * expires. With Redis down nothing is waited for, since no job can be finished without it.
   */
  close(budgetMs?: number): Promise<void>;
}

/** Time `close` takes at most when no budget is given: what the shutdown step had before it had a budget. */
export const DEFAULT_CLOSE_BUDGET_MS = 30_000;

/** Kept from a close's budget, after waiting for jobs, for closing the workers and their connection. */
const FORCED_CLOSE_MS = 1_500;

/** How long a close waits for Redis to answer PING before it takes Redis for down. */
const PING_MS = 500;

/**
 * BullMQ's rate limiter lets `max` jobs start per `duration` ms window, over every worker of the queue, and
 * they all start at the window's beginning. Windows of about 100 ms keep those bursts small (100/s becomes
 * 10 per 100 ms, never 100 at once); a slow rate becomes one job per proportionally longer window.
 */
export function limiterFor(requestsPerSecond: number): { max: number; duration: number } {
  const max = Math.max(1, Math.round(requestsPerSecond / 10));
  return { max, duration: Math.round((1000 * max) / requestsPerSecond) };
}

/**
 * The worker of one calendar kind's push queue. A kind that pauses its queue on a rate limit has a limiter:
 * it paces push starts and is what lets the pause hold (`queue.rateLimit`). A kind that delays only the job
 * has none: its servers are paced per host, and one that throttles delays only its own jobs.
 */
function pushWorker(
  ctx: WorkersDeps,
  adapter: PushAdapter,
  base: Omit<WorkerOptions, 'concurrency'>,
  tuning: WorkerTuning,
): Worker {
  const processor = pushProcessor(ctx, adapter, { rateLimitBaseMs: tuning.pushRateLimitBaseMs });
  const { rateLimit } = adapter;
  return new Worker(pushQueueName(adapter.kind), processor, {
    ...base,
    concurrency: ctx.config.pushConcurrency,
    ...(rateLimit.mode === 'pause-queue' ? { limiter: limiterFor(rateLimit.startsPerSecond) } : {}),
  });
}

/** Each channel's rate setting: messages a second over all workers (its limiter). */
const CHANNEL_RATE = {
  telegram: 'telegramRateLimit',
  max: 'maxRateLimit',
  email: 'mailRateLimit',
} as const satisfies Record<ChannelName, keyof Config>;

/** Sends of a channel one worker runs at once: a slow answer holds one slot for at most its timeout. */
const CHANNEL_CONCURRENCY: Record<ChannelName, number> = { telegram: 8, max: 8, email: 4 };

/**
 * The processor of a channel's queue: its change messages through the channel core (channel-send.ts), and what
 * else the queue carries (the bot's replies, confirmation mails); and what closes with the worker.
 */
function channelProcessor(
  ctx: WorkersDeps,
  adapter: ChannelAdapter,
  tuning: WorkerTuning,
): { processor: Processor; close?: () => Promise<void> } {
  switch (adapter.name) {
    case 'telegram':
      return { processor: telegramSendProcessor(ctx, { ...tuning.channels, ...tuning.telegram }) };
    case 'max': {
      // The worker's own client (its connections to MAX), closed with the worker; the rate stays the deployment's.
      const client =
        tuning.max?.client === undefined && ctx.config.maxBotToken !== undefined
          ? maxClientOf(ctx.config, ctx.redis, ctx.keys)
          : undefined;
      return {
        processor: maxSendProcessor(ctx, { ...tuning.channels, ...tuning.max, ...(client ? { client } : {}) }),
        ...(client ? { close: () => client.close() } : {}),
      };
    }
    case 'email':
      return { processor: emailProcessor(ctx, adapter, tuning.channels) };
  }
}

/**
 * The worker of one channel's queue (`QUEUE[channel]`): its limiter holds all workers together under the channel's
 * rate setting (Telegram allows about 30 messages a second per bot, MAX 30 requests, a relay what it allows), and
 * is what lets a rate limit's pause of the queue (`queue.rateLimit`) hold.
 */
function channelWorker(
  ctx: WorkersDeps,
  adapter: ChannelAdapter,
  base: Omit<WorkerOptions, 'concurrency'>,
  tuning: WorkerTuning,
): Worker {
  const { processor, close } = channelProcessor(ctx, adapter, tuning);
  const worker = new Worker(QUEUE[adapter.name], processor, {
    ...base,
    concurrency: CHANNEL_CONCURRENCY[adapter.name],
    limiter: limiterFor(ctx.config[CHANNEL_RATE[adapter.name]]),
  });
  // The relay's pooled connections end with the worker that sends through them.
  if (isEmailChannel(adapter)) worker.on('closed', () => adapter.close());
  if (close !== undefined)
    worker.on('closed', () => {
      close().catch((error: unknown) =>
        ctx.logger.warn({ err: error, queue: worker.name }, 'could not close a client'),
      );
    });
  return worker;
}

/** Starts the workers of one process on `redis`, plus the heartbeat `/readyz` reads. */
export async function startWorkers(
  ctx: WorkersDeps,
  redis: RedisTarget | string,
  tuning: WorkerTuning = {},
): Promise<WorkerSet> {
  const id = `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  // Before any job runs: a publication must never infer term starts from an empty or partial count.
  await seedTermCounts(ctx);
  const connection = connectRedis(redis, { name: 'worker', outage: ctx.redisOutage, blocking: true });
  const base: Omit<WorkerOptions, 'concurrency'> = {
    connection,
    prefix: ctx.keys.queuePrefix,
    name: id,
    lockDuration: tuning.lockDurationMs ?? 30_000,
    stalledInterval: tuning.stalledIntervalMs ?? 15_000,
    maxStalledCount: 2,
  };
  const refresh = new Worker(QUEUE.refresh, refreshProcessor(ctx), {
    ...base,
    concurrency: ctx.config.workerConcurrency,
    limiter: limiterFor(ctx.config.upstreamRateLimit),
  });
  refresh.on('failed', (job, error) => {
    discardUnknownDemand(job, error).catch((failure: unknown) =>
      ctx.logger.warn({ err: failure, jobId: job?.id }, 'could not remove the refresh of an unknown source'),
    );
  });
  // Typed as the whole adapter: the deps intersect the narrower views the fan-out and the scheduler name.
  const kinds: readonly PushAdapter[] = ctx.pushKinds;
  const workers: Worker[] = [
    refresh,
    new Worker(QUEUE.schedule, scheduleProcessor(ctx), { ...base, concurrency: 4 }),
    ...kinds.map((adapter) => pushWorker(ctx, adapter, base, tuning)),
    // Fan-outs only read Redis and add jobs.
    new Worker(QUEUE.notify, notifyProcessor(ctx), { ...base, concurrency: 4 }),
    // Receivers are independent of each other: a slow one holds one of the slots for at most its timeout.
    new Worker(QUEUE.webhook, webhookDeliveryProcessor(ctx, { timeoutMs: tuning.webhookTimeoutMs }), {
      ...base,
      concurrency: 8,
      settings: { backoffStrategy: webhookBackoff(tuning.webhookBackoffMs) },
    }),
  ];
  for (const adapter of ctx.notify.channels) if (adapter.on) workers.push(channelWorker(ctx, adapter, base, tuning));
  const guard = new RedisFullGuard(workers, ctx.redis, ctx.config.redisPrefix, ctx.logger, tuning.redisFullProbeMs);
  for (const worker of workers) {
    // BullMQ passes on every failed attempt of its own connections (several a second per worker while Redis
    // is down): those go to the process's outage log, which logs the outage once.
    worker.on('error', (error) => {
      if (guard.handle(error)) return;
      if (lostRedis(error)) ctx.redisOutage.failed(`worker:${worker.name}`, error);
      else ctx.logger.error({ err: error, queue: worker.name }, 'worker error');
    });
  }
  await Promise.all(workers.map((worker) => worker.waitUntilReady()));
  await ensureReconcileScheduler(ctx);
  // Change sets published just before a crash wait in the outbox: their fan-outs are queued again now (ids are
  // theirs, so those still queued are not doubled), and by the sweeper every minute after.
  await ensureNotifySweeper(ctx);
  await sweepOutbox(ctx, Number.POSITIVE_INFINITY);
  // A paused Redis keeps its connections open: a heartbeat that times out or answers again is what tells the
  // outage log then. Another failure is logged once until a heartbeat succeeds again.
  let beatFailing = false;
  const heartbeat = () =>
    beat(ctx, id).then(
      () => {
        beatFailing = false;
        ctx.redisOutage.restored('heartbeat');
      },
      (error: unknown) => {
        if (redisFailure(error) instanceof RedisUnavailableError) return ctx.redisOutage.failed('heartbeat', error);
        if (beatFailing) return;
        beatFailing = true;
        ctx.logger.warn({ err: redisFailure(error) ?? error }, 'worker heartbeat failed');
      },
    );
  await heartbeat();
  const timer = setInterval(heartbeat, tuning.heartbeatMs ?? 5_000);
  timer.unref();
  // In the background: both forms are read, so jobs need not wait for them (about 25 s once at 20,000 sources).
  let closing = false;
  const packing = shrinkStoredForms(ctx, () => closing);
  // Every worker competes for the lead; the one leading queues the background refreshes of the deployment.
  const pacer = ctx.config.refreshPolicy === 'adaptive' ? new FreshnessPacer(ctx, tuning.pacer) : undefined;
  pacer?.start();
  // A channel disabled for its credentials is asked now and every minute whether it is mended, message or none.
  const probes = new ChannelProbes(ctx, ctx.notify.channels, tuning.channels);
  probes.start();
  ctx.logger.info(
    { worker: id, concurrency: ctx.config.workerConcurrency, rateLimit: ctx.config.upstreamRateLimit },
    'workers started',
  );
  return {
    id,
    pacer,
    close: async (budgetMs = DEFAULT_CLOSE_BUDGET_MS) => {
      const started = performance.now();
      const left = () => budgetMs - (performance.now() - started);
      clearInterval(timer);
      // First: no background refresh is queued once the workers stop taking jobs; the next leader takes over.
      await pacer?.stop();
      await probes.close();
      guard.close();
      closing = true;
      // No job can be finished without Redis (its result is stored there): when Redis is down or does not
      // answer at once (paused), nothing is waited for.
      const answers =
        connection.status === 'ready' &&
        (await withDeadline(ctx.redis.ping(), PING_MS).then(
          () => true,
          () => false,
        ));
      if (!answers)
        ctx.logger.warn(
          { redis: connection.status },
          'Redis does not answer: workers closed without waiting for their running jobs, which BullMQ runs ' +
            'again once their lock expires',
        );
      else {
        // Paused, a worker takes no new job, and its pause resolves once its running jobs are finished and stored.
        const graceMs = Math.max(0, left() - FORCED_CLOSE_MS);
        const finished = Promise.all([packing, ...workers.map((worker) => worker.pause())]);
        const inTime = await withDeadline(finished, graceMs).then(
          () => true,
          () => false,
        );
        if (!inTime)
          ctx.logger.warn(
            { graceMs },
            'running jobs did not finish in time: workers closed without them, and BullMQ runs them again ' +
              'once their lock expires',
          );
      }
      // Forced: BullMQ's graceful close would wait for those jobs, and for Redis, for ever.
      await Promise.all(workers.map((worker) => worker.close(true).catch(() => undefined)));
      if (answers) await withDeadline(forgetWorker(ctx, id), PING_MS).catch(() => undefined);
      await closeRedis(connection);
    },
  };
}

/**
 * Whether a worker's `error` is Redis being out of reach: a failure {@link redisFailure} calls unavailable, or
 * any error of a socket (it has a `syscall`), such as `getaddrinfo ENOTFOUND redis` once Docker's DNS has dropped
 * the name of a stopped Redis container. A worker's errors come from its Redis connections and scripts only.
 */
export function lostRedis(error: unknown): boolean {
  if (redisFailure(error) instanceof RedisUnavailableError) return true;
  return error instanceof Error && typeof (error as { syscall?: unknown }).syscall === 'string';
}

/** Drops the feed forms earlier releases stored, then packs their plain JSON state; each only warns when it fails. */
async function shrinkStoredForms(ctx: FeedFormsDeps, stopped: () => boolean): Promise<void> {
  try {
    await dropRetiredFeedForms(ctx);
  } catch (error) {
    ctx.logger.warn(
      { err: error },
      'could not drop the feed forms stored by an earlier release; the next start tries again',
    );
  }
  if (!stopped()) await packStoredState(ctx, stopped);
}

/**
 * Packs the state an earlier release stored as plain JSON (once per Redis). Both forms are read, so it never
 * fails the worker: what it could not do, the next start tries again.
 */
async function packStoredState(
  ctx: Pick<FeedFormsDeps, 'redis' | 'keys' | 'logger'>,
  stopped: () => boolean,
): Promise<void> {
  try {
    const { packed, unreadable, ran } = await packLegacyState(ctx.redis, ctx.keys, stopped);
    if (packed > 0) ctx.logger.info({ values: packed }, 'state stored as plain JSON by an earlier release packed');
    if (ran && unreadable.length > 0)
      ctx.logger.warn(
        { keys: unreadable.slice(0, 20), count: unreadable.length },
        'stored state in neither the packed nor the plain JSON form was left as it is; the next start looks again',
      );
  } catch (error) {
    ctx.logger.warn(
      { err: error },
      'could not pack the state stored by an earlier release; the next start tries again',
    );
  }
}
