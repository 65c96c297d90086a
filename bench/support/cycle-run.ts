/**
 * One measured refresh cycle against the running service, shared by the refresh-cycle and scale benchmarks:
 * the simulator's counters are cleared, an admin asks `POST /admin/resync {"all": true}`, simulated
 * subscribers request feeds until every job of the cycle has ended (heard on the queue's event stream, see
 * `job-ends.ts`), and the jobs' ends and the upstream requests become figures.
 */
import { Redis } from 'ioredis';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { rawRequest } from '../../testkit/processes.ts';
import { CpuMeter, processCpu, processCpuSeconds } from './cpu.ts';
import { cycleFigures, type UpstreamRequests } from './cycle-figures.ts';
import { collectJobEnds, type JobEnds } from './job-ends.ts';
import { simulatorControl } from './soak-setup.ts';
import { type ObservedRequest, startSubscribers } from './subscribers.ts';

/** What {@link runCycle} needs. */
export interface CycleOptions {
  ctx: ServiceContext;
  /** The service's Redis: the cycle's job ends are heard on a blocking connection of their own. */
  redisUrl: string;
  simulatorUrl: string;
  apiUrl: string;
  adminToken: string;
  /** Feed paths the subscribers request, one per source. */
  paths: readonly string[];
  sources: number;
  /** UPSTREAM_RATE_LIMIT of the service, requests per second. */
  limit: number;
  /** Feed requests per second of the subscribers during the cycle. */
  subscriberRate: number;
  /** Prefix of every figure's name, e.g. `cycle 1`. */
  label: string;
  /** Service processes whose CPU time the cycle reports, by name (e.g. `api` → its pid). */
  processes?: Record<string, number>;
  /**
   * The workers' pids: their CPU per job is reported, on the event-loop threads apart. While a worker's loop
   * is busy BullMQ starts no job, however much of the machine is idle.
   */
  workerPids?: readonly number[];
}

/** The figures of one cycle, and the few the scale benchmark tabulates. */
export interface CycleResult {
  figures: Record<string, number | string>;
  /** Resync request to drained queue. */
  seconds: number;
  upstreamRequests: number;
  /** 99th percentile of the subscribers' feed request durations (transport errors included). */
  feedP99Ms: number;
  /** CPU cores other processes of the machine used meanwhile: times measured beside a busy neighbour mislead. */
  otherCores: number;
  /** CPU seconds each of {@link CycleOptions.processes} used during the cycle. */
  cpuSeconds: Record<string, number>;
}

/** One measured cycle: resync all, subscribers meanwhile, wait for the drain, then read the counts. */
export async function runCycle(options: CycleOptions): Promise<CycleResult> {
  const blocking = new Redis(options.redisUrl, { maxRetriesPerRequest: null });
  try {
    // Opened before the resync: no job of the cycle can start or end unheard.
    const heard = await collectJobEnds(options.ctx.queues.refresh, options.ctx.redis, blocking);
    try {
      return await measureCycle(options, heard);
    } finally {
      await heard.close();
    }
  } finally {
    blocking.disconnect();
  }
}

