/**
 * The freshness planner's record of each refresh: what a successful fetch taught about its source decides when
 * the background refreshes it next (docs/design.md#freshness).
 *
 * Each source's rate of change is estimated from the changes seen over the time observed, with a prior; its
 * weight says how much a change of it matters. Cho & Garcia-Molina showed that, for a fixed budget, refreshing
 * each source in proportion to the square root of its rate of change keeps copies fresher than refreshing in
 * proportion to the rate; weighting the rate by how much staleness costs keeps the same rule. So the next
 * refresh comes `c / √(rate × weight)` after this one, between a floor and the deadline (the wait guarantee).
 */
import type { Config } from '../config.ts';
import type { NotifyServices } from '../notify/notify-services.ts';
import type { PushKindTargets } from '../push/adapter.ts';
import type { FreshnessState, FreshnessStore, ParkedBy } from '../store/freshness-store.ts';
import type { SourceRegistry } from '../store/registry.ts';
import type { SourceKey } from '../timetable/source.ts';

/** What a successful fetch of a source taught, as the refresh job hands it to the planner. */
export interface RefreshLearning {
  /**
   * The fetch found a change of the published timetable first: not a first publication, and not a `related`
   * refresh (whose change another source's refresh found). The source's rate of change counts these only: they
   * are the changes its own refreshes are worth; the ones related refreshes bring arrive without them.
   */
  changed: boolean;
  /**
   * The source is parked: what explains it (a personal source's group, or `groups` for a teacher whose classes
   * all show in refreshed groups). Absent: the source keeps its own place in the rotation.
   */
  parkedBy?: SourceKey | 'groups' | undefined;
  /** Whether the source may have a class today or tomorrow: a change of it then weighs more. */
  classSoon: boolean;
  /**
   * Feeds besides its own that show this source's changes and rely on it to see them first: a group's students
   * (their personal timetables are parked by it). Absent: none.
   */
  dependents?: number | undefined;
  /**
   * Related refreshes this fetch asked for (for logs: the budget is charged for each when it runs, by the
   * refresh job's count of background fetches).
   */
  relatedQueued: number;
}

/** The settings the next-time formula reads. */
export type PlanSettings = Pick<Config, 'refreshIntervalMs' | 'refreshMaxWaitMs'>;

/** What {@link planAfterRefresh} uses: the planner's store, and what a source's weight is read from. */
export interface FreshnessPlanDeps {
  readonly config: PlanSettings & Pick<Config, 'refreshPolicy'>;
  readonly freshness: Pick<FreshnessStore, 'state' | 'plan'>;
  readonly registry: Pick<SourceRegistry, 'isActive'>;
  /** The calendar kinds pushed to: a source pushed to a calendar weighs more. */
  readonly pushKinds: readonly PushKindTargets<'anyForSource'>[];
  /** A source a chat or a webhook is told the changes of weighs more. */
  readonly notify: Pick<NotifyServices, 'hasSubscribers'>;
}

/**
 * Times of the rate estimate are counted in refresh intervals, not in hours: the policy then behaves alike at
 * every scale (a benchmark of 2,000 sources refreshed every minute is a university of 20,000 refreshed every
 * half hour, sped up), and an operator's `REFRESH_INTERVAL` says how fast the planner learns.
 *
 * The prior: a rate of one change per 48 intervals (a day at 30 min), weighing as much as 4 intervals of a
 * source's own history. A new source is planned at the prior's rate, which brings it back after one interval;
 * a source whose own refreshes keep finding changes pulls ahead within a few intervals, and one that never
 * changes falls back to the deadline.
 */
export const PRIOR_RATE_PER_INTERVAL = 1 / 48;
export const PRIOR_INTERVALS = 4;

/**
 * How far back the estimate looks, in intervals (two weeks at 30 min): past this, changes and time are scaled
 * down together, so a source that changed a lot last month and no longer does slows down (and the counts stay
 * small).
 */
export const RATE_WINDOW_INTERVALS = 672;

/** A source's weight factors: each of pushed to a calendar, told to a chat or webhook, a class today or tomorrow. */
export const WEIGHT_FACTOR = 2;
/**
 * The most a source's dependents multiply its weight by: a change of a group reaches its students' feeds too,
 * so it is worth as many feeds as it reaches; past 32 the floor between refreshes decides anyway.
 */
export const MAX_DEPENDENT_WEIGHT = 32;

/** The estimated rate of change of a source (changes per interval), the prior included. */
export function changeRate(
  state: Pick<FreshnessState, 'changes' | 'observedMs'>,
  settings: Pick<PlanSettings, 'refreshIntervalMs'>,
): number {
  const observed = state.observedMs / settings.refreshIntervalMs;
  return (state.changes + PRIOR_RATE_PER_INTERVAL * PRIOR_INTERVALS) / (observed + PRIOR_INTERVALS);
}

/**
 * The shortest time between two background refreshes of one source: a 120th of `REFRESH_INTERVAL` (15 s at
 * 30 min), at least 2 s. However hot a source is, it then takes at most 120 times its even share of the budget
 * (the budget refreshes every source once per interval), so a handful of busy groups cannot starve the
 * rotation; and 2 s is about what one refresh takes, so a source is never queued again while it runs.
 */
export function minRefreshGap(settings: Pick<PlanSettings, 'refreshIntervalMs'>): number {
  return Math.max(settings.refreshIntervalMs / 120, 2_000);
}

