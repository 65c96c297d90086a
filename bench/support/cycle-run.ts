/**
 * One measured refresh cycle against the running service, shared by the refresh-cycle and scale benchmarks:
 * the simulator's counters are cleared, an admin asks `POST /admin/resync {"all": true}`, simulated
 * subscribers request feeds until the refresh queue is drained, and the cycle's jobs and upstream requests
 * are read back into figures.
 */
import type { Job } from 'bullmq';
import type { RefreshJobData, RefreshJobResult } from '../../src/jobs/contract.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { CpuMeter, processCpu, processCpuSeconds } from './cpu.ts';
import { cycleFigures, type UpstreamRequests } from './cycle-figures.ts';
import { rawRequest, sleep } from './processes.ts';
import { simulatorControl } from './soak-setup.ts';
import { startSubscribers } from './subscribers.ts';

/** What {@link runCycle} needs. */
export interface CycleOptions {
  ctx: ServiceContext;
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
  const { ctx, label } = options;
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
  });
  if (answer.status !== 202)
    throw new Error(`POST /admin/resync answered ${answer.status}: ${answer.body.toString().slice(0, 300)}`);
  const jobIds = (JSON.parse(answer.body.toString()) as { jobs: string[] }).jobs;
  if (new Set(jobIds).size !== options.sources)
    throw new Error(`${label}: the resync queued ${new Set(jobIds).size} distinct jobs for ${options.sources} sources`);
  // Subscribers start once every refresh is queued: a demand before that would be a fetch of its own.
  const latencies: number[] = [];
  const subscribers = startSubscribers({
    apiUrl: options.apiUrl,
    paths: options.paths,
    requestsPerSecond: options.subscriberRate,
    concurrency: 256,
    hotShare: 0.2,
    observe: (_status, ms) => latencies.push(ms),
  });
  const drainedAt = await waitForDrain(ctx, jobIds, label).catch(async (error: unknown) => {
    await subscribers.stop();
    throw error;
  });
  const seen = await subscribers.stop();
  const used = await cpu.stop();
  const cpuAfter = await Promise.all(processes.map(([, pid]) => processCpuSeconds([pid])));
  const workersAfter = await processCpu(options.workerPids ?? []);
  const perJob = (ms: number) => (ms / jobIds.length).toFixed(1);
  const cpuSeconds = Object.fromEntries(
    processes.map(([name], index) => [name, Number(((cpuAfter[index] ?? 0) - (cpuBefore[index] ?? 0)).toFixed(1))]),
  );
  const stats = (await simulatorControl(options.simulatorUrl, 'GET', '/_sim/stats')) as { requests: UpstreamRequests };
  const jobs = await readJobs(ctx, jobIds);
  const feedP99Ms = percentile(latencies, 0.99);
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

/** The `q` quantile (0–1) of `values`, nearest rank; NaN when empty. */
export function percentile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] as number;
}

type RefreshJob = Job<RefreshJobData, RefreshJobResult>;

/**
 * Polls the refresh queue until nothing is waiting, delayed or running, and then until every job of the cycle
 * has finished; answers when the last of them finished (its `finishedOn`). Counting finished jobs instead
 * cannot work at scale: the queue keeps a bounded number of them (src/jobs/queues.ts), so at 20,000 sources
 * the count stops short of two cycles' worth and never reaches the mark.
 */
async function waitForDrain(ctx: ServiceContext, ids: readonly string[], label: string): Promise<number> {
  const deadline = Date.now() + 1_800_000;
  for (;;) {
    const counts = await ctx.queues.refresh.getJobCounts(
      'waiting',
      'active',
      'delayed',
      'prioritized',
      'waiting-children',
    );
    const pending = Object.values(counts).reduce((sum, count) => sum + count, 0);
    if (pending === 0) {
      const jobs = await readJobs(ctx, ids);
      if (jobs.every((job) => job.finishedOn !== undefined))
        return jobs.reduce((last, job) => Math.max(last, job.finishedOn ?? 0), 0);
    }
    if (Date.now() > deadline)
      throw new Error(`${label}: the refresh queue did not drain within 30 minutes: ${JSON.stringify(counts)}`);
    await sleep(pending === 0 ? 100 : 500);
  }
}

async function readJobs(ctx: ServiceContext, ids: readonly string[]): Promise<RefreshJob[]> {
  const jobs: RefreshJob[] = [];
  for (let start = 0; start < ids.length; start += 200) {
    const page = await Promise.all(ids.slice(start, start + 200).map((id) => ctx.queues.refresh.getJob(id)));
    for (const [index, job] of page.entries()) {
      if (job === undefined) throw new Error(`job ${ids[start + index] ?? '?'} is gone`);
      jobs.push(job);
    }
  }
  return jobs;
}