async function measureCycle(options: CycleOptions, heard: JobEnds): Promise<CycleResult> {
  const { label } = options;
  await simulatorControl(options.simulatorUrl, 'DELETE', '/_sim/stats');
  const cpu = new CpuMeter();
  await cpu.start();
  const processes = Object.entries(options.processes ?? {});
  const cpuBefore = await Promise.all(processes.map(([, pid]) => processCpuSeconds([pid])));
  const workersBefore = await processCpu(options.workerPids ?? []);
  const requestedAt = Date.now();
  const answer = await rawRequest(`${options.apiUrl}/admin/resync`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${options.adminToken}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ all: true }),
    // Queuing every source's refresh answers only once all are queued.
    timeoutMs: 600_000,
  });
  if (answer.status !== 202)
    throw new Error(`POST /admin/resync answered ${answer.status}: ${answer.body.toString().slice(0, 300)}`);
  const jobIds = (JSON.parse(answer.body.toString()) as { jobs: string[] }).jobs;
  if (new Set(jobIds).size !== options.sources)
    throw new Error(`${label}: the resync queued ${new Set(jobIds).size} distinct jobs for ${options.sources} sources`);
  // Subscribers start once every refresh is queued: a demand before that would be a fetch of its own.
  const latencies: number[] = [];
  const requests: { ms: number; request: ObservedRequest }[] = [];
  const subscribers = startSubscribers({
    apiUrl: options.apiUrl,
    paths: options.paths,
    requestsPerSecond: options.subscriberRate,
    concurrency: 256,
    hotShare: 0.2,
    observe: (_status, ms, request) => {
      latencies.push(ms);
      requests.push({ ms, request });
    },
  });
  const jobs = await heard.waitFor(jobIds, { label, timeoutMs: 1_800_000 }).catch(async (error: unknown) => {
    await subscribers.stop();
    throw error;
  });
  const drainedAt = jobs.reduce((last, job) => Math.max(last, job.finishedOn), 0);
  const seen = await subscribers.stop();
  const used = await cpu.stop();
  const cpuAfter = await Promise.all(processes.map(([, pid]) => processCpuSeconds([pid])));
  const workersAfter = await processCpu(options.workerPids ?? []);
  const perJob = (ms: number) => (ms / jobIds.length).toFixed(1);
  const cpuSeconds = Object.fromEntries(
    processes.map(([name], index) => [name, Number(((cpuAfter[index] ?? 0) - (cpuBefore[index] ?? 0)).toFixed(1))]),
  );
  const stats = (await simulatorControl(options.simulatorUrl, 'GET', '/_sim/stats')) as { requests: UpstreamRequests };
  const feedP99Ms = percentile(latencies, 0.99);
  const published = publishedLatencies(requests);
  return {
    seconds: (drainedAt - requestedAt) / 1000,
    upstreamRequests: stats.requests.total,
    feedP99Ms,
    otherCores: used.others,
    cpuSeconds,
    figures: {
      ...cycleFigures({
        label,
        jobs,
        requests: stats.requests,
        sources: options.sources,
        limit: options.limit,
        requestedAt,
        drainedAt,
      }),
      [`${label} feed requests served`]: seen.requests,
      [`${label} feed answers by status`]:
        Object.entries(seen.byStatus)
          .map(([status, count]) => `${status}: ${count}`)
          .join(', ') + (seen.errors > 0 ? `, errors: ${seen.errors}` : ''),
      [`${label} feed request ms p99`]: Number(feedP99Ms.toFixed(1)),
      [`${label} feed request ms p99 of feeds already published`]: Number(percentile(published, 0.99).toFixed(1)),
      [`${label} feed requests of feeds already published`]: published.length,
      [`${label} requests of the hottest source`]: seen.maxPerSource,
      [`${label} CPU cores used by the benchmark's processes / by other processes`]: `${used.ours} / ${used.others}`,
      ...(options.workerPids === undefined
        ? {}
        : {
            [`${label} worker CPU ms per job: event-loop threads / all threads`]: `${perJob(workersAfter.main - workersBefore.main)} / ${perJob(workersAfter.all - workersBefore.all)}`,
          }),
      ...(processes.length === 0
        ? {}
        : {
            [`${label} CPU seconds by process`]: Object.entries(cpuSeconds)
              .map(([name, seconds]) => `${name} ${seconds}`)
              .join(', '),
          }),
    },
  };
}

/**
 * The durations of the requests sent once their feed was published, whatever they were answered: the goal is
 * that these keep answering quickly while other feeds are published. A feed was published by the earliest
 * Last-Modified any answer for it carried (its publication's time, in whole seconds, so a request counts only
 * from the next second on: none is counted that may have come before). Requests for a feed not yet published
 * wait for its first refresh, and are what the p99 of all requests mostly shows in a first cycle.
 */
export function publishedLatencies(requests: readonly { ms: number; request: ObservedRequest }[]): number[] {
  const publishedAt = new Map<string, number>();
  for (const { request } of requests) {
    if (request.lastModified === undefined) continue;
    const known = publishedAt.get(request.path);
    if (known === undefined || request.lastModified < known) publishedAt.set(request.path, request.lastModified);
  }
  return requests
    .filter(({ request }) => request.sentAt >= (publishedAt.get(request.path) ?? Number.POSITIVE_INFINITY) + 1000)
    .map(({ ms }) => ms);
}

/** The `q` quantile (0–1) of `values`, nearest rank; NaN when empty. */
export function percentile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] as number;
}
