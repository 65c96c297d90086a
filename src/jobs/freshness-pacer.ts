/**
 * The freshness pacer (docs/design.md#freshness): one leader over every worker process, under a Redis lease
 * it renews, queues the background refreshes a few times a second. It spends the background budget
 * B = min(active sources / REFRESH_INTERVAL, 0.9 × UPSTREAM_RATE_LIMIT) per second on what the background
 * fetches: the refresh jobs count each `schedule` and `related` fetch as it starts (freshness store), and the
 * pacer's spend is what that count grew by, so a related refresh is charged when it runs (not when asked, nor
 * when its ask was merged into a job already waiting). Work already waiting in the refresh queue is spent
 * before it is queued again. Each step queues first every source due by its deadline (the wait guarantee, with
 * a margin: see {@link deadlineLead}), then those of lowest next refresh, as `schedule` refreshes; the rotation
 * holds back while the refresh queue already holds a couple of seconds of background work, so that an upstream
 * outage does not pile jobs up (overdue sources are still queued, once each per interval, as the fixed ticks
 * were). The upstream rate limit itself stays the refresh queue's limiter's and the token bucket's: the pacer
 * only decides what the background asks for.
 *
 * Every worker process runs a pacer; the others try to take the lease every third of its lifetime, so a dead
 * leader is replaced within one lease.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Counter, Gauge } from 'prom-client';
import type { Config } from '../config.ts';
import { withDeadline } from '../lib/deadline.ts';
import { RedisUnavailableError } from '../lib/errors.ts';
import { redisFailure } from '../lib/redis-failure.ts';
import { extendLock, lockOwner, releaseLock, tryLock } from '../lib/redis-lock.ts';
import type { RedisOutageLog } from '../lib/redis-outage.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import type { Logger } from '../logger.ts';
import type { FreshnessStore, TakeTiming } from '../store/freshness-store.ts';
import type { RedisKeys } from '../store/keys.ts';
import { enqueueRefresh, type Queues, REFRESH_PRIORITY } from './queues.ts';

/** Why a background refresh was spent, as the metric labels it. */
export type BackgroundWhy = 'rotation' | 'parked' | 'overdue' | 'related';

/** What the pacer uses. */
export interface PacerDeps {
  readonly config: Pick<Config, 'refreshIntervalMs' | 'upstreamRateLimit' | 'refreshAttempts' | 'refreshBackoffMs'>;
  readonly redis: RedisClient;
  readonly keys: Pick<RedisKeys, 'lock'>;
  readonly freshness: Pick<FreshnessStore, 'size' | 'take' | 'settle' | 'backgroundFetches'>;
  readonly queues: Queues;
  readonly logger: Logger;
  readonly redisOutage: Pick<RedisOutageLog, 'failed' | 'restored'>;
  readonly metrics: {
    readonly refreshBudget: Pick<Gauge, 'set'>;
    readonly backgroundRefreshes: Pick<Counter<'why'>, 'inc'>;
  };
  /** The service clock (epoch ms): deadlines and plans are in it. */
  readonly now: () => number;
}

/** Tuning that tests shorten; production uses the defaults. */
export interface PacerTuning {
  /** Time between two steps (default 250 ms). */
  stepMs?: number;
  /** The leader's lease (default 10 s): a dead leader is replaced within about this long. */
  lockMs?: number;
}

/** Share of the upstream rate limit the background may spend; the rest is the reserve for people waiting. */
export const BACKGROUND_SHARE = 0.9;
/** Credit kept at most, in seconds of budget: a pause (held back, a slow step) is not made up in one burst. */
const CARRY_S = 2;
/**
 * Debt kept at most, in intervals of budget: a storm of related refreshes (or overdue sources beyond the budget)
 * pauses the rotation until what it cost is repaid, up to one interval's worth of B (the wait guarantee still
 * queues overdue sources meanwhile); only a storm beyond that is forgiven.
 */
