/**
 * Scheduling. With `REFRESH_POLICY=fixed`: one BullMQ job scheduler per active source (a tick that asks for a
 * deduplicated refresh), all created and removed by the one reconciler, never by request handlers (concurrent
 * upserts of job schedulers from many processes are a known source of duplicates). With `adaptive`: no tick
 * schedulers; the reconciler keeps the freshness planner's sources equal to the active ones, and the pacer
 * (freshness-pacer.ts) queues the background refreshes.
 */
import { createHash } from 'node:crypto';
import type { Job, Processor } from 'bullmq';
import type { Config } from '../config.ts';
import { tryLock, tryWithLock } from '../lib/redis-lock.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import type { Logger } from '../logger.ts';
import type { NotifyServices } from '../notify/notify-services.ts';
import type { PushKindTargets } from '../push/adapter.ts';
import type { FreshnessStore } from '../store/freshness-store.ts';
import type { RedisKeys } from '../store/keys.ts';
import type { TargetKind } from '../store/push-target-record.ts';
import type { SourceRegistry } from '../store/registry.ts';
import type { SourceRelations } from '../store/source-relations.ts';
import { type SourceKey, sourceToken } from '../timetable/source.ts';
import {
  RECONCILE_EVERY_MS,
  RECONCILE_SCHEDULER_ID,
  SCHEDULE_JOB,
  type TickJobData,
  tickSchedulerId,
} from './contract.ts';
import { unparkDependents } from './freshness-unpark.ts';
import { enqueuePush, enqueueRefresh, type Queues } from './queues.ts';
import { syncTermStarts, type TermStartsDeps } from './term-starts.ts';

/** What {@link ensureReconcileScheduler} uses: the schedule queue, and a lock on the connection. */
export interface ReconcileSchedulerDeps {
  readonly redis: RedisClient;
  readonly keys: RedisKeys;
  readonly queues: Queues;
}

/** A calendar kind as the scheduler sees it: targets it reads and reschedules, and their reconcile interval. */
export type DueKind = PushKindTargets<'due' | 'get' | 'requestReconcile' | 'scheduleReconcile' | 'anyForSource'> & {
  readonly reconcileIntervalMs: number;
};

/**
 * What the schedule processor uses: the registry of active sources, the queues, the push targets of every
 * calendar kind whose reconcile comes due, and the term starts it keeps in force.
 */
export type ScheduleDeps = ReconcileSchedulerDeps &
  TermStartsDeps & {
    readonly config: Pick<Config, 'refreshIntervalMs' | 'inactiveAfterMs' | 'refreshPolicy'>;
    /** The freshness planner, whose sources the reconciler keeps equal to the active ones (adaptive policy). */
    readonly freshness: Pick<FreshnessStore, 'sync' | 'size' | 'unpark' | 'parkedByGroups'>;
    /** A group's students, unparked when the group leaves the planner. */
    readonly relations: Pick<SourceRelations, 'members'>;
    readonly logger: Logger;
    readonly registry: Pick<
      SourceRegistry,
      'isActive' | 'allActiveSources' | 'requestedBefore' | 'deactivate' | 'activeSinceOf'
    >;
    /** The calendar kinds pushed to (runtime/push-kinds.ts). */
    readonly pushKinds: readonly DueKind[];
    /** A source someone is told the changes of (a Telegram chat, a webhook) stays active like one pushed to. */
    readonly notify: Pick<NotifyServices, 'hasSubscribers'>;
  };

/** What one reconciliation did. */
export interface ReconcileResult {
  deactivated: number;
  created: number;
  updated: number;
  removed: number;
  /** Sources the freshness planner gained and lost (adaptive policy; a switch to `fixed` drops them all). */
  planned: { added: number; removed: number };
  /** Push targets whose periodic reconcile was due and got a push job, by calendar kind. */
  pushes: Record<TargetKind, number>;
  skipped?: 'another reconciler is running';
}

/**
 * A source's refresh interval: `REFRESH_INTERVAL` ±25%, fixed per source (derived from its key), so that
 * sources spread over the interval instead of refreshing in waves, and reconciling never reschedules them.
 */
export function intervalFor(source: SourceKey, refreshIntervalMs: number): number {
  const unit = createHash('sha1').update(source).digest().readUInt32BE(0) / 0x1_0000_0000;
  return Math.round(refreshIntervalMs * (0.75 + 0.5 * unit));
}

/** Processor of the schedule queue: ticks and reconciliations. */
export function scheduleProcessor(ctx: ScheduleDeps): Processor<TickJobData | Record<string, never>, unknown> {
  return async (job) => {
    if (job.name === SCHEDULE_JOB.reconcile) return reconcile(ctx);
    const { source } = (job as Job<TickJobData>).data;
    // A tick can outlive its source by up to one reconciliation.
    if (!(await ctx.registry.isActive(source))) return { skipped: 'inactive' };
    return { job: await enqueueRefresh(ctx.queues, ctx.config, source, { reason: 'schedule', now: ctx.now() }) };
  };
}

