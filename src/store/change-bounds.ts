/**
 * Change records bounded in bytes: a record is stored packed (lib/packed-json.ts) in at most
 * {@link CHANGE_RECORD_BYTES}, its lists shortened when the whole would not fit. The counts stay exact, so
 * readers say how many occurrences a list leaves out ({@link unlistedCounts}).
 */
import { packJson } from '../lib/packed-json.ts';
import type { ChangeCounts, ChangeRecord } from '../timetable/publication.ts';

/**
 * The most bytes one stored change record takes, and with the log's 20 records at most 30 KB per source. A
 * first publication's record (50 occurrences listed of each kind present) packs into about 1 KB and is kept
 * whole; a timetable rewritten at once (four lists of 50, ~60 KB of JSON, 2 KB and more packed) keeps 25 or
 * fewer of each kind, the earliest classes, which is what the admin reads and the timetable page marks.
 */
export const CHANGE_RECORD_BYTES = 1_536;

/** The lists of a change record, in the order they share the room left. */
const LISTS = ['moved', 'added', 'removed', 'changed'] as const satisfies readonly (keyof ChangeCounts)[];

/**
 * The packed form of `change` in at most `maxBytes`: the whole record when it fits, else the record with the
 * most items listed that fits. Each list keeps its first items (the earliest classes) and the lists share the
 * room evenly, a short list leaving its share to the others.
 */
export function packChange(change: ChangeRecord, maxBytes = CHANGE_RECORD_BYTES): Buffer {
  const whole = packJson(change);
  if (whole.length <= maxBytes) return whole;
  // Binary search for the most items listed: `low` items always fit (none listed is a few hundred bytes).
  let low = 0;
  let high = LISTS.reduce((sum, list) => sum + change[list].length, 0) - 1;
  let packed = packJson(shortened(change, 0));
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    const candidate = packJson(shortened(change, middle));
    if (candidate.length <= maxBytes) {
      low = middle;
      packed = candidate;
    } else {
      high = middle - 1;
    }
  }
  return packed;
}

/** How many occurrences of each kind a record counts but does not list (its lists were shortened). */
export function unlistedCounts(change: ChangeRecord): ChangeCounts {
  return {
    added: change.counts.added - change.added.length,
    removed: change.counts.removed - change.removed.length,
    moved: change.counts.moved - change.moved.length,
    changed: change.counts.changed - change.changed.length,
  };
}

/** `change` listing `items` occurrences in all, shared out one list at a time. */
function shortened(change: ChangeRecord, items: number): ChangeRecord {
  const taken = { moved: 0, added: 0, removed: 0, changed: 0 };
  let left = items;
  while (left > 0) {
    for (const list of LISTS) {
      if (left > 0 && taken[list] < change[list].length) {
        taken[list] += 1;
        left -= 1;
      }
    }
  }
  return {
    ...change,
    added: change.added.slice(0, taken.added),
    removed: change.removed.slice(0, taken.removed),
    moved: change.moved.slice(0, taken.moved),
    changed: change.changed.slice(0, taken.changed),
  };
}
