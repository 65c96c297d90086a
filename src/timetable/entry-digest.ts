/**
 * Digests of timetable entries (pure), for learning which sources another source explains: a personal timetable
 * equal to its group's after a subgroup, a teacher whose classes all show in groups refreshed anyway. A digest
 * covers every field of a normalised entry (store/snapshot-store.ts `normaliseEntries`), so that two entries with
 * the same digest show the same in every feed: the same UIDs, dates, times, texts and study plan lines.
 */
import { createHash } from 'node:crypto';
import { classFields } from './class-fields.ts';
import { keepsEntry } from './event-text.ts';
import type { TimetableEntry } from './types.ts';

/** Bytes of one entry's digest: 64 bits, so that a collision among a teacher's few hundred entries never happens. */
export const ENTRY_DIGEST_BYTES = 8;
/** Bytes of a set's digest (a whole timetable or one of its subgroup views). */
export const SET_DIGEST_BYTES = 12;

/** The subgroups a group's timetable is viewed by besides the whole: the subgroup option's values people use. */
export const VIEW_SUBGROUPS = [1, 2] as const;

/**
 * The fields of an entry in a fixed order: key order in the stored JSON must not matter, and a field added to
 * {@link TimetableEntry} fails the test that changes each field one by one until class-fields.ts lists it.
 */
function canonical(entry: TimetableEntry): string {
  return JSON.stringify([entry.id, ...classFields(entry), entry.groups]);
}

/** Computes an entry's digest ({@link entryDigest}), or remembers it. */
export type EntryDigester = (entry: TimetableEntry) => Buffer;

/**
 * {@link entryDigest}, each entry object's computed once: a group's refresh digests its entries for the whole
 * timetable and each subgroup view. The entries must not change meanwhile (they are a fetch's, used once).
 */
export function rememberingEntryDigest(): EntryDigester {
  const known = new Map<TimetableEntry, Buffer>();
  return (entry) => {
    let digest = known.get(entry);
    if (digest === undefined) {
      digest = entryDigest(entry);
      known.set(entry, digest);
    }
    return digest;
  };
}

/** The digest of one entry ({@link ENTRY_DIGEST_BYTES} bytes). */
export function entryDigest(entry: TimetableEntry): Buffer {
  return createHash('sha256').update(canonical(entry)).digest().subarray(0, ENTRY_DIGEST_BYTES);
}

/**
 * The digests of `entries`, sorted and without repeats, packed one after another: a compact set that
 * {@link hasDigest} searches. An entry repeated under one id is one class, so repeats count once.
 */
export function entryDigestSet(entries: readonly TimetableEntry[], digestOf: EntryDigester = entryDigest): Buffer {
  const sorted = entries.map((entry) => digestOf(entry)).sort(Buffer.compare);
  const unique = sorted.filter((digest, index) => index === 0 || !digest.equals(sorted[index - 1] as Buffer));
  return Buffer.concat(unique);
}

/** Whether a packed set from {@link entryDigestSet} holds `digest` (binary search). */
export function hasDigest(set: Buffer, digest: Buffer): boolean {
  let low = 0;
  let high = Math.floor(set.length / ENTRY_DIGEST_BYTES) - 1;
  while (low <= high) {
    const middle = (low + high) >>> 1;
    const start = middle * ENTRY_DIGEST_BYTES;
    const order = Buffer.compare(set.subarray(start, start + ENTRY_DIGEST_BYTES), digest);
    if (order === 0) return true;
    if (order < 0) low = middle + 1;
    else high = middle - 1;
  }
  return false;
}

/** The digest of a set of entries, whatever their order ({@link SET_DIGEST_BYTES} bytes). */
export function timetableDigest(entries: readonly TimetableEntry[], digestOf: EntryDigester = entryDigest): Buffer {
  return createHash('sha256').update(entryDigestSet(entries, digestOf)).digest().subarray(0, SET_DIGEST_BYTES);
}

/** The entries a subscriber of `subgroup` sees: picked by the feed's own subgroup option (event-text.ts). */
export function subgroupView(entries: readonly TimetableEntry[], subgroup: number): TimetableEntry[] {
  return entries.filter((entry) => keepsEntry(entry, { subgroup }));
}

/**
 * The digests of a group's timetable as its students may get it: the whole, then each subgroup of
 * {@link VIEW_SUBGROUPS} (its classes and those of no subgroup), packed one after another.
 */
export function groupViewDigests(
  entries: readonly TimetableEntry[],
  digestOf: EntryDigester = rememberingEntryDigest(),
): Buffer {
  const views = [entries, ...VIEW_SUBGROUPS.map((subgroup) => subgroupView(entries, subgroup))];
  return Buffer.concat(views.map((view) => timetableDigest(view, digestOf)));
}

/** Whether a timetable's digest is one of the packed view digests of {@link groupViewDigests}. */
export function matchesView(views: Buffer, digest: Buffer): boolean {
  for (let start = 0; start + SET_DIGEST_BYTES <= views.length; start += SET_DIGEST_BYTES)
    if (views.subarray(start, start + SET_DIGEST_BYTES).equals(digest)) return true;
  return false;
}

/**
 * The entries a publication changed: those of `before` and `after` (by id) that are new, gone, or differ in a
 * digested field, each as it was and as it is. A class's teachers and groups, old and new, are in them.
 */
export function changedEntries(
  before: ReadonlyMap<number, TimetableEntry>,
  after: ReadonlyMap<number, TimetableEntry>,
): { before: TimetableEntry[]; after: TimetableEntry[] } {
  const changed = { before: [] as TimetableEntry[], after: [] as TimetableEntry[] };
  for (const id of new Set([...before.keys(), ...after.keys()])) {
    const old = before.get(id);
    const now = after.get(id);
    if (old !== undefined && now !== undefined && entryDigest(old).equals(entryDigest(now))) continue;
    if (old !== undefined) changed.before.push(old);
    if (now !== undefined) changed.after.push(now);
  }
  return changed;
}
