/**
 * The webhook delivery job: one change set's body (built once at fan-out, sent byte for byte) POSTed to one
 * webhook, signed afresh at each attempt under the same `webhook-id`, so a receiver can drop a repeat. A 2xx
 * delivers; 410 Gone disables the hook at once; anything else is retried by BullMQ on {@link webhookBackoff}'s
 * schedule (about a day in all, a longer `Retry-After` honoured), after which the hook is disabled with the
 * reason. Every attempt is kept in the hook's log (`GET /admin/webhooks/:id`).
 */
import type { BackoffStrategy, Job, Processor } from 'bullmq';
import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';
import { outcomeText, type WebhookAttemptOutcome, WebhookSender } from '../notify/webhooks/deliver.ts';
import type { NotifyOutbox } from '../store/notify-outbox.ts';
import type { WebhookStore } from '../store/webhook-store.ts';
import type { WebhookJobData } from './contract.ts';

/**
 * Waits after each failed attempt: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 6.5 h, about 24 h from the first to the
 * eighth and last attempt (the schedule the Standard Webhooks implementations use, its last step shortened).
 */
export const WEBHOOK_BACKOFF_MS: readonly number[] = [
  5_000,
  5 * 60_000,
  30 * 60_000,
  2 * 3_600_000,
  5 * 3_600_000,
  10 * 3_600_000,
  6.5 * 3_600_000,
];

/**
 * The job options of a delivery: a first attempt and one retry per step of the schedule; the Worker's
 * `settings.backoffStrategy` ({@link webhookBackoff}) computes the waits.
 */
export const WEBHOOK_JOB_OPTIONS = { attempts: WEBHOOK_BACKOFF_MS.length + 1, backoff: { type: 'webhook' } } as const;

/** The longest wait a receiver's `Retry-After` can ask for. */
const MAX_RETRY_AFTER_MS = 24 * 3_600_000;

/** A failed attempt, for BullMQ to retry; carries the receiver's `Retry-After`. */
export class WebhookAttemptFailedError extends Error {
  override name = 'WebhookAttemptFailedError';
  readonly retryAfterMs: number | undefined;

  constructor(message: string, retryAfterMs?: number | undefined) {
    super(message);
    this.retryAfterMs = retryAfterMs;
  }
}

/**
 * The Worker's `settings.backoffStrategy` for deliveries: the schedule's step for the attempt that failed, or the
 * receiver's `Retry-After` when it asks for longer (at most a day).
 */
export function webhookBackoff(backoffMs: readonly number[] = WEBHOOK_BACKOFF_MS): BackoffStrategy {
  return (attemptsMade, _type, error) => {
    const step = backoffMs[Math.min(Math.max(attemptsMade, 1), backoffMs.length) - 1] ?? 0;
    const asked = error instanceof WebhookAttemptFailedError ? (error.retryAfterMs ?? 0) : 0;
    return Math.max(step, Math.min(asked, MAX_RETRY_AFTER_MS));
  };
}

/** What the delivery processor uses. */
export interface WebhookDeliveryDeps {
  readonly config: Pick<Config, 'webhookAllowPrivate'>;
  readonly logger: Pick<Logger, 'info' | 'warn'>;
  readonly webhooks: Pick<WebhookStore, 'get' | 'secretOf' | 'disable' | 'recordAttempt'>;
  readonly notify: { readonly outbox: Pick<NotifyOutbox, 'claim' | 'markDone' | 'release'> };
  /**
   * Real time, not the service clock `now`: signed into each attempt's `webhook-timestamp`, which the receiver
   * checks against its own clock (Standard Webhooks allows 5 min), and recorded as the attempt's and the disable's
   * time. A test whose service clock is a simulated date still gives its receiver real time here.
   */
  readonly wallClock: () => number;
}

/**
 * How long a delivery's lease lasts: well past an attempt's deadline. The owner is the job id, which is the same
 * for every attempt of the delivery and for a fan-out that adds it again, so a retry after a crash takes it back
 * at once; once delivered, the record says so for days, longer than BullMQ keeps the finished job.
 */
const LEASE_MS = 60_000;

/** Tuning that tests shorten (with the Worker's {@link webhookBackoff} of the same schedule). */
export interface WebhookDeliveryTuning {
  /** The deadline of one attempt (default 15 s). */
  timeoutMs?: number | undefined;
  /** The client; default one guarded Agent for the processor. */
  sender?: WebhookSender | undefined;
}

/** What a delivery job ends with. */
export type WebhookJobResult =
  | { delivered: true; status: number; attempt: number }
  | { skipped: 'hook deleted' | 'hook disabled' | 'delivered already' }
  | { disabled: string };

