/**
 * Simulated calendar subscribers for the refresh-cycle benchmark: feed requests at a steady rate over random
 * sources, skewed so that a few hot sources have many subscribers and most have a handful. Like calendar
 * apps, they accept gzip and send If-None-Match with the ETag they last saw.
 */
import { rawRequest, sleep } from '../../testkit/processes.ts';

/** Options of {@link startSubscribers}. */
export interface SubscriberOptions {
  apiUrl: string;
  /** Feed paths, e.g. `/feeds/groups/42.ics`. */
  paths: readonly string[];
  requestsPerSecond: number;
  /** Requests in flight at most (a first request for an unpublished feed waits up to ~10 s). */
  concurrency: number;
  /** Share of requests that go to the {@link HOT_SOURCES} first paths. */
  hotShare: number;
  /** Called after each request with its status (0 for a transport error), its duration in ms, and what it asked. */
  observe?: (status: number, ms: number, request: ObservedRequest) => void;
}

/** One request as {@link SubscriberOptions.observe} hears of it. */
export interface ObservedRequest {
  path: string;
  /** When it was sent (epoch ms). */
  sentAt: number;
  /** The answer's Last-Modified (epoch ms), when it had one: when the feed it served was published. */
  lastModified?: number | undefined;
}

/** What the subscribers saw. */
export interface SubscriberReport {
  requests: number;
  byStatus: Record<string, number>;
  /** Requests of the most requested source. */
  maxPerSource: number;
  /** Transport errors (connection refused, reset). */
  errors: number;
}

/** Running subscribers; `stop()` waits for the requests in flight and reports. */
export interface Subscribers {
  stop(): Promise<SubscriberReport>;
}

const HOT_SOURCES = 20;

/** Starts requesting feeds until stopped. */
export function startSubscribers(options: SubscriberOptions): Subscribers {
  const etags = new Map<string, string>();
  const perPath = new Map<string, number>();
  const report: SubscriberReport = { requests: 0, byStatus: {}, maxPerSource: 0, errors: 0 };
  let stopped = false;
  let issued = 0;
  const started = performance.now();
  const pick = (): string => {
    const hot = Math.random() < options.hotShare;
    const index = Math.floor(
      Math.random() * (hot ? Math.min(HOT_SOURCES, options.paths.length) : options.paths.length),
    );
    return options.paths[index] ?? '/';
  };
  const one = async (path: string): Promise<void> => {
    const etag = etags.get(path);
    const headers: Record<string, string> = {
      'Accept-Encoding': 'gzip',
      ...(etag === undefined ? {} : { 'If-None-Match': etag }),
    };
    const sent = performance.now();
    const sentAt = Date.now();
    try {
      const response = await rawRequest(`${options.apiUrl}${path}`, { headers });
      report.byStatus[response.status] = (report.byStatus[response.status] ?? 0) + 1;
      const seen = response.headers.etag;
      if (typeof seen === 'string') etags.set(path, seen);
      const modified = response.headers['last-modified'];
      const lastModified = typeof modified === 'string' ? Date.parse(modified) : Number.NaN;
      options.observe?.(response.status, performance.now() - sent, {
        path,
        sentAt,
        lastModified: Number.isFinite(lastModified) ? lastModified : undefined,
      });
    } catch {
      report.errors += 1;
      options.observe?.(0, performance.now() - sent, { path, sentAt });
    }
  };
  // Each lane issues the next request when it is due (a global schedule at the target rate), so that a slow
  // answer delays only its own lane, and the rate does not pile up beyond what was asked.
  const lane = async (): Promise<void> => {
    while (!stopped) {
      const due = started + (issued * 1000) / options.requestsPerSecond;
      issued += 1;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      if (stopped) break;
      const path = pick();
      perPath.set(path, (perPath.get(path) ?? 0) + 1);
      report.requests += 1;
      await one(path);
    }
  };
  const lanes = Array.from({ length: options.concurrency }, lane);
  return {
    stop: async () => {
      stopped = true;
      await Promise.all(lanes);
      report.maxPerSource = Math.max(0, ...perPath.values());
      return report;
    },
  };
}
