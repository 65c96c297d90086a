/**
 * STUB (issue 13, study plan helper replaces it): the study plan of a personal subscription next to what its
 * timetable schedules, for the personal page.
 */
import type { ServiceContext } from '../runtime/context.ts';
import type { Subscription } from './subscription-store.ts';

/** One subject and kind of class: planned hours against scheduled ones. */
export interface PlanRow {
  subject: string;
  code: string;
  kind: 'lecture' | 'practice' | 'seminar' | 'laboratory';
  plannedHours: number;
  scheduledHours: number;
  /** Set when the difference deserves a look. */
  difference?: 'none-scheduled' | 'far-from-plan' | 'not-in-plan';
}

export type StudyPlanView =
  | { state: 'unavailable'; fetchedAt: number | null }
  | {
      state: 'ready';
      fetchedAt: number;
      semester: number | null;
      ends: { subject: string; exam: boolean; quiz: boolean }[];
      rows: PlanRow[];
    };

/** The plan view of `subscription`. */
export async function studyPlanView(_ctx: ServiceContext, _subscription: Subscription): Promise<StudyPlanView> {
  return { state: 'unavailable', fetchedAt: null };
}
