/**
 * Parked sources whose explanation is gone (docs/design.md#freshness). A student parked by a group, or a
 * teacher parked by the groups, waits up to REFRESH_MAX_WAIT because a refresh of the group would spread any
 * change to them. Once the group leaves the planner (deactivated, or forgotten after the upstream stopped
 * knowing it) nobody refreshes it, so they would learn of a change only at their longest wait: they are unparked
 * then, and come back within one interval, where their own next refresh learns again whether they may park.
 */
import type { Config } from '../config.ts';
import { type FreshnessStore, spreadUnit } from '../store/freshness-store.ts';
import type { SourceRelations } from '../store/source-relations.ts';
import { type SourceKey, sourceOf } from '../timetable/source.ts';

/** What {@link unparkDependents} uses. */
export interface UnparkDeps {
  readonly config: Pick<Config, 'refreshIntervalMs'>;
  readonly relations: Pick<SourceRelations, 'members'>;
  readonly freshness: Pick<FreshnessStore, 'unpark' | 'parkedByGroups'>;
  /** Epoch ms. */
  readonly now: () => number;
}

/**
 * Unparks what `gone` (sources that left the planner) explained: the students each gone group parks, and every
 * teacher parked by the groups (which groups cover a teacher is not kept; one more refresh of each re-learns
 * it). Each comes next at its place spread over one interval, and is due within one interval at the latest.
 * Answers how many were unparked.
 */
export async function unparkDependents(ctx: UnparkDeps, gone: readonly SourceKey[]): Promise<number> {
  const groups = gone.filter((source) => sourceOf(source).kind === 'group');
  if (groups.length === 0) return 0;
  const now = ctx.now();
  const { refreshIntervalMs } = ctx.config;
  const at = (source: SourceKey) => now + spreadUnit(source) * refreshIntervalMs;
  const students = await Promise.all(
    groups.map(async (group) => {
      const members = await ctx.relations.members([Number(sourceOf(group).id)]);
      return members.map((source) => ({ source, parkedBy: group, next: at(source) }));
    }),
  );
  const teachers = (await ctx.freshness.parkedByGroups()).map((source) => ({
    source,
    parkedBy: 'groups' as const,
    next: at(source),
  }));
  return ctx.freshness.unpark([...students.flat(), ...teachers], now, refreshIntervalMs);
}
