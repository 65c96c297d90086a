/**
 * What a refresh publishes, worked out from what was published before (pure): sequences, cancelled
 * occurrences kept for a while, ended occurrences kept as published, the change record and the mass-deletion
 * check.
 */

import { applyTitleTemplate, keepsEntry } from '../timetable/event-text.ts';
import { compareOccurrences } from '../timetable/expand.ts';
import type {
  ChangeRecord,
  ExpansionSettings,
  OccurrenceBrief,
  PublishedState,
  Tombstone,
} from '../timetable/publication.ts';
import type { Occurrence, PreviousOccurrence, SubscriberOptions, TimetableEntry } from '../timetable/types.ts';
import { freezeHistory, frozenOccurrences, HistoryMask } from './history.ts';

/** How many items of each kind a change record lists. */
export const CHANGE_LIST_LIMIT = 50;

/** Everything a publication is computed from. */
export interface PublicationInput {
  previous: PublishedState | undefined;
  /**
   * The live occurrences the previous publication showed: its snapshot expanded with its own expansion
   * settings, its history applied (for the history, the change record and new tombstones); empty on a first
   * publish.
   */
  previousOccurrences: readonly Occurrence[];
  /**
   * The previous snapshot's entries by id: every class as published (merged rows) and every row of it, so that
   * the history knows each id that may own a class later.
   */
  previousEntries: ReadonlyMap<number, TimetableEntry>;
  /** The new expansion, with sequences already raised against `previous.occurrences`; no history applied. */
  next: readonly Occurrence[];
  snapshotHash: string;
  settingsHash: string;
  /** What `next` was expanded with, and the class ids of its merged rows (as stored). */
  expansion: ExpansionSettings;
  classIds?: Record<string, number> | undefined;
  now: number;
  /** How long a removed future occurrence stays in feeds as cancelled. */
  cancelledRetentionMs: number;
}

/** The outcome of {@link diffPublication}. */
export interface PublicationDiff {
  state: PublishedState;
  /** Live, frozen and cancelled occurrences, sorted by start then uid: what the default feed shows. */
  occurrences: Occurrence[];
  /** Undefined when nothing a calendar shows changed (first publications included as all-added). */
  change: ChangeRecord | undefined;
  /** The same change uncapped, as whole occurrences (what change notifications are made of). */
  pairs: ChangePairs;
  /** Previously published future occurrences, and how many of them the new timetable drops. */
  futureBefore: number;
  futureRemoved: number;
}

/**
 * Works out the publication of a new expansion. Pure. Occurrences that ended by `now` are history: they stay
 * as the previous publication showed them, and neither tombstones nor the change record speak of them; an
 * occurrence in progress is not history yet.
 */
