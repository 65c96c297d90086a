/**
 * The fields of a class, in one fixed order (pure): what the entry digest covers besides the row's id and groups
 * (entry-digest.ts) and what makes two rows the same class (merge-rows.ts). One list, so that a field added to
 * {@link TimetableEntry} cannot be missed by one of them (the digest's test changes each field one by one).
 */
import type { TimetableEntry } from './types.ts';

/**
 * Every field of `entry` but `id` and `groups`, in a fixed order (key order in stored JSON must not matter); the
 * teacher's and the building's fields as a list each. The order is part of stored digests: never reorder it.
 */
export function classFields(entry: TimetableEntry): unknown[] {
  const { teacher, building } = entry;
  return [
    entry.semester,
    entry.year,
    entry.subjectId,
    entry.subjectName,
    entry.kind,
    entry.startDate,
    entry.finishDate,
    entry.weekday,
    entry.weekType,
    entry.beginTime,
    entry.endTime,
    entry.timeIntervalId,
    entry.note,
    [teacher.id, teacher.lastName, teacher.firstName, teacher.middleName],
    entry.room,
    [building.id, building.name],
  ];
}
