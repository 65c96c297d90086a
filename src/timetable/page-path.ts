/**
 * Where a source's timetable page is (pure): the pages link it, the push pages lead back to it, change
 * notifications link it. A personal timetable's page is the signed-in person's own, so its path names no id.
 */
import { type SourceKey, sourceOf } from './source.ts';

/** A source's timetable page: `/timetables/groups/4242`, `/timetables/employees/7`, `/timetables/personal`. */
export function timetablePagePath(source: SourceKey): string {
  const ref = sourceOf(source);
  if (ref.kind === 'group') return `/timetables/groups/${ref.id}`;
  if (ref.kind === 'employee') return `/timetables/employees/${ref.id}`;
  return '/timetables/personal';
}