export function diffPublication(input: PublicationInput): PublicationDiff {
  const { now } = input;
  const frozen =
    input.previous === undefined
      ? []
      : freezeHistory({
          frozen: input.previous.frozen ?? [],
          before: input.previousOccurrences,
          after: input.next,
          previousEntries: input.previousEntries,
          now,
        });
  const next = new HistoryMask(frozen).filter(input.next);
  const nextByUid = new Map(next.map((occurrence) => [occurrence.uid, occurrence]));
  const previousByUid = new Map(input.previousOccurrences.map((occurrence) => [occurrence.uid, occurrence]));
  const publishedUids = new Set(Object.keys(input.previous?.occurrences ?? {}));

  const tombstones = (input.previous?.tombstones ?? []).filter(
    (tomb) => isKept(tomb, now) && !nextByUid.has(tomb.occurrence.uid),
  );
  // Built only if a published occurrence is missing from the new expansion (never on a first publication).
  let shownAs: Set<string> | undefined;
  const tombstoned = new Set(tombstones.map((tomb) => tomb.occurrence.uid));
  let futureBefore = 0;
  let futureRemoved = 0;
  for (const uid of publishedUids) {
    const before = previousByUid.get(uid);
    if (!before || before.endUtc <= now) continue;
    futureBefore += 1;
    // Under another uid at the same time, with the same title and place, the class still takes place: it
    // was re-identified (rows merged, a twin taking over), not cancelled.
    if (nextByUid.has(uid)) continue;
    shownAs ??= new Set(next.map(sameClass));
    if (shownAs.has(sameClass(before))) continue;
    futureRemoved += 1;
    const entry = input.previousEntries.get(before.entryId);
    if (entry && !tombstoned.has(uid)) {
      const published = input.previous?.occurrences[uid];
      tombstones.push({
        // The digest differs from any live one, so that a class coming back gets a higher SEQUENCE again.
        occurrence: {
          ...before,
          status: 'CANCELLED',
          hash: `${before.hash}-cancelled`,
          sequence: (published?.sequence ?? before.sequence) + 1,
        },
        entry,
        removedAt: now,
        expiresAt: now + input.cancelledRetentionMs,
      });
    }
  }

  const occurrences = [...next, ...frozenOccurrences(frozen), ...tombstones.map((tomb) => tomb.occurrence)].sort(
    compareOccurrences,
  );
  const state: PublishedState = {
    stamp: now,
    snapshotHash: input.snapshotHash,
    settingsHash: input.settingsHash,
    occurrences: publishedOccurrences(next),
    tombstones,
    ...(frozen.length > 0 ? { frozen } : {}),
    expansion: input.expansion,
    ...(input.classIds ? { classIds: input.classIds } : {}),
  };
  // The change record says what changes from now on: occurrences that ended are history, whatever happened.
  const upcoming = (occurrence: Occurrence) => occurrence.endUtc > now;
  const pairs = pairChanges(input.previousOccurrences.filter(upcoming), next.filter(upcoming));
  return {
    state,
    occurrences,
    change: changeRecord(pairs, now),
    pairs,
    futureBefore,
    futureRemoved,
  };
}

/** What expansion needs to raise sequences: every published occurrence, cancelled ones included. */
export function previousOccurrences(state: PublishedState | undefined): Map<string, PreviousOccurrence> {
  const previous = new Map(Object.entries(state?.occurrences ?? {}));
  for (const tomb of state?.tombstones ?? [])
    previous.set(tomb.occurrence.uid, { hash: tomb.occurrence.hash, sequence: tomb.occurrence.sequence });
  return previous;
}

/** A refresh that drops more than half of the published future occurrences must be confirmed first. */
export function isMassDeletion(diff: Pick<PublicationDiff, 'futureBefore' | 'futureRemoved'>): boolean {
  return diff.futureBefore > 0 && diff.futureRemoved * 2 > diff.futureBefore;
}

/**
 * Whether a cancelled class is still shown at `now`. One still to come leaves after the retention; one whose
 * time came before it left is history and stays for good (calendars keep it as cancelled, and Google is never
 * asked to delete an ended event).
 */
export function isKept(tomb: Tombstone, now: number): boolean {
  return tomb.expiresAt > now || tomb.occurrence.endUtc <= tomb.expiresAt;
}

/** The earliest moment a tombstone expires, when the feed must be rendered again without it. */
export function nextExpiry(state: PublishedState): number | undefined {
  return state.tombstones.reduce<number | undefined>(
    (min, tomb) =>
      tomb.occurrence.endUtc > tomb.expiresAt && (min === undefined || tomb.expiresAt < min) ? tomb.expiresAt : min,
    undefined,
  );
}

/** The uid → digest and sequence map of a publication, in the occurrences' order (built in a loop: cheaper). */
function publishedOccurrences(next: readonly Occurrence[]): PublishedState['occurrences'] {
  const published: PublishedState['occurrences'] = {};
  for (const occurrence of next) published[occurrence.uid] = { hash: occurrence.hash, sequence: occurrence.sequence };
  return published;
}

/** What makes two occurrences the same class on a calendar: its time, title and place. */
function sameClass(occurrence: Occurrence): string {
  return JSON.stringify([occurrence.startUtc, occurrence.endUtc, occurrence.summary, occurrence.location]);
}

/**
 * The cancelled occurrences a subscriber sees: tombstones whose entry the subscriber keeps, titled with the
 * subscriber's template.
 */
