/**
 * One attempt of one webhook delivery: the body as it was built, signed for this attempt's time, POSTed through
 * an Agent that refuses internal addresses (unless allowed), without following redirects, within a deadline.
 * What the receiver answered becomes an outcome the delivery job acts on; nothing here retries.
 */
import type { Dispatcher } from 'undici';
import { request } from 'undici';
import { guardedAgent, isAddressRefused, isInternalLiteral } from '../../lib/internal-address.ts';
import { parseRetryAfter } from '../../lib/retry-after.ts';
import { signedHeaders } from './sign.ts';

/** How long one attempt may take, connecting and reading the answer included. */
export const WEBHOOK_TIMEOUT_MS = 15_000;

/** What one attempt came to. */
export type WebhookAttemptOutcome =
  /** A 2xx: delivered. */
  | { kind: 'delivered'; status: number }
  /** 410 Gone: the receiver asks for no more deliveries. */
  | { kind: 'gone'; status: 410 }
  /** Anything else: another status, a timeout, a network error. `retryAfterMs` when the receiver said so. */
  | { kind: 'failed'; status?: number | undefined; error?: string | undefined; retryAfterMs?: number | undefined };

/** One attempt's request. */
export interface DeliveryRequest {
  url: string;
  secret: string;
  /** `webhook-id`: the same on every attempt of one delivery. */
  webhookId: string;
  body: string;
  /** This attempt's time, epoch ms (sent as `webhook-timestamp` in seconds). */
  now: number;
  timeoutMs?: number | undefined;
  signal?: AbortSignal | undefined;
}

/** The HTTP client of webhook deliveries: one guarded Agent per process. */
export class WebhookSender {
  private readonly dispatcher: Dispatcher;
  private readonly allowPrivate: boolean;

  constructor(options: { allowPrivate: boolean; dispatcher?: Dispatcher | undefined }) {
    this.allowPrivate = options.allowPrivate;
    this.dispatcher =
      options.dispatcher ??
      guardedAgent({ allowPrivate: options.allowPrivate, connectMs: 10_000, headersMs: WEBHOOK_TIMEOUT_MS });
  }

  /** POSTs the body once; never throws for what the receiver or the network did (the caller's abort rethrows). */
  async deliver(req: DeliveryRequest): Promise<WebhookAttemptOutcome> {
    let url: URL;
    try {
      url = new URL(req.url);
    } catch {
      return { kind: 'failed', error: 'the URL is not a URL' };
    }
    if (!this.allowPrivate && isInternalLiteral(url)) return { kind: 'failed', error: 'an internal address' };
    const timestamp = Math.floor(req.now / 1000);
    const timeout = AbortSignal.timeout(req.timeoutMs ?? WEBHOOK_TIMEOUT_MS);
    const signal = req.signal ? AbortSignal.any([req.signal, timeout]) : timeout;
    try {
      const res = await request(url, {
        dispatcher: this.dispatcher,
        method: 'POST',
        headers: { ...signedHeaders(req.secret, req.webhookId, timestamp, req.body), 'user-agent': 'timetable-sync' },
        body: req.body,
        signal,
      });
      // The answer's body says nothing we act on; read it off so the connection can be reused.
      await res.body.dump({ limit: 64 * 1024 }).catch(() => undefined);
      const status = res.statusCode;
      if (status >= 200 && status < 300) return { kind: 'delivered', status };
      if (status === 410) return { kind: 'gone', status };
      const retryAfter = res.headers['retry-after'];
      const retryAfterMs = parseRetryAfter(Array.isArray(retryAfter) ? retryAfter[0] : retryAfter, req.now);
      return { kind: 'failed', status, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) };
    } catch (error) {
      if (req.signal?.aborted) throw req.signal.reason;
      if (timeout.aborted)
        return { kind: 'failed', error: `no answer within ${(req.timeoutMs ?? WEBHOOK_TIMEOUT_MS) / 1000} s` };
      if (isAddressRefused(error)) return { kind: 'failed', error: 'resolves to an internal address' };
      return { kind: 'failed', error: errorCode(error) ?? 'network error' };
    }
  }

  async close(): Promise<void> {
    await this.dispatcher.close();
  }
}

function errorCode(error: unknown): string | undefined {
  const code = (value: unknown) => {
    const found = typeof value === 'object' && value !== null ? (value as { code?: unknown }).code : undefined;
    return typeof found === 'string' ? found : undefined;
  };
  return code(error) ?? code((error as { cause?: unknown } | undefined)?.cause);
}

/** How an outcome reads in a hook's log and its disabled reason: `HTTP 500`, `ECONNREFUSED`, … */
export function outcomeText(outcome: WebhookAttemptOutcome): string {
  if (outcome.kind === 'failed' && outcome.status === undefined) return outcome.error ?? 'network error';
  const status = outcome.status ?? 0;
  return status >= 300 && status < 400 ? `HTTP ${status} (redirects are not followed)` : `HTTP ${status}`;
}
