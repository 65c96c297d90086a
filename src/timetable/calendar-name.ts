import { teacherName } from './event-text.ts';
import type { TimetableEntry } from './types.ts';

/** Which timetable a feed shows. */
export type TimetableSubject =
  | { kind: 'group'; id: number }
  | { kind: 'employee'; id: number }
  | { kind: 'personal' }
  | { kind: 'file'; name: string };

/** A public timetable: a group's or a teacher's, known by its id. */
export type PublicSubject = Extract<TimetableSubject, { kind: 'group' | 'employee' }>;

/** The name a public timetable goes by while its data does not name it: `Группа 4242`, `Преподаватель 17`. */
export function placeholderName(subject: PublicSubject): string {
  return subject.kind === 'group' ? `Группа ${subject.id}` : `Преподаватель ${subject.id}`;
}

/**
 * Whether `name` is what a public timetable was called before its name was known: the placeholder, or the
 * English one that connections made before the placeholder was Russian gave new Google calendars.
 */
export function isPlaceholderName(subject: PublicSubject, name: string): boolean {
  const english = subject.kind === 'group' ? `Group ${subject.id}` : `Teacher ${subject.id}`;
  return name === placeholderName(subject) || name === english;
}

/**
 * The name the data gives a public timetable, or undefined when it does not tell: a group is the group name
 * that most of its entries list (lecture streams and classes merged from several groups' rows list other
 * groups too, but not in every entry); a tie, or no entries at all, tells nothing. A teacher is named by an
 * entry they teach.
 */
export function derivedName(subject: PublicSubject, entries: readonly TimetableEntry[]): string | undefined {
  if (subject.kind === 'employee') {
    const own = entries.find((entry) => entry.teacher.id === subject.id);
    return own ? teacherName(own) || undefined : undefined;
  }
  return mostListedGroup(entries);
}

/**
 * The calendar's display name (X-WR-CALNAME), derived from the data: a group's or a teacher's as
 * {@link derivedName} finds it, else `known` (the name the source had before), else the placeholder. A personal
 * timetable names the group common to all its entries, a file the one group all its entries list.
 */
export function calendarName(subject: TimetableSubject, entries: readonly TimetableEntry[], known?: string): string {
  if (subject.kind === 'group' || subject.kind === 'employee')
    return derivedName(subject, entries) ?? known ?? placeholderName(subject);
  const group = commonGroup(entries);
  if (subject.kind === 'personal') return group ? `Моё расписание (${group})` : 'Моё расписание';
  return group ?? subject.name;
}

/** The group name listed by the most entries, if one is listed by more than any other. */
function mostListedGroup(entries: readonly TimetableEntry[]): string | undefined {
  const counts = new Map<string, number>();
  for (const entry of entries) for (const name of new Set(entry.groups)) counts.set(name, (counts.get(name) ?? 0) + 1);
  let best: string | undefined;
  let bestCount = 0;
  let tied = false;
  for (const [name, count] of counts) {
    if (count > bestCount) [best, bestCount, tied] = [name, count, false];
    else if (count === bestCount) tied = true;
  }
  return tied ? undefined : best;
}

/** The one group name that appears in every entry's group list, if there is exactly one. */
function commonGroup(entries: readonly TimetableEntry[]): string | undefined {
  const [first, ...rest] = entries;
  if (!first) return undefined;
  const common = first.groups.filter((name) => rest.every((entry) => entry.groups.includes(name)));
  return common.length === 1 ? common[0] : undefined;
}