/** The webhook delivery processor. */
export function webhookDeliveryProcessor(
  ctx: WebhookDeliveryDeps,
  tuning: WebhookDeliveryTuning = {},
): Processor<WebhookJobData, WebhookJobResult> {
  let sender = tuning.sender;
  return async (job, _token, signal) => {
    const began = performance.now();
    const { deliveryId, hookId, webhookId, body } = job.data;
    const hook = await ctx.webhooks.get(hookId);
    if (hook === undefined) return { skipped: 'hook deleted' };
    if (hook.state === 'disabled') return { skipped: 'hook disabled' };
    const secret = await ctx.webhooks.secretOf(hookId);
    if (secret === undefined) return { skipped: 'hook deleted' };
    const owner = job.id ?? deliveryId;
    if ((await ctx.notify.outbox.claim(deliveryId, owner, LEASE_MS)) !== 'claimed')
      return { skipped: 'delivered already' };
    sender ??= new WebhookSender({ allowPrivate: ctx.config.webhookAllowPrivate });
    const attempt = job.attemptsMade + 1;
    const at = ctx.wallClock();
    // How long the attempt took is measured on the monotonic clock, as the other jobs' durations are.
    const started = performance.now();
    const outcome = await sender.deliver({
      url: hook.url,
      secret,
      webhookId,
      body,
      now: at,
      timeoutMs: tuning.timeoutMs,
      signal,
    });
    const ms = Math.round(performance.now() - started);
    await ctx.webhooks.recordAttempt(hookId, {
      webhookId,
      at,
      attempt,
      ...(outcome.kind === 'failed' && outcome.status === undefined
        ? { error: outcomeText(outcome) }
        : { status: outcome.status }),
      ms,
    });
    const log = { hookId, webhookId, attempt, ms, outcome: outcomeText(outcome) };
    if (outcome.kind === 'delivered') {
      await ctx.notify.outbox.markDone(deliveryId, owner, 'sent');
      ctx.logger.info(log, 'webhook delivered');
      return { delivered: true, status: outcome.status, attempt };
    }
    if (outcome.kind === 'gone') return disable(ctx, job, 'the receiver answered 410 Gone', log);
    if (attempt >= (job.opts.attempts ?? 1))
      return disable(ctx, job, lastReason(outcome, attempt, triedMs(job, performance.now() - began)), log);
    await ctx.notify.outbox.release(deliveryId, owner);
    ctx.logger.warn(log, 'webhook delivery failed; it is retried');
    throw new WebhookAttemptFailedError(`webhook ${hookId}: ${outcomeText(outcome)}`, retryAfterOf(outcome));
  };
}

async function disable(
  ctx: WebhookDeliveryDeps,
  job: Job<WebhookJobData>,
  reason: string,
  log: object,
): Promise<WebhookJobResult> {
  await ctx.webhooks.disable(job.data.hookId, reason, ctx.wallClock());
  await ctx.notify.outbox.markDone(job.data.deliveryId, job.id ?? job.data.deliveryId, 'dropped');
  ctx.logger.warn({ ...log, reason }, 'webhook disabled');
  return { disabled: reason };
}

/**
 * How long a delivery has been tried: from when it was queued to when this attempt started, both stamped by
 * BullMQ (`timestamp`, `processedOn`), plus this attempt's own time on the monotonic clock. No injected clock
 * enters it, so a test's clock never mixes with BullMQ's stamps.
 */
function triedMs(job: Job<WebhookJobData>, attemptMs: number): number {
  return (job.processedOn ?? job.timestamp) - job.timestamp + attemptMs;
}

function retryAfterOf(outcome: WebhookAttemptOutcome): number | undefined {
  return outcome.kind === 'failed' ? outcome.retryAfterMs : undefined;
}

/** "HTTP 500 after 8 attempts over 24 h": the last failure, and how long the delivery was tried. */
function lastReason(outcome: WebhookAttemptOutcome, attempts: number, triedMs: number): string {
  return `${outcomeText(outcome)} after ${attempts} attempt${attempts === 1 ? '' : 's'} over ${spanText(triedMs)}`;
}

/** A span as a person reads it: "40 s", "12 min", "24 h". */
function spanText(ms: number): string {
  if (ms < 120_000) return `${Math.max(0, Math.round(ms / 1000))} s`;
  if (ms < 2 * 3_600_000) return `${Math.round(ms / 60_000)} min`;
  return `${Math.round(ms / 3_600_000)} h`;
}
