/**
 * The request core: one keep-alive undici Agent per client, and the retry loop (exponential backoff with
 * full jitter; `Retry-After` honoured on 429). Logs each retry once at `warn`; final failures are the
 * caller's to log, with its own context.
 */
import { Agent } from 'undici';
import type { Logger } from '../logger.ts';
import type { BudgetPriority, UpstreamBudget } from './budget.ts';
import { FALLBACK_CHARSET } from './charset.ts';
import {
  type EndpointName,
  UpstreamBudgetError,
  UpstreamError,
  UpstreamRateLimitError,
  UpstreamTimeoutError,
} from './errors.ts';
import { backoffDelay, type RetryPolicy } from './retry.ts';
import { type PreparedRequest, sendOnce, type TransportContext } from './transport.ts';

/** Settings of the request core, defaults already applied. */
export interface HttpCoreSettings {
  logger: Logger;
  timeouts: { connectMs: number; headersMs: number; bodyMs: number };
  maxResponseBytes: number;
  maxConnections: number;
  retry: RetryPolicy;
  random: () => number;
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  now: () => number;
  /** Every try takes a token of this budget first. */
  budget?: UpstreamBudget;
  /** How the tries take from `budget`. */
  budgetPriority: BudgetPriority;
}

/** Sends prepared requests with retries; owns the connection pool. */
export interface HttpCore {
  /** Resolves with the parsed JSON of a 2xx answer, after retrying transient failures. */
  send(req: PreparedRequest): Promise<unknown>;
  close(): Promise<void>;
}

function statusOf(err: UpstreamError): number | undefined {
  return 'status' in err && typeof err.status === 'number' ? err.status : undefined;
}

/** How long to wait before the next try, or undefined when the error is final. */
function retryDelay(err: unknown, attempt: number, settings: HttpCoreSettings): number | undefined {
  const policy = settings.retry;
  if (!(err instanceof UpstreamError) || !err.retryable || attempt >= policy.attempts) return undefined;
  if (err instanceof UpstreamRateLimitError && err.retryAfterMs !== undefined) {
    // Longer than we are willing to hold a worker: throw now so that a queue can reschedule the job.
    return err.retryAfterMs > policy.maxRetryAfterMs ? undefined : err.retryAfterMs;
  }
  return backoffDelay(policy, attempt - 1, settings.random);
}

function logRetry(logger: Logger, endpoint: EndpointName, attempt: number, delayMs: number, err: UpstreamError) {
  logger.warn(
    { endpoint, attempt, delayMs, error: err.name, status: statusOf(err) },
    'university API request failed, retrying',
  );
}

/**
 * Warns once per endpoint (per client) that bodies were read as windows-1251 without being labelled so: a
 * deployment that does it does it on every answer, and one line says all there is to say.
 */
function charsetWarner(logger: Logger): (endpoint: EndpointName, reason: string) => void {
  const warned = new Set<EndpointName>();
  return (endpoint, reason) => {
    if (warned.has(endpoint)) return;
    warned.add(endpoint);
    logger.warn({ endpoint, charset: FALLBACK_CHARSET, reason }, 'university API body read as windows-1251');
  };
}

/** Whether `err` is `signal`'s abort: its reason itself, or an AbortError (timers, undici) carrying it. */
function causedBy(err: unknown, signal: AbortSignal): boolean {
  if (!signal.aborted) return false;
  return err === signal.reason || (err instanceof Error && err.cause === signal.reason);
}

/** Builds the request core and its undici Agent. */
export function createHttpCore(settings: HttpCoreSettings): HttpCore {
  const agent = new Agent({
    connections: settings.maxConnections,
    connect: { timeout: settings.timeouts.connectMs },
    headersTimeout: settings.timeouts.headersMs,
    bodyTimeout: settings.timeouts.bodyMs,
  });
  const transport: TransportContext = {
    dispatcher: agent,
    maxResponseBytes: settings.maxResponseBytes,
    now: settings.now,
    onCharsetFallback: charsetWarner(settings.logger),
  };

  /** Takes a token for one try, waiting no longer than the call may (its own wait, and what its deadline leaves). */
  async function takeToken(req: PreparedRequest): Promise<void> {
    const waits = [req.budgetWaitMs, req.deadline?.remainingMs()].filter((ms) => ms !== undefined);
    await settings.budget?.take(req.endpoint, {
      maxWaitMs: waits.length === 0 ? undefined : Math.min(...waits),
      signal: req.signal,
      priority: settings.budgetPriority,
    });
  }

  async function sendWithRetries(req: PreparedRequest, progress: { phase: 'budget' | 'exchange' }): Promise<unknown> {
    for (let attempt = 1; ; attempt += 1) {
      req.signal?.throwIfAborted();
      progress.phase = 'budget';
      await takeToken(req);
      progress.phase = 'exchange';
      try {
        return await sendOnce(transport, req, attempt);
      } catch (err) {
        const delayMs = retryDelay(err, attempt, settings);
        if (delayMs === undefined || !(err instanceof UpstreamError)) throw err;
        logRetry(settings.logger, req.endpoint, attempt, delayMs, err);
        await settings.sleep(delayMs, req.signal);
      }
    }
  }

  async function send(req: PreparedRequest): Promise<unknown> {
    const { deadline } = req;
    if (!deadline) return sendWithRetries(req, { phase: 'budget' });
    // One signal for the caller's abort and the deadline: every wait and the exchange stop at whichever is first.
    const signal = req.signal ? AbortSignal.any([req.signal, deadline.signal]) : deadline.signal;
    const progress: { phase: 'budget' | 'exchange' } = { phase: 'budget' };
    try {
      return await sendWithRetries({ ...req, signal }, progress);
    } catch (err) {
      if (req.signal?.aborted || !causedBy(err, deadline.signal)) throw err;
      // Still waiting for a token: nothing was sent, the budget is what stopped it (503, like a refused take).
      if (progress.phase === 'budget') throw new UpstreamBudgetError(req.endpoint, 1_000);
      throw new UpstreamTimeoutError(req.endpoint, 'deadline', { cause: err });
    }
  }

  return { send, close: () => agent.close() };
}