export function tombstonesFor(tombstones: readonly Tombstone[], subscriber: SubscriberOptions): Occurrence[] {
  return tombstones
    .filter((tomb) => keepsEntry(tomb.entry, subscriber))
    .map((tomb) =>
      subscriber.titleTemplate === undefined
        ? tomb.occurrence
        : { ...tomb.occurrence, summary: applyTitleTemplate(subscriber.titleTemplate, tomb.entry) },
    );
}

function brief(occurrence: Occurrence): OccurrenceBrief {
  return {
    uid: occurrence.uid,
    date: occurrence.date,
    begin: occurrence.beginTime,
    end: occurrence.endTime,
    summary: occurrence.summary,
    location: occurrence.location,
  };
}

/** Occurrences added, removed, moved (time, date or place) and otherwise changed between two expansions. */
export interface ChangePairs {
  added: Occurrence[];
  removed: Occurrence[];
  /** `[before, after]`. */
  moved: [Occurrence, Occurrence][];
  changed: [Occurrence, Occurrence][];
}

/** Added, removed, moved and changed occurrences between two expansions; undefined when they show the same. */
export function describeChange(
  before: readonly Occurrence[],
  after: readonly Occurrence[],
  at: number,
): ChangeRecord | undefined {
  return changeRecord(pairChanges(before, after), at);
}

/**
 * Pairs two expansions' occurrences, uncapped. Same uid with another digest: moved when its time or place
 * differs, else changed; an entry losing a date and gaining another: moved, paired in date order; the rest
 * removed or added.
 */
export function pairChanges(before: readonly Occurrence[], after: readonly Occurrence[]): ChangePairs {
  const beforeByUid = new Map(before.map((occurrence) => [occurrence.uid, occurrence]));
  const afterByUid = new Map(after.map((occurrence) => [occurrence.uid, occurrence]));
  const moved: ChangePairs['moved'] = [];
  const changed: ChangePairs['changed'] = [];
  for (const next of after) {
    const previous = beforeByUid.get(next.uid);
    if (!previous || previous.hash === next.hash) continue;
    const place =
      previous.startUtc !== next.startUtc || previous.endUtc !== next.endUtc || previous.location !== next.location;
    (place ? moved : changed).push([previous, next]);
  }
  const gone = before.filter((occurrence) => !afterByUid.has(occurrence.uid));
  const fresh = after.filter((occurrence) => !beforeByUid.has(occurrence.uid));
  // One entry losing a date and gaining another is a moved class: pair them in date order.
  const freshByEntry = new Map<number, Occurrence[]>();
  for (const occurrence of fresh) {
    const list = freshByEntry.get(occurrence.entryId);
    if (list === undefined) freshByEntry.set(occurrence.entryId, [occurrence]);
    else list.push(occurrence);
  }
  const removed: Occurrence[] = [];
  const paired = new Set<string>();
  for (const occurrence of gone) {
    const candidate = freshByEntry.get(occurrence.entryId)?.shift();
    if (candidate) {
      moved.push([occurrence, candidate]);
      paired.add(candidate.uid);
    } else {
      removed.push(occurrence);
    }
  }
  const added = fresh.filter((occurrence) => !paired.has(occurrence.uid));
  return { added, removed, moved, changed };
}

/** The change log's record of some pairs: exact counts, at most {@link CHANGE_LIST_LIMIT} of each kind listed. */
function changeRecord(pairs: ChangePairs, at: number): ChangeRecord | undefined {
  const { added, removed, moved, changed } = pairs;
  if (added.length + removed.length + moved.length + changed.length === 0) return undefined;
  const briefPair = ([before, after]: [Occurrence, Occurrence]) => ({ before: brief(before), after: brief(after) });
  return {
    at,
    counts: { added: added.length, removed: removed.length, moved: moved.length, changed: changed.length },
    added: added.slice(0, CHANGE_LIST_LIMIT).map(brief),
    removed: removed.slice(0, CHANGE_LIST_LIMIT).map(brief),
    moved: moved.slice(0, CHANGE_LIST_LIMIT).map(briefPair),
    changed: changed.slice(0, CHANGE_LIST_LIMIT).map(briefPair),
  };
}