const DEBT_INTERVALS = 1;
/**
 * A source taken whose refresh was never queued (the process died mid-step, the queue failed) is due again this
 * long after: the provisional mark the take gives it. Once queued, it is settled one interval away.
 */
export const RETAKE_MS = 30_000;
/** Background work the refresh queue may hold, in seconds of budget, before the pacer holds back. */
const HOLD_S = 2;
/** ...but at least this many jobs, so that a small budget can queue at all. */
const HOLD_MIN = 2;
/**
 * Overdue sources queued at most per step, whatever the credit and the backlog: the wait guarantee goes first,
 * as the fixed ticks did (each source is in the queue once at most, and taken again only an interval later).
 * The bound only spreads a crowd (every source overdue after a long Redis outage) over a few seconds.
 */
export const OVERDUE_PER_STEP = 50;
const DEFAULT_STEP_MS = 250;

/**
 * How long before its deadline a source is queued at the latest: max(5 s, REFRESH_INTERVAL / 20). The deadline
 * promises the next refresh *runs* within an interval, and a refresh queued at its deadline would start late by
 * whatever waits ahead of it. Overdue refreshes go at the related priority, behind the related refreshes queued
 * before them and the background the rotation holds (two seconds' worth), and a step comes every quarter
 * second: 5 s covers that at any scale; a twentieth of the interval (90 s at 30 min) also covers a backlog of
 * related refreshes from a large change (810 at 9/s). It costs: with nothing parked and no source worth more
 * than its deadline, every source is refreshed every interval less the lead, at most 1/(1 − 1/20) ≈ 5.3 % above
 * B (more at intervals under 100 s, where 5 s is more than a twentieth).
 */
export function deadlineLead(config: Pick<Config, 'refreshIntervalMs'>): number {
  return Math.max(5_000, config.refreshIntervalMs / 20);
}

const DEFAULT_LOCK_MS = 10_000;

/** The background budget, refreshes per second, for `active` sources. */
export function backgroundBudget(
  active: number,
  config: Pick<Config, 'refreshIntervalMs' | 'upstreamRateLimit'>,
): number {
  return Math.min(active / (config.refreshIntervalMs / 1000), BACKGROUND_SHARE * config.upstreamRateLimit);
}

/** What a pacer step knows when it decides how many rotation refreshes to queue. */
export interface AllowanceInput {
  /** Credit carried from the previous step (refreshes; negative: debt). */
  credit: number;
  /** The background budget, refreshes per second. */
  budget: number;
  /** Time since the previous step, ms. */
  elapsedMs: number;
  /** Background fetches (rotation, parked, overdue and related) started since the previous step. */
  spent: number;
  /** Background refreshes (related and rotation) waiting in the refresh queue. */
  waiting: number;
  /** `REFRESH_INTERVAL`: the debt kept is one interval of the budget. */
  intervalMs: number;
}

/**
 * How many rotation refreshes a step may queue (`count`; overdue sources are taken beyond it) and the credit
 * carried: the budget accrued since the previous step less the background fetches started meanwhile (charged
 * first, then capped: what was queued last step and has started since was paid from the credit then), the credit
 * capped at {@link CARRY_S} seconds of budget and the debt at one interval of it (after a storm of related
 * refreshes the rotation pauses until it is repaid; overdue sources still go), and no more than the queue's room
 * below a couple of seconds of background work (what waits is charged when it runs: the credit pays for it
 * first). Pure, so that the virtual-time model of the policy (bench) runs this very arithmetic.
 */
export function pacerAllowance(input: AllowanceInput): { credit: number; count: number; held: boolean } {
  const { budget } = input;
  const debt = (budget * DEBT_INTERVALS * input.intervalMs) / 1000;
  const accrued = input.credit - input.spent + (budget * input.elapsedMs) / 1000;
  const credit = Math.min(Math.max(accrued, -debt), Math.max(1, budget * CARRY_S));
  const hold = Math.max(HOLD_MIN, Math.ceil(budget * HOLD_S));
  const count = Math.max(0, Math.min(Math.floor(credit), hold) - input.waiting);
  return { credit, count, held: input.waiting >= hold };
}

