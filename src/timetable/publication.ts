/**
 * What a publication of a feed records, as the stores keep it: the published state beside the snapshot (live
 * occurrences, cancelled ones kept a while, ended ones frozen as published, what they were expanded with) and
 * the records of the change log. feeds/publication-diff.ts and feeds/history.ts work them out (pure).
 */
import type { SourceKey } from './source.ts';
import type { StudyPlanNotes } from './study-plan.ts';
import type { EventWording, ExpansionRules, Occurrence, PreviousOccurrence, TimetableEntry } from './types.ts';

/** A future occurrence that disappeared from the timetable; it stays in feeds as cancelled until `expiresAt`. */
export interface Tombstone {
  /** The occurrence as last published, with status CANCELLED and a raised sequence. */
  occurrence: Occurrence;
  /** The entry it came from, so that subscriber options (subgroup, kinds, title) still apply to it. */
  entry: TimetableEntry;
  removedAt: number;
  expiresAt: number;
}

/** What the feed of a source last published; stored as JSON beside the snapshot. */
export interface PublishedState {
  /** Publication time: the DTSTAMP of every event and the feed's Last-Modified. */
  stamp: number;
  /** Digest of the snapshot this was rendered from. */
  snapshotHash: string;
  /** Digest of the settings that shape the feed (zone, term starts, holidays, renderer version). */
  settingsHash: string;
  /** Live occurrences by uid: content digest and sequence. */
  occurrences: Record<string, PreviousOccurrence>;
  tombstones: Tombstone[];
  /** Ended occurrences kept as published where the current snapshot would show them otherwise (absent: none). */
  frozen?: FrozenEntry[] | undefined;
  /**
   * What the live occurrences were expanded with: zone, term starts (configured or inferred for the whole
   * deployment) and holidays, so that variants, Google pushes and the next publication expand alike; absent in
   * states stored before it was recorded (then: the configuration).
   */
  expansion?: ExpansionSettings | undefined;
  /**
   * Row id → the id of its class, for rows published under another row's id (merged rows, see merge-rows.ts);
   * absent: every row under its own id. Kept so that a class keeps its UIDs when the row that gave them leaves.
   */
  classIds?: Record<string, number> | undefined;
}

/** An occurrence as a change record shows it. */
export interface OccurrenceBrief {
  uid: string;
  date: string;
  begin: string;
  end: string;
  summary: string;
  location: string;
}

/** How many occurrences a change added, removed, moved and changed (exact, however long the lists). */
export interface ChangeCounts {
  added: number;
  removed: number;
  moved: number;
  changed: number;
}

/**
 * The refresh that published a change, and so found it first for this source: its reason (a `RefreshReason` of
 * jobs/contract.ts) and, for a `related` refresh, the source whose change it followed.
 */
export interface FoundBy {
  reason: string;
  source?: SourceKey | undefined;
}

/** One entry of a source's change log. Lists are capped (`CHANGE_LIST_LIMIT`, feeds/publication-diff.ts); the counts are exact. */
export interface ChangeRecord {
  at: number;
  counts: ChangeCounts;
  added: OccurrenceBrief[];
  removed: OccurrenceBrief[];
  /** Same class at another time or place: same uid with new times or room, or one entry's date replaced by another. */
  moved: { before: OccurrenceBrief; after: OccurrenceBrief }[];
  /** Same occurrence, other details (teacher, title, note). */
  changed: { before: OccurrenceBrief; after: OccurrenceBrief }[];
  /** Which refresh published the change (absent in records stored before it was kept). */
  foundBy?: FoundBy | undefined;
}

/** What an expansion was made with besides the entries: recorded so that a settings change cannot move the past. */
export interface ExpansionSettings {
  timezone: string;
  /** The term starts week parity counted from. */
  termStarts: readonly string[];
  holidays: readonly string[];
  /**
   * The expansion rules (see `ExpansionRules`). Only states stored before the settings were recorded lack this
   * whole record (they are re-expanded by rules 1); the first version that recorded it left out `rules`, and
   * expanded by rules 2.
   */
  rules?: ExpansionRules | undefined;
  /** The study plan notes classes were described with (personal timetables with a plan); absent: none. */
  studyPlan?: StudyPlanNotes | undefined;
  /**
   * How events were worded, when not as a group's (a teacher's timetable), so that the next publication sees what
   * this one showed and raises SEQUENCE where the wording changed; absent: as a group's.
   */
  wording?: EventWording | undefined;
}

/** Occurrences of one frozen entry version that share their content, as published. */
export interface FrozenGroup {
  beginTime: string;
  endTime: string;
  timezone: string;
  summary: string;
  location: string;
  description: string;
  categories: readonly string[];
  hash: string;
  /** ISO date → SEQUENCE as published. */
  dates: Record<string, number>;
}

/**
 * The ended occurrences of one entry id as the feed showed them until `until`, when a publication would have
 * changed them. Later versions of the entry show only occurrences ending after `until`.
 */
export interface FrozenEntry {
  entryId: number;
  /** The version these occurrences came from, so that subscriber options apply to them; absent when none are kept. */
  entry?: TimetableEntry | undefined;
  until: number;
  kept: FrozenGroup[];
}
