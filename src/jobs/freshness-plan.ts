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
  /** The fetch changed the published timetable (a first publication counts as no change). */
  changed: boolean;
  /**
   * The source is parked: what explains it (a personal source's group, or `groups` for a teacher whose classes
   * all show in refreshed groups). Absent: the source keeps its own place in the rotation.
   */
  parkedBy?: SourceKey | 'groups' | undefined;
  /** When the source's next class starts (epoch ms), if it has one: a class soon weighs more. */
  nextClassAt?: number | undefined;
  /** Related refreshes this fetch queued (they are spent from the same background budget). */
  relatedQueued: number;
}

/** The settings the next-time formula reads. */
export type PlanSettings = Pick<Config, 'refreshIntervalMs' | 'refreshMaxWaitMs'>;

/** What {@link planAfterRefresh} uses: the planner's store, and what a source's weight is read from. */
export interface FreshnessPlanDeps {
  readonly config: PlanSettings & Pick<Config, 'refreshPolicy'>;
  readonly freshness: Pick<FreshnessStore, 'state' | 'plan' | 'chargeRelated'>;
  readonly registry: Pick<SourceRegistry, 'isActive'>;
  /** The calendar kinds pushed to: a source pushed to a calendar weighs more. */
  readonly pushKinds: readonly PushKindTargets<'anyForSource'>[];
  /** A source a chat or a webhook is told the changes of weighs more. */
  readonly notify: Pick<NotifyServices, 'hasSubscribers'>;
}

const DAY_MS = 86_400_000;

/**
 * The prior of the rate estimate: one change over one day, as if every source had been watched for a day and
 * changed once. A new source is planned at this rate; a few days of its own history outweigh it.
 */
export const PRIOR_CHANGES = 1;
export const PRIOR_OBSERVED_MS = DAY_MS;

/**
 * How far back the estimate looks: past this, changes and time are scaled down together, so a source that
 * changed a lot last month and no longer does slows down within two weeks (and the counts stay small).
 */
export const RATE_WINDOW_MS = 14 * DAY_MS;

/** A source's weight factors: each of pushed to a calendar, told to a chat or webhook, a class within a day. */
export const WEIGHT_FACTOR = 2;
/** A class starting within this long makes a change of its source weigh more. */
export const CLASS_SOON_MS = DAY_MS;

/** The estimated rate of change of a source (changes per ms), the prior included. */
export function changeRate(state: Pick<FreshnessState, 'changes' | 'observedMs'>): number {
  return (state.changes + PRIOR_CHANGES) / (state.observedMs + PRIOR_OBSERVED_MS);
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
 * at the prior's rate with weight 1 comes back after half an interval: twice as often as the fixed ticks, which
 * the sources that are parked or change less pay for; one changing 16 times as often (or 4 times as often and
 * pushed and told) comes back after an eighth of an interval.
 */
export function nextRefreshDelay(
  state: Pick<FreshnessState, 'changes' | 'observedMs' | 'weight' | 'parkedBy'>,
  settings: PlanSettings,
): { nextMs: number; deadlineMs: number } {
  if (state.parkedBy !== undefined) return { nextMs: settings.refreshMaxWaitMs, deadlineMs: settings.refreshMaxWaitMs };
  const deadlineMs = settings.refreshIntervalMs;
  const c = (settings.refreshIntervalMs / 2) * Math.sqrt(PRIOR_CHANGES / PRIOR_OBSERVED_MS);
  const delay = c / Math.sqrt(changeRate(state) * Math.max(state.weight, 0.01));
  return { nextMs: Math.round(Math.min(Math.max(delay, minRefreshGap(settings)), deadlineMs)), deadlineMs };
}

/**
 * What the planner knows of a source after a successful refresh at `now`: the time since the previous one
 * observed, a change counted when the fetch changed the timetable, both scaled down past {@link RATE_WINDOW_MS}.
 */
export function learnedState(
  previous: FreshnessState | undefined,
  now: number,
  learning: Pick<RefreshLearning, 'changed' | 'parkedBy'>,
  weight: number,
): FreshnessState {
  const since = previous === undefined ? 0 : Math.max(0, now - previous.lastRefresh);
  let observedMs = (previous?.observedMs ?? 0) + since;
  let changes = (previous?.changes ?? 0) + (learning.changed ? 1 : 0);
  if (observedMs > RATE_WINDOW_MS) {
    changes *= RATE_WINDOW_MS / observedMs;
    observedMs = RATE_WINDOW_MS;
  }
  return { lastRefresh: now, changes, observedMs, weight, ...parked(learning.parkedBy) };
}

function parked(parkedBy: ParkedBy | undefined): { parkedBy?: ParkedBy } {
  return parkedBy === undefined ? {} : { parkedBy };
}

/** A source's weight: ×2 each when pushed to a calendar, told to a chat or webhook, and with a class within a day. */
export async function sourceWeight(
  ctx: Pick<FreshnessPlanDeps, 'pushKinds' | 'notify'>,
  source: SourceKey,
  now: number,
  nextClassAt: number | undefined,
): Promise<number> {
  const [pushed, told] = await Promise.all([
    Promise.all(ctx.pushKinds.map(({ targets }) => targets.anyForSource(source))).then((any) => any.some(Boolean)),
    ctx.notify.hasSubscribers(source),
  ]);
  const soon = nextClassAt !== undefined && nextClassAt >= now && nextClassAt - now <= CLASS_SOON_MS;
  return [pushed, told, soon].reduce((weight, yes) => (yes ? weight * WEIGHT_FACTOR : weight), 1);
}

/**
 * Records a successful fetch of `source` at `now` and plans its next background refresh (adaptive policy
 * only). The related refreshes it queued are charged to the background budget. A source no longer active is
 * not planned (the reconciler has forgotten it, or will).
 */
export async function planAfterRefresh(
  ctx: FreshnessPlanDeps,
  source: SourceKey,
  now: number,
  learning: RefreshLearning,
): Promise<void> {
  if (ctx.config.refreshPolicy !== 'adaptive') return;
  const [, active, previous, weight] = await Promise.all([
    ctx.freshness.chargeRelated(learning.relatedQueued),
    ctx.registry.isActive(source),
    ctx.freshness.state(source),
    sourceWeight(ctx, source, now, learning.nextClassAt),
  ]);
  if (!active) return;
  const state = learnedState(previous, now, learning, weight);
  const { nextMs, deadlineMs } = nextRefreshDelay(state, ctx.config);
  await ctx.freshness.plan(source, { next: now + nextMs, deadline: now + deadlineMs, state });
}
