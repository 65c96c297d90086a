/**
 * One sample of the soak: every figure it records, read from the service's processes, Redis, the queues, the
 * simulator, the fake Google and the subscribers. Counters become amounts since the previous sample.
 */
import type { ServiceContext } from '../../src/runtime/context.ts';
import type { FakeGoogle } from '../../testkit/fake-google/index.ts';
import type { ServiceChild } from '../../testkit/processes.ts';
import { metricSum, type QueueDepth, quantile, queueDepth, redisMemory, rssMiB, scrape } from './soak-probes.ts';
import { simulatorControl } from './soak-setup.ts';

/** A sample: CSV column → value (null: not available in this sample). */
export type Row = Record<string, number | string | null>;

/** Where a sample is read from; `children` is updated in place when a worker restarts. */
export interface SampleSources {
  ctx: ServiceContext;
  children: ServiceChild[];
  names: readonly string[];
  simulatorUrl: string;
  fake: FakeGoogle;
  feeds: { statuses: number[]; latencies: number[] };
}

/** Reads every figure of one sample; counters are turned into amounts since the previous sample. */
export class Sampler {
  private readonly last = new Map<string, number>();

  private readonly sources: SampleSources;

  constructor(sources: SampleSources) {
    this.sources = sources;
  }

  /** An amount since the previous sample of a counter; a counter that went down was restarted from 0. */
  private delta(key: string, value: number | null): number | null {
    if (value === null) return null;
    const before = this.last.get(key);
    this.last.set(key, value);
    if (before === undefined) return null;
    return value >= before ? value - before : value;
  }

  async sample(t: number): Promise<Row> {
    const row: Row = { time: new Date().toISOString(), elapsed_s: t };
    const pages = await Promise.all(this.sources.children.map((child) => scrape(`${child.url}/metrics`)));
    for (const [index, child] of this.sources.children.entries()) {
      const name = this.sources.names[index] as string;
      row[`${name}_pid`] = child.pid;
      row[`${name}_rss_mib`] = round(await rssMiB(child.pid));
    }
    row.driver_rss_mib = round(process.memoryUsage().rss / 2 ** 20);
    const redis = await redisMemory(this.sources.ctx.redis);
    row.redis_used_mib = round(redis.used);
    row.redis_rss_mib = round(redis.rss);
    for (const [index, page] of pages.entries()) {
      const lag = metricSum(page, 'timetable_nodejs_eventloop_lag_p99_seconds');
      row[`${this.sources.names[index]}_lag_p99_ms`] = lag === null ? null : round(lag * 1000);
    }
    const depths: Record<string, QueueDepth> = {
      refresh: await queueDepth(this.sources.ctx.queues.refresh),
      push: await queueDepth(this.sources.ctx.queues.pushQueue('google')),
    };
    for (const [queue, depth] of Object.entries(depths)) {
      row[`${queue}_waiting`] = depth.waiting;
      row[`${queue}_active`] = depth.active;
      row[`${queue}_delayed`] = depth.delayed;
      row[`${queue}_kept`] = depth.kept;
    }
    for (const [metric, column] of [
      ['timetable_refresh_duration_seconds_count', 'refresh_done'],
      ['timetable_push_duration_seconds_count', 'push_done'],
    ] as const) {
      let sum = 0;
      for (const [index, page] of pages.entries()) {
        if (index === 0) continue; // the api runs no jobs
        sum += this.delta(`${column}:${this.sources.children[index]?.pid}`, metricSum(page, metric)) ?? 0;
      }
      row[column] = t === 0 ? 0 : sum;
    }
    const statuses = this.sources.feeds.statuses.splice(0);
    const latencies = this.sources.feeds.latencies.splice(0);
    const seconds = this.delta('feed_at', Date.now() / 1000) ?? Number.NaN;
    row.feed_requests = statuses.length;
    row.feed_rps = round(statuses.length / seconds);
    row.feed_p99_ms = round(quantile(latencies, 0.99));
    row.feed_errors = statuses.filter((status) => status === 0 || status >= 500).length;
    row.feed_error_rps = round(row.feed_errors / seconds);
    const google = this.sources.fake.counts();
    row.google_requests = this.delta('google_requests', google.total) ?? 0;
    row.google_writes = this.delta('google_writes', google.writes) ?? 0;
    row.google_faulted = this.delta('google_faulted', google.faulted) ?? 0;
    const stats = (await simulatorControl(this.sources.simulatorUrl, 'GET', '/_sim/stats')) as {
      requests: { total: number };
    };
    row.upstream_requests = this.delta('upstream', stats.requests.total) ?? 0;
    return row;
  }
}

export function round(value: number | null): number | null {
  return value === null || !Number.isFinite(value) ? null : Math.round(value * 10) / 10;
}

export function csvValue(value: number | string | null): string {
  return value === null ? '' : String(value);
}

export function num(row: Row, key: string): number | null {
  const value = row[key];
  return typeof value === 'number' ? value : null;
}
