/**
 * One class taught to several groups at once, delivered by the university as one row per group: the rows agree
 * on everything but `id` and `group_list`. Left apart they give a teacher's feed overlapping copies of one class.
 * Pure.
 */
import { classFields } from './class-fields.ts';
import type { TimetableEntry } from './types.ts';

/**
 * Row id → the id its class was published under (occurrence UIDs are made from it). Rows absent from it were
 * never published; a row published as a class of its own maps to itself.
 */
export type ClassIds = ReadonlyMap<number, number>;

/** The rows as classes, and the id every row's class has now. */
export interface MergedRows {
  entries: TimetableEntry[];
  classIds: Map<number, number>;
}

/**
 * Everything that makes two rows the same class: every field except the row's id and its groups. Semester,
 * subject id and time slot are in it too: rows that differ there are different records upstream, and merging
 * them would hide that.
 */
function classKey(entry: TimetableEntry): string {
  return JSON.stringify(classFields(entry).flat());
}

/** The rows as classes; see {@link mergeRowsWithIds}. */
export function mergeRows(entries: readonly TimetableEntry[], published: ClassIds = new Map()): TimetableEntry[] {
  return mergeRowsWithIds(entries, published).entries;
}

/**
 * Merges the rows of one class into one entry listing every group (in row id order, each once), sorted by id.
 * The class's id is the one its rows were last published under (`published`; the one most of them name, the
 * lowest of equals), even when the row that gave it has left, so that a group joining or leaving keeps the
 * class's UIDs; a class none of whose rows was published takes its lowest row id. A class never takes the id
 * of a live row of another class (that row keeps its own UIDs), nor an id another class took. A single row
 * keeping its own id is returned as it is (the same object). Rows repeating one id are left to `expand`, which
 * reports an id reused with different content.
 */
export function mergeRowsWithIds(entries: readonly TimetableEntry[], published: ClassIds = new Map()): MergedRows {
  const ordered = [...entries].sort((a, b) => a.id - b.id);
  const byClass = new Map<string, TimetableEntry[]>();
  for (const entry of ordered) {
    const key = classKey(entry);
    const rows = byClass.get(key);
    if (rows === undefined) byClass.set(key, [entry]);
    else rows.push(entry);
  }
  const classOfRow = new Map<number, TimetableEntry[]>();
  for (const rows of byClass.values()) for (const row of rows) classOfRow.set(row.id, rows);
  const taken = new Set<number>();
  const merged: TimetableEntry[] = [];
  const classIds = new Map<number, number>();
  // Classes in order of their lowest row: a deterministic winner when two classes name one published id.
  for (const rows of byClass.values()) {
    const free = (id: number) => !taken.has(id) && (classOfRow.get(id) ?? rows) === rows;
    const id = publishedId(rows, published, free) ?? (rows[0] as TimetableEntry).id;
    taken.add(id);
    for (const row of rows) classIds.set(row.id, id);
    merged.push(...mergeClass(rows, id));
  }
  return { entries: merged.sort((a, b) => a.id - b.id), classIds };
}

/** The published id most rows of the class name (lowest of equals) among those it may take. */
function publishedId(
  rows: readonly TimetableEntry[],
  published: ClassIds,
  free: (id: number) => boolean,
): number | undefined {
  const votes = new Map<number, number>();
  for (const row of rows) {
    const id = published.get(row.id);
    if (id !== undefined && free(id)) votes.set(id, (votes.get(id) ?? 0) + 1);
  }
  let best: [number, number] | undefined;
  for (const [id, count] of votes)
    if (!best || count > best[1] || (count === best[1] && id < best[0])) best = [id, count];
  return best?.[0];
}

/**
 * The rows of one class (sorted by id) as one entry under `id`; rows sharing an id stay separate (under `id`
 * too) for `expand` to judge.
 */
function mergeClass(rows: readonly TimetableEntry[], id: number): TimetableEntry[] {
  const [first] = rows;
  if (first === undefined) return [];
  const repeated = rows.filter((row, index) => rows.findIndex((other) => other.id === row.id) !== index);
  const distinct = rows.filter((row) => !repeated.includes(row));
  const groups = [...new Set(distinct.flatMap((row) => row.groups))];
  const same = groups.length === first.groups.length && groups.every((name, index) => first.groups[index] === name);
  const one = same && id === first.id ? first : { ...first, id, groups };
  return [one, ...repeated.map((row) => (row.id === id ? row : { ...row, id }))];
}

/**
 * The class ids a publication used, from its rows and the ids it stored ({@link storedClassIds}): every row
 * not stored was published under its own id.
 */
export function publishedClassIds(
  entries: readonly Pick<TimetableEntry, 'id'>[],
  stored: Readonly<Record<string, number>> | undefined,
): Map<number, number> {
  return new Map(entries.map((entry) => [entry.id, stored?.[String(entry.id)] ?? entry.id]));
}

/** What a publication stores of its class ids: only rows published under another row's id (few, so small). */
export function storedClassIds(classIds: ClassIds): Record<string, number> | undefined {
  const moved = [...classIds].filter(([row, id]) => row !== id);
  return moved.length === 0 ? undefined : Object.fromEntries(moved.map(([row, id]) => [String(row), id]));
}
