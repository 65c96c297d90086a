import { teacherName } from './event-text.ts';
import type { TimetableEntry } from './types.ts';

/** Which timetable a feed shows. */
export type TimetableSubject =
  | { kind: 'group'; id: number }
  | { kind: 'employee'; id: number }
  | { kind: 'personal' }
  | { kind: 'file'; name: string };

/**
 * The calendar's display name (X-WR-CALNAME), derived from the data: a group's timetable names the group in
 * every entry's group list; a teacher's names the teacher in every entry.
 */
export function calendarName(subject: TimetableSubject, entries: readonly TimetableEntry[]): string {
  if (subject.kind === 'employee') {
    const own = entries.find((entry) => entry.teacher.id === subject.id);
    return own ? teacherName(own) || `Преподаватель ${subject.id}` : `Преподаватель ${subject.id}`;
  }
  const group = commonGroup(entries);
  if (subject.kind === 'group') return group ?? `Группа ${subject.id}`;
  if (subject.kind === 'personal') return group ? `Моё расписание (${group})` : 'Моё расписание';
  return group ?? subject.name;
}

/** The one group name that appears in every entry's group list, if there is exactly one. */
function commonGroup(entries: readonly TimetableEntry[]): string | undefined {
  const [first, ...rest] = entries;
  if (!first) return undefined;
  const common = first.groups.filter((name) => rest.every((entry) => entry.groups.includes(name)));
  return common.length === 1 ? common[0] : undefined;
}
