/** The figures of one measured refresh cycle, from its jobs and the simulator's request counters. */

import { median } from '../../testkit/processes.ts';
import type { JobEnd } from './job-ends.ts';

/** The simulator's `GET /_sim/stats` request counters. */
export type UpstreamRequests = { total: number; byEndpoint: Record<string, number> };

/** What one cycle left behind. */
export interface CycleData {
  label: string;
  jobs: readonly JobEnd[];
  requests: UpstreamRequests;
  sources: number;
  /** UPSTREAM_RATE_LIMIT, requests per second. */
  limit: number;
  requestedAt: number;
  drainedAt: number;
}

/** The figures of one cycle, every name prefixed with the cycle's label. */
export function cycleFigures({
  label,
  jobs,
  requests,
  sources,
  limit,
  requestedAt,
  drainedAt,
}: CycleData): Record<string, number | string> {
  const starts = jobs.map((job) => job.processedOn).sort((a, b) => a - b);
  const ends = jobs.map((job) => job.finishedOn);
  const first = starts[0] ?? Number.NaN;
  const last = starts[starts.length - 1] ?? Number.NaN;
  const lastEnd = Math.max(...ends);
  const perSecond = fetchesPerSecond(starts);
  const meanPerSecond = perSecond.reduce((sum, count) => sum + count, 0) / perSecond.length;
  const firstToLast = requests.total / ((last - first) / 1000);
  const outcomes = new Map<string, number>();
  for (const job of jobs) {
    const outcome = job.outcome ?? `failed (${job.failedReason})`;
    outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
  }
  const durations = jobs.map((job) => job.finishedOn - job.processedOn).sort((a, b) => a - b);
  return {
    [`${label} upstream requests`]: requests.total,
    [`${label} upstream requests by endpoint`]: Object.entries(requests.byEndpoint)
      .filter(([, count]) => count > 0)
      .map(([name, count]) => `${name}: ${count}`)
      .join(', '),
    [`${label} upstream requests per source`]: (requests.total / sources).toFixed(2),
    [`${label} exactly one request per source`]:
      requests.total === sources && new Set(jobs.map((job) => job.id)).size === sources ? 'yes' : 'no',
    [`${label} job outcomes`]: [...outcomes].map(([outcome, count]) => `${outcome}: ${count}`).join(', '),
    [`${label} fetch rate req/s (mean over whole seconds)`]: Number(meanPerSecond.toFixed(1)),
    [`${label} rate / limit`]: Number((meanPerSecond / limit).toFixed(3)),
    [`${label} fetch rate req/s (requests / first-to-last job start)`]: Number(firstToLast.toFixed(1)),
    [`${label} whole-cycle rate req/s (resync request to last job end)`]: Number(
      (requests.total / ((lastEnd - requestedAt) / 1000)).toFixed(1),
    ),
    [`${label} median fetches per whole second`]: median(perSecond),
    [`${label} most fetches in any sliding 1 s`]: busiestSecond(starts),
    [`${label} seconds (resync request to drained)`]: Number(((drainedAt - requestedAt) / 1000).toFixed(2)),
    [`${label} job ms median / p95 / max`]: [0.5, 0.95, 1]
      .map((q) => Math.round(durations[Math.min(durations.length - 1, Math.floor(q * durations.length))] ?? Number.NaN))
      .join(' / '),
  };
}

/**
 * The most job starts within any 1,000 ms: BullMQ's limiter counts fixed windows, each opened by its first
 * job, so the tail of one window's burst and the head of the next can fall within one sliding second.
 */
function busiestSecond(starts: readonly number[]): number {
  let most = 0;
  let from = 0;
  for (let to = 0; to < starts.length; to += 1) {
    while ((starts[to] ?? 0) - (starts[from] ?? 0) >= 1000) from += 1;
    most = Math.max(most, to - from + 1);
  }
  return most;
}

/** Job starts per second, over the whole seconds between the first and the last start. */
function fetchesPerSecond(starts: readonly number[]): number[] {
  const first = starts[0] ?? 0;
  const seconds = Math.floor(((starts[starts.length - 1] ?? first) - first) / 1000);
  const bins = new Array<number>(Math.max(1, seconds)).fill(0);
  for (const start of starts) {
    const bin = Math.floor((start - first) / 1000);
    if (bin < bins.length) bins[bin] = (bins[bin] ?? 0) + 1;
  }
  return bins;
}
