import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { PushKindMetrics } from '../push/adapter.ts';

/** Each channel that is on: 1 while it works, 0 while it is disabled. */
export type ChannelStateSamples = Record<string, 0 | 1>;

/** Queue depth by queue and state, for the gauge. */
export type QueueDepths = Record<string, Record<string, number>>;

/** How full one in-process cache is against its byte budget, for the gauges. */
export interface CacheFill {
  /** Bytes it counts against its budget now. */
  bytes: number;
  /**
   * Its byte budget. The variant cache evicts at it; the feed cache at three quarters of it, the rest being for
   * what keeping feeds costs beyond what it counts (src/serving/feed-cache.ts).
   */
  budgetBytes: number;
  /** Entries it keeps. */
  entries: number;
}

/** The api's feed caches by the gauges' `cache` label: stored feeds, and rendered subscriber variants. */
export type FeedCacheFills = Record<'feeds' | 'variants', CacheFill>;

/** The service's Prometheus metrics, one registry per process (no module singleton). */
export interface Metrics {
  readonly registry: Registry;
  /** Seconds per refresh job, by outcome (`published`, `unchanged`, `awaiting-confirmation`, `failed`). */
  readonly refreshDuration: Histogram<'outcome'>;
  /** Upstream failures by kind (`timeout`, `network`, `http`, `rate-limit`, `not-found`, `auth`, `protocol`). */
  readonly upstreamErrors: Counter<'kind'>;
  /** Feed responses by kind of feed (`group`, `employee`, `personal`) and status (200, 304, 404, 503, …). */
  readonly feedsServed: Counter<'kind' | 'status'>;
  /**
   * Google push: seconds per job by outcome (`synced`, `skipped`, `rate-limited`, `paused`, `needs-consent`,
   * `calendar-deleted`, `failed`), Calendar write calls by operation (`insert`, `patch`, `revive`, `delete`),
   * failures by kind (`rate-limit`, `quota`, `consent`, `calendar-gone`, `transient`, `permanent`).
   */
  readonly googlePush: PushKindMetrics;
  /**
   * CalDAV push: seconds per job by outcome (as Google's, `needs-password` for `needs-consent`), write requests
   * by operation (`create`, `update`, `delete`), failures by kind (`rate-limit`, `auth`, `forbidden`, `quota`,
   * `calendar-gone`, `transient`, `permanent`).
   */
  readonly caldavPush: PushKindMetrics;
  /**
   * The background refresh budget per second the freshness pacer spends (set by the leading pacer; 0 in the
   * other processes, so that the sum over processes is the deployment's budget).
   */
  readonly refreshBudget: Gauge;
  /** Background refreshes spent, by why: `rotation`, `parked` (a parked source's longest wait), `related`. */
  readonly backgroundRefreshes: Counter<'why'>;
  /**
   * Change messages of the channels that tell people (`telegram`, `max`, `email`), by how they ended: `sent`,
   * `gone` (the address unsubscribed for good), `dropped` (refused for good), `failed` (retried),
   * `rate-limited` (waited out), `misconfigured` (the channel refused our credentials: waits, disabled).
   */
  readonly channelMessages: Counter<'channel' | 'outcome'>;
  /** Where the channel state gauge reads each channel that is on: 1 working, 0 disabled (plugged in by the routes). */
  setChannelStates(read: () => Promise<ChannelStateSamples>): void;
  /** Where gauges read their values at scrape time; roles plug in what they have. */
  setQueueDepths(read: () => Promise<QueueDepths>): void;
  setStaleSources(read: () => Promise<number>): void;
  /** Sources the freshness planner has parked (explained by other sources). */
  setParkedSources(read: () => Promise<number>): void;
  /** Plugged in by an api's feed routes only: a process without them exposes no feed cache samples. */
  setFeedCaches(read: () => FeedCacheFills): void;
}