/**
 * Deactivates sources nobody asked for within `INACTIVE_AFTER` (unless something pushes from them), makes the
 * tick schedulers and the freshness planner match the active sources and this process's `REFRESH_POLICY`
 * exactly (warning when it finds the other policy's), and queues the push targets' due reconciles. One
 * reconciler runs at a time (a Redis lock).
 */
export async function reconcile(ctx: ScheduleDeps): Promise<ReconcileResult> {
  const reconciled = await tryWithLock(ctx.redis, ctx.keys.lock('reconcile'), RECONCILE_LOCK_MS, async (renew) => {
    const deactivated = await deactivateIdle(ctx);
    const [active, existing] = await Promise.all([ctx.registry.allActiveSources(), existingSchedulers(ctx)]);
    const desired = desiredSchedulers(ctx, active);
    const pushes: Record<TargetKind, number> = {};
    const otherPolicy = await otherPolicyFound(ctx, existing);
    const planned = await syncPlanner(ctx, active);
    const result = { deactivated, created: 0, updated: 0, removed: 0, planned, pushes };
    // BullMQ fires ticks by the wall clock, not by the service's clock (tests set that to a fixed day): a start
    // computed from a clock behind the wall clock is in the past, and the first tick would fire at once.
    const wallNow = Date.now();
    for (const [id, { source, every }] of desired) {
      if (existing.has(id) && existing.get(id) === every) continue;
      // The first tick comes one interval from now: a new source was just fetched on demand.
      await ctx.queues.schedule.upsertJobScheduler(
        id,
        { every, startDate: wallNow + every },
        { name: SCHEDULE_JOB.tick, data: { source }, opts: { removeOnComplete: true, removeOnFail: 100 } },
      );
      if (existing.has(id)) result.updated += 1;
      else result.created += 1;
      await renew();
    }
    for (const id of existing.keys()) {
      if (desired.has(id)) continue;
      await ctx.queues.schedule.removeJobScheduler(id);
      result.removed += 1;
    }
    for (const kind of ctx.pushKinds) pushes[kind.kind] = await enqueueDuePushes(ctx, renew, kind);
    // Catches a change of the counts whose own sync failed (e.g. Redis went away right after a removal).
    await syncTermStarts(ctx, ctx.logger);
    if (result.created + result.updated + result.removed + deactivated + planned.added + planned.removed > 0)
      ctx.logger.info({ ...result, active: active.length }, 'job schedulers reconciled');
    if (otherPolicy !== undefined) warnOtherPolicy(ctx, otherPolicy, result);
    return result;
  });
  return (
    reconciled ?? {
      deactivated: 0,
      created: 0,
      updated: 0,
      removed: 0,
      planned: { added: 0, removed: 0 },
      pushes: {},
      skipped: 'another reconciler is running',
    }
  );
}

/** Push targets whose reconcile is due, handled per reconciler run (the rest wait one minute). */
const DUE_TARGETS_PER_RUN = 500;
/** Due targets handled concurrently. */
const DUE_BATCH_SIZE = 50;

/**
 * Queues a reconciling push for every target of one kind whose periodic reconcile is due, and moves its next
 * one a full interval away, so that a target is not queued again every minute while its push waits or fails.
 */
async function enqueueDuePushes(
  ctx: Pick<ScheduleDeps, 'now' | 'queues'>,
  keepLock: () => Promise<unknown>,
  { kind, targets, reconcileIntervalMs }: DueKind,
): Promise<number> {
  const now = ctx.now();
  const due = await targets.due(now, DUE_TARGETS_PER_RUN);
  let queued = 0;
  for (let start = 0; start < due.length; start += DUE_BATCH_SIZE) {
    const batch = await Promise.all(
      due.slice(start, start + DUE_BATCH_SIZE).map(async (id) => {
        const target = await targets.get(id);
        if (target === undefined) return 0;
        await targets.requestReconcile(id);
        await targets.scheduleReconcile(id, now + reconcileIntervalMs);
        await enqueuePush(ctx.queues, kind, id, target.source, 'reconcile');
        return 1;
      }),
    );
    queued += batch.reduce<number>((sum, n) => sum + n, 0);
    await keepLock();
  }
  return queued;
}

/** How long the reconciler's lock lives without being extended (it is extended after every upsert). */
const RECONCILE_LOCK_MS = 120_000;

/** The tick schedulers the active sources should have, by scheduler id: none with the adaptive policy. */
function desiredSchedulers(
  ctx: ScheduleDeps,
  sources: readonly SourceKey[],
): Map<string, { source: SourceKey; every: number }> {
  if (ctx.config.refreshPolicy === 'adaptive') return new Map();
  return new Map(
    sources.map((source) => [
      tickSchedulerId(sourceToken(source)),
      { source, every: intervalFor(source, ctx.config.refreshIntervalMs) },
    ]),
  );
}

