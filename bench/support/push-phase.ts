/**
 * Plumbing of the google-push benchmark: refreshing a source and waiting until its push has run, reading the
 * push jobs a phase ran, and sampling the fake Google's request counter to find the busiest minute.
 */
import type { Job } from 'bullmq';
import type { PushJobData, PushJobResult, RefreshJobResult } from '../../src/jobs/contract.ts';
import { enqueueRefresh } from '../../src/jobs/queues.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import type { SyncCounts } from '../../src/store/push-target-record.ts';
import type { SourceKey } from '../../src/timetable/source.ts';
import type { FakeGoogle, FakeGoogleCounts } from '../../testkit/fake-google/index.ts';
import { sleep } from '../../testkit/processes.ts';

const PENDING = ['waiting', 'active', 'delayed', 'prioritized', 'waiting-children'] as const;

/** Waits until neither the refresh nor the push queue has anything waiting, delayed or running. */
export async function settle(ctx: ServiceContext, timeoutMs = 600_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const [refresh, push] = await Promise.all([
      ctx.queues.refresh.getJobCounts(...PENDING),
      ctx.queues.pushQueue('google').getJobCounts(...PENDING),
    ]);
    const pending = PENDING.reduce((sum, state) => sum + (refresh[state] ?? 0) + (push[state] ?? 0), 0);
    if (pending === 0) return;
    if (Date.now() > deadline)
      throw new Error(`queues did not settle: refresh ${JSON.stringify(refresh)}, push ${JSON.stringify(push)}`);
    await sleep(50);
  }
}

/** Refreshes `source` (an admin resync), waits for the refresh and the pushes it fans out, answers its result. */
export async function refreshAndSettle(ctx: ServiceContext, source: SourceKey): Promise<RefreshJobResult> {
  const id = await enqueueRefresh(ctx.queues, ctx.config, source, {
    reason: 'resync',
    now: Date.now(),
    followUp: true,
  });
  const deadline = Date.now() + 120_000;
  for (;;) {
    const job = await ctx.queues.refresh.getJob(id);
    const state = job ? await job.getState() : 'unknown';
    if (job && state === 'failed') throw new Error(`refresh ${id} failed: ${job.failedReason}`);
    if (job && state === 'completed') {
      await settle(ctx);
      return job.returnvalue;
    }
    if (Date.now() > deadline) throw new Error(`refresh ${id} did not finish within 2 minutes (${state})`);
    await sleep(50);
  }
}

/** A push job that ran, with its outcome. */
export interface PushRun {
  reason: PushJobData['reason'];
  state: 'completed' | 'failed';
  result: PushJobResult | undefined;
  failedReason: string | undefined;
  startedAt: number;
  finishedAt: number;
}

/** The push jobs that finished at or after `since`, oldest first. */
export async function pushRunsSince(ctx: ServiceContext, since: number): Promise<PushRun[]> {
  const runs: PushRun[] = [];
  for (const state of ['completed', 'failed'] as const) {
    const jobs: Job<PushJobData, PushJobResult>[] = await ctx.queues.pushQueue('google').getJobs([state], 0, -1);
    for (const job of jobs) {
      if ((job.finishedOn ?? 0) < since) continue;
      runs.push({
        reason: job.data.reason,
        state,
        result: job.returnvalue ?? undefined,
        failedReason: job.failedReason,
        startedAt: job.processedOn ?? 0,
        finishedAt: job.finishedOn ?? 0,
      });
    }
  }
  return runs.sort((a, b) => a.finishedAt - b.finishedAt);
}

/** The counts of a run that synced (undefined when it was skipped or failed). */
export function syncCounts(
  run: PushRun | undefined,
): (SyncCounts & { reconciled: boolean; durationMs: number }) | undefined {
  const result = run?.result;
  return result === undefined || 'skipped' in result ? undefined : result;
}

/** A push run in a few words: `refresh: 10 patched, 10 writes, 0 reads`. */
export function describeRun(run: PushRun): string {
  const counts = syncCounts(run);
  if (counts === undefined)
    return `${run.reason}: ${run.state}${run.result && 'skipped' in run.result ? ` (skipped: ${run.result.skipped})` : run.failedReason ? ` (${run.failedReason})` : ''}`;
  const done = (['inserted', 'patched', 'revived', 'deleted', 'conflicts', 'refused'] as const)
    .filter((key) => counts[key] > 0)
    .map((key) => `${counts[key]} ${key}`);
  return `${run.reason}: ${[...done, `${counts.writes} writes`, `${counts.reads} reads`].join(', ')}`;
}

/** The fake's counters over a phase: `after − before`. */
export interface CountsDelta {
  total: number;
  writes: number;
  quotaErrors: number;
  byMethod: Record<string, number>;
  errors: Record<string, number>;
}

/** Subtracts two snapshots of the fake's counters. */
export function countsDelta(before: FakeGoogleCounts, after: FakeGoogleCounts): CountsDelta {
  const minus = (a: Partial<Record<string, number>>, b: Partial<Record<string, number>>) =>
    Object.fromEntries(
      Object.entries(a)
        .map(([key, value]) => [key, (value ?? 0) - (b[key] ?? 0)])
        .filter(([, value]) => value !== 0),
    );
  return {
    total: after.total - before.total,
    writes: after.writes - before.writes,
    quotaErrors: after.quotaErrors - before.quotaErrors,
    byMethod: minus(after.byMethod, before.byMethod),
    errors: minus(after.errors, before.errors),
  };
}

/** Every 403 and 429 answer (rate limits, quota, refusals): a paced push should see none. */
export function forbiddenAnswers(delta: CountsDelta): number {
  return Object.entries(delta.errors)
    .filter(([key]) => /^(403|429) /.test(key))
    .reduce((sum, [, n]) => sum + n, 0);
}

/** Samples the fake's request counter every 100 ms, to find the most requests it saw within any 60 s. */
export class RequestSampler {
  private readonly samples: { at: number; total: number }[] = [];
  private timer: NodeJS.Timeout | undefined;
  private readonly fake: FakeGoogle;

  constructor(fake: FakeGoogle) {
    this.fake = fake;
  }

  start(): void {
    const sample = () => this.samples.push({ at: Date.now(), total: this.fake.counts().total });
    sample();
    this.timer = setInterval(sample, 100);
  }

  stop(): void {
    clearInterval(this.timer);
    this.samples.push({ at: Date.now(), total: this.fake.counts().total });
  }

  /** Most requests between two samples at most `windowMs` apart (so within 100 ms of the true figure). */
  maxInWindow(windowMs: number): number {
    let max = 0;
    let first = 0;
    for (const sample of this.samples) {
      while ((this.samples[first]?.at ?? sample.at) < sample.at - windowMs) first += 1;
      max = Math.max(max, sample.total - (this.samples[first]?.total ?? sample.total));
    }
    return max;
  }
}