/**
 * When the background refreshes a source next, and when at the latest, in ms after a refresh:
 * `deadline` = `REFRESH_MAX_WAIT` when parked, else `REFRESH_INTERVAL` (the wait guarantee); a parked source's
 * next refresh is its deadline (a related change refreshes it sooner); any other's is
 * `c / √(rate × weight)` between {@link minRefreshGap} and the deadline. `c` is chosen so that a source changing
 * at the prior's rate with weight 1 comes back after one interval, as with the fixed ticks; one whose own
 * refreshes find changes 16 times as often (or 4 times as often and pushed and told) comes back after a quarter
 * of an interval, and one that never finds any waits for its deadline. The pacer takes the lowest planned times
 * first, and spends its whole budget: when there is more budget than planned refreshes, every source comes back
 * sooner in the same proportions.
 */
export function nextRefreshDelay(
  state: Pick<FreshnessState, 'changes' | 'observedMs' | 'weight' | 'parkedBy'>,
  settings: PlanSettings,
): { nextMs: number; deadlineMs: number } {
  if (state.parkedBy !== undefined) return { nextMs: settings.refreshMaxWaitMs, deadlineMs: settings.refreshMaxWaitMs };
  const deadlineMs = settings.refreshIntervalMs;
  const c = settings.refreshIntervalMs * Math.sqrt(PRIOR_RATE_PER_INTERVAL);
  const delay = c / Math.sqrt(changeRate(state, settings) * Math.max(state.weight, 0.01));
  return { nextMs: Math.round(Math.min(Math.max(delay, minRefreshGap(settings)), deadlineMs)), deadlineMs };
}

/**
 * What the planner knows of a source after a successful refresh at `now`: the time since the previous one
 * observed, a change counted when the fetch changed the timetable, both scaled down past {@link RATE_WINDOW_INTERVALS} intervals.
 */
export function learnedState(
  previous: FreshnessState | undefined,
  now: number,
  learning: Pick<RefreshLearning, 'changed' | 'parkedBy'>,
  weight: number,
  settings: Pick<PlanSettings, 'refreshIntervalMs'>,
): FreshnessState {
  const since = previous === undefined ? 0 : Math.max(0, now - previous.lastRefresh);
  let observedMs = (previous?.observedMs ?? 0) + since;
  let changes = (previous?.changes ?? 0) + (learning.changed ? 1 : 0);
  const windowMs = RATE_WINDOW_INTERVALS * settings.refreshIntervalMs;
  if (observedMs > windowMs) {
    changes *= windowMs / observedMs;
    observedMs = windowMs;
  }
  return { lastRefresh: now, changes, observedMs, weight, ...parked(learning.parkedBy) };
}

function parked(parkedBy: ParkedBy | undefined): { parkedBy?: ParkedBy } {
  return parkedBy === undefined ? {} : { parkedBy };
}

/** What a source's weight is made of: each `true` doubles it, and the feeds its changes reach multiply it. */
export interface WeightFactors {
  pushed: boolean;
  told: boolean;
  classSoon: boolean;
  /** Feeds besides its own that show its changes (a group's students); absent: none. */
  dependents?: number | undefined;
}

/**
 * A source's weight from its factors: ×2 each when pushed to a calendar, told to a chat or webhook, and with a
 * class soon; and × the feeds its changes reach (its own and its dependents', at most
 * {@link MAX_DEPENDENT_WEIGHT}): the latency that matters is each feed's, so a group with ten students
 * subscribed is worth eleven feeds. Pure, so that the virtual-time model of the policy (bench) weighs alike.
 */
export function weightOf(factors: WeightFactors): number {
  const feeds = Math.min(1 + Math.max(0, factors.dependents ?? 0), MAX_DEPENDENT_WEIGHT);
  return [factors.pushed, factors.told, factors.classSoon].reduce(
    (weight, yes) => (yes ? weight * WEIGHT_FACTOR : weight),
    feeds,
  );
}

/** A source's weight ({@link weightOf}), reading whether it is pushed to a calendar and told to anyone. */
export async function sourceWeight(
  ctx: Pick<FreshnessPlanDeps, 'pushKinds' | 'notify'>,
  source: SourceKey,
  learning: Pick<RefreshLearning, 'classSoon' | 'dependents'>,
): Promise<number> {
  const [pushed, told] = await Promise.all([
    Promise.all(ctx.pushKinds.map(({ targets }) => targets.anyForSource(source))).then((any) => any.some(Boolean)),
    ctx.notify.hasSubscribers(source),
  ]);
  return weightOf({ pushed, told, classSoon: learning.classSoon, dependents: learning.dependents });
}

/**
 * Records a successful fetch of `source` at `now` and plans its next background refresh (adaptive policy
 * only). A source no longer active is not planned (the reconciler has forgotten it, or will).
 */
export async function planAfterRefresh(
  ctx: FreshnessPlanDeps,
  source: SourceKey,
  now: number,
  learning: RefreshLearning,
): Promise<void> {
  if (ctx.config.refreshPolicy !== 'adaptive') return;
  const [active, previous, weight] = await Promise.all([
    ctx.registry.isActive(source),
    ctx.freshness.state(source),
    sourceWeight(ctx, source, learning),
  ]);
  if (!active) return;
  const state = learnedState(previous, now, learning, weight, ctx.config);
  const { nextMs, deadlineMs } = nextRefreshDelay(state, ctx.config);
  await ctx.freshness.plan(source, { next: now + nextMs, deadline: now + deadlineMs, state });
}