/** What one step did. */
export interface PacerStep {
  budget: number;
  queued: number;
  overdue: number;
  /** Background fetches started since the last step (schedule and related), charged to the budget. */
  spent: number;
  /** ...of which related refreshes. */
  related: number;
  /** The step held back: the refresh queue holds enough background work. */
  held: boolean;
}

/** One process's pacer: paces while it holds the lease, competes for it otherwise. */
export class FreshnessPacer {
  private readonly deps: PacerDeps;
  private readonly stepMs: number;
  private readonly lockMs: number;
  private readonly owner = lockOwner();
  private readonly wake = new AbortController();
  private running: Promise<void> | undefined;
  private stopping = false;
  private holding = false;
  private heldUntil = 0;
  private nextTry = 0;
  private renewAt = 0;
  private credit = 0;
  private lastStep: number | undefined;
  /** The background fetch counts at the last step (none yet: the next step only reads them). */
  private fetched: { schedule: number; related: number } | undefined;
  private failing = false;

  constructor(deps: PacerDeps, tuning: PacerTuning = {}) {
    this.deps = deps;
    this.stepMs = tuning.stepMs ?? DEFAULT_STEP_MS;
    this.lockMs = tuning.lockMs ?? DEFAULT_LOCK_MS;
  }

  /** Whether this process leads the pacing now. */
  get leading(): boolean {
    return this.holding;
  }

  /** Starts competing for the lease and pacing, in the background. */
  start(): void {
    this.running ??= this.loop();
  }

  /** Stops within about a second, whatever Redis does, and gives the lease up for the next leader. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wake.abort();
    if (this.running) await withDeadline(this.running, 800).catch(() => undefined);
    if (this.holding)
      await withDeadline(releaseLock(this.deps.redis, this.lockKey, this.owner), 200).catch(() => undefined);
    this.holding = false;
  }

  private get lockKey(): string {
    return this.deps.keys.lock('freshness-pacer');
  }

  private async loop(): Promise<void> {
    while (!this.stopping) {
      try {
        const asked = await this.keepLease();
        if (this.holding && !this.stopping) await this.step();
        if (asked || this.holding) this.succeeded();
      } catch (error) {
        this.failed(error);
      }
      await sleep(this.stepMs, undefined, { signal: this.wake.signal }).catch(() => undefined);
    }
  }

  /**
   * Takes the lease when free (every third of its life), renews it when held, and lets it go once lost; true
   * when it asked Redis.
   */
  private async keepLease(): Promise<boolean> {
    const { redis, logger } = this.deps;
    const third = Math.max(50, Math.floor(this.lockMs / 3));
    const started = performance.now();
    // A lease not renewed in time (Redis unreachable) may be someone else's by now.
    if (this.holding && started > this.heldUntil) this.lose('could not renew the freshness pacer lease in time');
    if (!this.holding) {
      if (started < this.nextTry) return false;
      this.nextTry = started + third;
      if (!(await tryLock(redis, this.lockKey, this.owner, this.lockMs))) return true;
      this.holding = true;
      this.heldUntil = started + this.lockMs;
      this.renewAt = started + third;
      this.lastStep = undefined;
      this.fetched = undefined;
      this.credit = 0;
      logger.info({ lockMs: this.lockMs }, 'pacing background refreshes');
      return true;
    }
    if (started < this.renewAt) return false;
    this.renewAt = started + third;
    if (await extendLock(redis, this.lockKey, this.owner, this.lockMs)) this.heldUntil = started + this.lockMs;
    else this.lose('lost the freshness pacer lease: another process paces now');
    return true;
  }

