/**
 * The freshness planner's record of each refresh: what a successful fetch taught about its source decides when
 * the background refreshes it next (docs/design.md#freshness).
 */
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

/** Records a successful fetch of `source` at `now` and plans its next background refresh. */
export async function planAfterRefresh(
  _ctx: unknown,
  _source: SourceKey,
  _now: number,
  _learning: RefreshLearning,
): Promise<void> {
  // Filled in by the planner.
}