/**
 * Makes the freshness planner's sources the active ones (adaptive policy): a new one comes first somewhere
 * within one interval, one gone is forgotten, and what a gone group explained is unparked. With the fixed policy
 * the planner has no sources.
 */
async function syncPlanner(
  ctx: Pick<ScheduleDeps, 'config' | 'freshness' | 'relations' | 'registry' | 'now'>,
  active: readonly SourceKey[],
): Promise<{ added: number; removed: number }> {
  if (ctx.config.refreshPolicy === 'adaptive') {
    const activatedAt = (sources: readonly SourceKey[]) => ctx.registry.activeSinceOf(sources);
    const { added, removed } = await ctx.freshness.sync(active, ctx.now(), ctx.config.refreshIntervalMs, activatedAt);
    await unparkDependents(ctx, removed);
    return { added, removed: removed.length };
  }
  if ((await ctx.freshness.size()) === 0) return { added: 0, removed: 0 };
  const { added, removed } = await ctx.freshness.sync([], ctx.now(), ctx.config.refreshIntervalMs);
  return { added, removed: removed.length };
}

/** What the other policy left that this reconcile undoes: tick schedulers (adaptive) or planned sources (fixed). */
interface OtherPolicyArtefacts {
  ticks: number;
  planned: number;
}

/** The other policy's artefacts, read before this reconcile undoes them; undefined when there are none. */
async function otherPolicyFound(
  ctx: Pick<ScheduleDeps, 'config' | 'freshness'>,
  existing: ReadonlyMap<string, unknown>,
): Promise<OtherPolicyArtefacts | undefined> {
  if (ctx.config.refreshPolicy === 'adaptive')
    return existing.size > 0 ? { ticks: existing.size, planned: 0 } : undefined;
  const planned = await ctx.freshness.size();
  return planned > 0 ? { ticks: 0, planned } : undefined;
}

/**
 * One warning per reconcile that found the other policy's artefacts. After a switch of `REFRESH_POLICY` it
 * comes once; every minute, it means processes run different policies (a rolling switch, an older release
 * beside a newer one), each reconcile undoes the other's, and ticks and the pacer both spend the upstream.
 */
function warnOtherPolicy(
  ctx: Pick<ScheduleDeps, 'config' | 'logger'>,
  found: OtherPolicyArtefacts,
  result: ReconcileResult,
): void {
  const policy = ctx.config.refreshPolicy;
  ctx.logger.warn(
    { policy, foundTicks: found.ticks, foundPlanned: found.planned, removed: result.removed, planned: result.planned },
    `undid the other REFRESH_POLICY's work (this process runs ${policy}): once after a switch; every minute, processes run different policies`,
  );
}

/** The tick schedulers that exist, with their intervals. */
async function existingSchedulers(ctx: ScheduleDeps): Promise<Map<string, number | undefined>> {
  const existing = new Map<string, number | undefined>();
  for (let start = 0; ; start += 1000) {
    const page = await ctx.queues.schedule.getJobSchedulers(start, start + 999, true);
    for (const scheduler of page)
      if (scheduler.key !== RECONCILE_SCHEDULER_ID) existing.set(scheduler.key, scheduler.every);
    if (page.length < 1000) return existing;
  }
}

async function deactivateIdle(ctx: ScheduleDeps): Promise<number> {
  const idle = await ctx.registry.requestedBefore(ctx.now() - ctx.config.inactiveAfterMs);
  let count = 0;
  for (const source of idle) {
    if ((await pushedFrom(ctx, source)) || (await ctx.notify.hasSubscribers(source))) continue;
    await ctx.registry.deactivate(source);
    count += 1;
  }
  return count;
}

/** Whether a push target of any kind pushes from `source` (which then stays active). */
async function pushedFrom(ctx: Pick<ScheduleDeps, 'pushKinds'>, source: SourceKey): Promise<boolean> {
  for (const { targets } of ctx.pushKinds) if (await targets.anyForSource(source)) return true;
  return false;
}

/**
 * Makes sure the reconciler's own scheduler exists. Every worker calls this at start; a lock lets one of them
 * upsert, and an existing scheduler with the right interval is left alone.
 */
export async function ensureReconcileScheduler(ctx: ReconcileSchedulerDeps): Promise<void> {
  const existing = await ctx.queues.schedule.getJobScheduler(RECONCILE_SCHEDULER_ID);
  if (existing?.every === RECONCILE_EVERY_MS) return;
  if (!(await tryLock(ctx.redis, ctx.keys.lock('reconcile-scheduler'), '1', 30_000))) return;
  await ctx.queues.schedule.upsertJobScheduler(
    RECONCILE_SCHEDULER_ID,
    { every: RECONCILE_EVERY_MS },
    { name: SCHEDULE_JOB.reconcile, data: {}, opts: { removeOnComplete: true, removeOnFail: 100 } },
  );
}
