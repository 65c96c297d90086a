/**
 * One class taught to several groups at once, delivered by the university as one row per group: the rows agree
 * on everything but `id` and `group_list`. Left apart they give a teacher's feed overlapping copies of one class.
 * Pure.
 */
import type { TimetableEntry } from './types.ts';

/**
 * Everything that makes two rows the same class: every field except the row's id and its groups. Semester,
 * subject id and time slot are in it too: rows that differ there are different records upstream, and merging
 * them would hide that.
 */
function classKey(entry: TimetableEntry): string {
  return JSON.stringify([
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
    entry.teacher.id,
    entry.teacher.lastName,
    entry.teacher.firstName,
    entry.teacher.middleName,
    entry.room,
    entry.building.id,
    entry.building.name,
  ]);
}

/**
 * Merges the rows of one class into one entry listing every group, sorted by id. The merged entry keeps the
 * lowest id, so its occurrences keep the UIDs that row had before and the same UIDs whatever order the rows
 * come in; its groups are the rows' groups in id order, each once. A class delivered as a single row is
 * returned as it is (the same object), so timetables without such rows expand exactly as before. Rows repeating
 * one id are left to `expand`, which reports an id reused with different content.
 */
export function mergeRows(entries: readonly TimetableEntry[]): TimetableEntry[] {
  const ordered = [...entries].sort((a, b) => a.id - b.id);
  const byClass = new Map<string, TimetableEntry[]>();
  const merged: TimetableEntry[] = [];
  for (const entry of ordered) {
    const key = classKey(entry);
    const rows = byClass.get(key);
    if (rows === undefined) byClass.set(key, [entry]);
    else rows.push(entry);
  }
  for (const rows of byClass.values()) merged.push(...mergeClass(rows));
  return merged.sort((a, b) => a.id - b.id);
}

/** The rows of one class (sorted by id) as one entry; rows sharing an id stay separate for `expand` to judge. */
function mergeClass(rows: readonly TimetableEntry[]): TimetableEntry[] {
  const [first] = rows;
  if (first === undefined || rows.length === 1) return [...rows];
  const repeated = rows.filter((row, index) => rows.findIndex((other) => other.id === row.id) !== index);
  const distinct = rows.filter((row) => !repeated.includes(row));
  const groups = [...new Set(distinct.flatMap((row) => row.groups))];
  const same = groups.length === first.groups.length && groups.every((name, index) => first.groups[index] === name);
  return [same ? first : { ...first, groups }, ...repeated];
}