  private lose(message: string): void {
    this.holding = false;
    this.deps.metrics.refreshBudget.set(0);
    this.deps.logger.warn({}, message);
  }

  /**
   * One step at the service clock's now: accrues budget for the time since the last step, spends the background
   * fetches started meanwhile, and queues what the credit allows less what already waits (overdue ones even
   * without credit). Exported for tests, which step with a clock of their own.
   */
  async step(): Promise<PacerStep> {
    const { config, freshness, metrics } = this.deps;
    const now = this.deps.now();
    const budget = backgroundBudget(await freshness.size(), config);
    metrics.refreshBudget.set(budget);
    // At most a second counts: a stalled leader does not make up the pause in one burst.
    const elapsedMs = this.lastStep === undefined ? this.stepMs : Math.min(Math.max(0, now - this.lastStep), 1_000);
    this.lastStep = now;
    const { spent, related } = await this.spentSinceLastStep();
    if (related > 0) metrics.backgroundRefreshes.inc({ why: 'related' }, related);
    const waiting = await this.waitingBackground();
    const allowed = pacerAllowance({
      credit: this.credit,
      budget,
      elapsedMs,
      spent,
      waiting,
      intervalMs: config.refreshIntervalMs,
    });
    this.credit = allowed.credit;
    const timing: TakeTiming = { leadMs: deadlineLead(config), retakeMs: RETAKE_MS };
    const taken = await freshness.take(now, allowed.count, OVERDUE_PER_STEP, timing);
    const queued = await Promise.allSettled(
      taken.map(async ({ source, state, overdue }) => {
        const priority = overdue ? { priority: REFRESH_PRIORITY.related } : {};
        await enqueueRefresh(this.deps.queues, config, source, { reason: 'schedule', now, ...priority });
        metrics.backgroundRefreshes.inc({
          why: overdue ? 'overdue' : state?.parkedBy === undefined ? 'rotation' : 'parked',
        });
        return source;
      }),
    );
    // Queued: due again an interval from now, unless its refresh planned it already. The others keep their
    // provisional mark, and are due again soon.
    const settled = queued.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
    await freshness.settle(settled, now, timing, now + config.refreshIntervalMs);
    const failed = queued.find((result) => result.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
    const overdue = taken.filter((source) => source.overdue).length;
    return { budget, queued: taken.length, overdue, spent, related, held: allowed.held };
  }

  /** The background fetches started since the last step, read from the counts the refresh jobs keep. */
  private async spentSinceLastStep(): Promise<{ spent: number; related: number }> {
    const fetched = await this.deps.freshness.backgroundFetches();
    const last = this.fetched;
    this.fetched = fetched;
    if (last === undefined) return { spent: 0, related: 0 };
    // A count lower than last time was lost (a flushed Redis): it counts from zero again.
    const grown = (now: number, before: number) => (now >= before ? now - before : now);
    const related = grown(fetched.related, last.related);
    return { spent: grown(fetched.schedule, last.schedule) + related, related };
  }

  /** Background refreshes (related, rotation, re-renders) waiting in the refresh queue. */
  private async waitingBackground(): Promise<number> {
    const priorities = [REFRESH_PRIORITY.related, REFRESH_PRIORITY.schedule];
    const counts = await this.deps.queues.refresh.getCountsPerPriority(priorities);
    return Object.values(counts).reduce((sum, count) => sum + count, 0);
  }

  private succeeded(): void {
    this.failing = false;
    this.deps.redisOutage.restored('freshness-pacer');
  }

  /** A Redis outage goes to the process's outage log; anything else is logged once until a step works again. */
  private failed(error: unknown): void {
    const redis = redisFailure(error);
    if (redis instanceof RedisUnavailableError) {
      this.deps.redisOutage.failed('freshness-pacer', error);
      return;
    }
    if (this.failing) return;
    this.failing = true;
    this.deps.logger.warn({ err: redis ?? error }, 'the freshness pacer failed a step; it tries again');
  }
}