/** Creates the metrics with Node's default process metrics. */
export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'timetable_' });
  const readers: Readers = {};
  const feedsServed = new Counter({
    name: 'timetable_feeds_served_total',
    help: 'Feed responses by feed kind and HTTP status',
    labelNames: ['kind', 'status'] as const,
    registers: [registry],
  });
  notModifiedRatio(registry, feedsServed);
  feedCacheGauges(registry, readers);
  new Gauge({
    name: 'timetable_queue_jobs',
    help: 'Jobs per queue and state',
    labelNames: ['queue', 'state'] as const,
    registers: [registry],
    async collect() {
      if (!readers.depths) return;
      this.reset();
      for (const [queue, states] of Object.entries(await readers.depths())) {
        for (const [state, count] of Object.entries(states)) this.set({ queue, state }, count);
      }
    },
  });
  new Gauge({
    name: 'timetable_stale_sources',
    help: 'Sources whose feed serves old data after failed refreshes',
    registers: [registry],
    async collect() {
      if (readers.stale) this.set(await readers.stale());
    },
  });
  new Gauge({
    name: 'tts_sources_parked',
    help: 'Active sources parked by the freshness planner: explained by other sources, refreshed on their changes',
    registers: [registry],
    async collect() {
      if (readers.parked) this.set(await readers.parked());
    },
  });
  new Gauge({
    name: 'tts_channel_state',
    help:
      'Each notification channel that is configured: 1 while it sends, 0 while it is disabled because it refuses ' +
      'our credentials (GET /admin/channels says why)',
    labelNames: ['channel'] as const,
    registers: [registry],
    async collect() {
      if (!readers.channels) return;
      this.reset();
      for (const [channel, value] of Object.entries(await readers.channels())) this.set({ channel }, value);
    },
  });
  return {
    registry,
    channelMessages: new Counter({
      name: 'tts_channel_messages_total',
      help:
        'Change messages of the channels that tell people, by channel and how they ended: sent, gone (address ' +
        'unsubscribed), dropped (refused for good), failed (retried), rate-limited, misconfigured (channel disabled)',
      labelNames: ['channel', 'outcome'] as const,
      registers: [registry],
    }),
    refreshBudget: new Gauge({
      name: 'tts_refresh_budget_per_second',
      help:
        'Background refreshes per second the freshness pacer spends: min(active sources / REFRESH_INTERVAL, ' +
        '0.9 × UPSTREAM_RATE_LIMIT); set by the leading worker, 0 in the others',
      registers: [registry],
    }),
    backgroundRefreshes: new Counter({
      name: 'tts_background_refreshes_total',
      help:
        'Background refreshes spent from the budget, by why: rotation, parked (longest wait) and overdue (its ' +
        'deadline near) counted when the pacer queues them, related (a change) when its fetch starts',
      labelNames: ['why'] as const,
      registers: [registry],
    }),
    refreshDuration: new Histogram({
      name: 'timetable_refresh_duration_seconds',
      help: 'Duration of refresh jobs by outcome',
      labelNames: ['outcome'] as const,
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    upstreamErrors: new Counter({
      name: 'timetable_upstream_errors_total',
      help: 'University API failures by kind',
      labelNames: ['kind'] as const,
      registers: [registry],
    }),
    feedsServed,
    // Google's series came first and keep their names; a kind added later is named after itself throughout.
    googlePush: pushKindMetrics(registry, {
      duration: 'timetable_push_duration_seconds',
      writes: 'timetable_google_writes_total',
      errors: 'timetable_google_errors_total',
      what: ['Google push jobs', 'Google Calendar write calls', 'Google API failures'],
    }),
    caldavPush: pushKindMetrics(registry, {
      duration: 'timetable_caldav_push_duration_seconds',
      writes: 'timetable_caldav_writes_total',
      errors: 'timetable_caldav_errors_total',
      what: ['CalDAV push jobs', 'CalDAV write requests', 'CalDAV failures'],
    }),
    setQueueDepths: (read) => {
      readers.depths = read;
    },
    setStaleSources: (read) => {
      readers.stale = read;
    },
    setParkedSources: (read) => {
      readers.parked = read;
    },
    setFeedCaches: (read) => {
      readers.caches = read;
    },
    setChannelStates: (read) => {
      readers.channels = read;
    },
  };
}

/** Where the gauges read their values at scrape time, once a role has plugged them in. */
interface Readers {
  depths?: () => Promise<QueueDepths>;
  stale?: () => Promise<number>;
  parked?: () => Promise<number>;
  caches?: () => FeedCacheFills;
  channels?: () => Promise<ChannelStateSamples>;
}

/**
 * How full the api's feed caches are, one sample per cache, read from memory at scrape time: operators see
 * the caches fill against their budgets (and a budget too small for the feeds served, as bytes pinned where
 * eviction starts: three quarters of it for feeds, all of it for variants).
 */
function feedCacheGauges(registry: Registry, readers: Readers): void {
  const gauge = (name: string, help: string, value: (fill: CacheFill) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['cache'] as const,
      registers: [registry],
      collect() {
        const fills = readers.caches?.();
        if (fills === undefined) return;
        for (const [cache, fill] of Object.entries(fills)) this.set({ cache }, value(fill));
      },
    });
  gauge(
    'timetable_feed_cache_bytes',
    'Bytes an api feed cache counts against its budget now: every form kept (gzip, identity, brotli) plus a ' +
      'fixed overhead per entry; cache="feeds" for stored feeds, "variants" for rendered subscriber variants',
    (fill) => fill.bytes,
  );
  gauge(
    'timetable_feed_cache_budget_bytes',
    'Byte budget of an api feed cache (feeds: FEED_CACHE_MB in bytes, of which it fills three quarters and then ' +
      'evicts its least recently served entries; variants: evicted at the budget)',
    (fill) => fill.budgetBytes,
  );
  gauge(
    'timetable_feed_cache_entries',
    'Entries an api feed cache keeps (feeds: trusted and last good copies alike; variants: also capped by count)',
    (fill) => fill.entries,
  );
}

/** The 304 share, computed at scrape time from the feed counter. */
function notModifiedRatio(registry: Registry, feedsServed: Counter<'kind' | 'status'>): void {
  new Gauge({
    name: 'timetable_feed_not_modified_ratio',
    help: 'Share of successful feed responses answered 304 Not Modified since the process started',
    registers: [registry],
    async collect() {
      const values = (await feedsServed.get()).values;
      const count = (status: string) =>
        values.filter((value) => String(value.labels.status) === status).reduce((sum, value) => sum + value.value, 0);
      const ok = count('200');
      const notModified = count('304');
      this.set(ok + notModified === 0 ? 0 : notModified / (ok + notModified));
    },
  });
}

/** The names of one push kind's series, and what each counts (for their help texts). */
interface PushKindSeries {
  duration: string;
  writes: string;
  errors: string;
  what: readonly [jobs: string, writes: string, failures: string];
}

/** One push kind's series, registered in `registry`. */
function pushKindMetrics(registry: Registry, series: PushKindSeries): PushKindMetrics {
  const [jobs, writes, failures] = series.what;
  return {
    duration: new Histogram({
      name: series.duration,
      help: `Duration of ${jobs} by outcome`,
      labelNames: ['outcome'] as const,
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
      registers: [registry],
    }),
    writes: new Counter({
      name: series.writes,
      help: `${writes} by operation`,
      labelNames: ['operation'] as const,
      registers: [registry],
    }),
    errors: new Counter({
      name: series.errors,
      help: `${failures} by kind`,
      labelNames: ['kind'] as const,
      registers: [registry],
    }),
  };
}
