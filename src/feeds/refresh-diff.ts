/**
 * The pure part of a refresh: a new timetable compared with what the source's feed published before, exactly
 * as the refresh job publishes it (tests compare with this function too, so that they test what production does).
 */
import type { Config } from '../config.ts';
import type { Snapshot } from '../store/snapshot-store.ts';
import { expand } from '../timetable/expand.ts';
import { mergeRows, mergeRowsWithIds, publishedClassIds, storedClassIds } from '../timetable/merge-rows.ts';
import type { PublishedState } from '../timetable/publication.ts';
import type { StudyPlanNotes } from '../timetable/study-plan.ts';
import type { EventWording, TimetableEntry } from '../timetable/types.ts';
import {
  expandOptions,
  expansionSettings,
  type FeedSettings,
  publishedExpansion,
  shownOccurrences,
} from './build-feed.ts';
import { diffPublication, type PublicationDiff } from './publication-diff.ts';

/** Everything a refresh is compared from. */
export interface RefreshDiffInput {
  settings: FeedSettings & Pick<Config, 'cancelledRetentionMs'>;
  /** What is stored for the source: the last snapshot and what its feed published (both absent at first). */
  snapshot: Pick<Snapshot, 'entries'> | undefined;
  published: PublishedState | undefined;
  /** The new timetable and its digests; the deployment's term starts with it counted. */
  entries: readonly TimetableEntry[];
  snapshotHash: string;
  settingsHash: string;
  termStarts: readonly string[];
  /** The study plan notes the new timetable is described with (a personal timetable with a plan). */
  studyPlan?: StudyPlanNotes | undefined;
  /** How the new publication words its events (a teacher's timetable names the groups); absent: as a group's. */
  wording?: EventWording | undefined;
  now: number;
}

/** A refresh's publication plan, with the entries its occurrences came from (change notifications read them). */
export interface RefreshDiff extends PublicationDiff {
  /** The previous snapshot's rows and classes as published, by id (a class wins an id both have). */
  entriesBefore: ReadonlyMap<number, TimetableEntry>;
  /** The new timetable's rows and merged classes, by id, the same way. */
  entriesAfter: ReadonlyMap<number, TimetableEntry>;
}

/**
 * Plans the publication of a new timetable. Its rows are merged under the class ids the previous publication
 * used, so that a class keeps its UIDs when the row that gave them leaves or a lower row joins; the previous
 * publication is re-expanded by its own rules, so that an upgrade moves nothing that has ended.
 */
export function diffRefresh(input: RefreshDiffInput): RefreshDiff {
  const { snapshot, published, settings } = input;
  const previousRows = snapshot?.entries ?? [];
  const previousIds = publishedClassIds(previousRows, published?.classIds);
  const previousRules = publishedExpansion(published, settings).rules;
  const previousClasses = previousRules === 1 ? previousRows : mergeRows(previousRows, previousIds);
  const expansion = expansionSettings(settings, input.termStarts, input.studyPlan, input.wording);
  const { classIds } = mergeRowsWithIds(input.entries, previousIds);
  // Every row and every class as published (the class wins an id both have): a merged class keeps all its
  // groups for `{groups}`, and the history knows each row id that may own a class later.
  const entriesBefore = new Map([...previousRows, ...previousClasses].map((entry) => [entry.id, entry]));
  const entriesAfter = new Map(
    [...input.entries, ...mergeRows(input.entries, classIds)].map((entry) => [entry.id, entry]),
  );
  const diff = diffPublication({
    previous: published,
    previousOccurrences: snapshot ? shownOccurrences(snapshot, published, settings) : [],
    previousEntries: entriesBefore,
    next: expand(input.entries, expandOptions(expansion, classIds, published)).occurrences,
    snapshotHash: input.snapshotHash,
    settingsHash: input.settingsHash,
    expansion,
    classIds: storedClassIds(classIds),
    now: input.now,
    cancelledRetentionMs: settings.cancelledRetentionMs,
  });
  return { ...diff, entriesBefore, entriesAfter };
}
