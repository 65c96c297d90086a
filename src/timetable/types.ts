import type { EntryProblem, TimetableEntry } from '../upstream/schemas.ts';
import type { StudyPlanNotes } from './study-plan.ts';

export type { EntryProblem, TimetableEntry };

/** Whether an occurrence takes place; cancelled ones stay in feeds for a while so people see the change. */
export type OccurrenceStatus = 'CONFIRMED' | 'CANCELLED';

/** One concrete, dated class: what feeds and Google push deliver. Plain data, safe to store as JSON. */
export interface Occurrence {
  /** Stable across refreshes and restarts: the upstream entry id and the date. */
  uid: string;
  entryId: number;
  /** Local calendar date in the timetable's zone, `YYYY-MM-DD`. */
  date: string;
  /** Local wall-clock times in `timezone`, `HH:MM`. */
  beginTime: string;
  endTime: string;
  timezone: string;
  /** The same instants in UTC, epoch milliseconds. */
  startUtc: number;
  endUtc: number;
  summary: string;
  location: string;
  description: string;
  categories: readonly string[];
  status: OccurrenceStatus;
  /** Digest of everything a calendar shows; a change of it raises `sequence`. */
  hash: string;
  sequence: number;
}

/** What the previous publication said about an occurrence (the caller keeps it; the engine stays pure). */
export interface PreviousOccurrence {
  hash: string;
  sequence: number;
}

/** Per-subscriber choices, exposed later as feed query parameters. */
export interface SubscriberOptions {
  /** Keep only this subgroup's classes (matched in the note); classes without a subgroup stay. */
  subgroup?: number;
  /** Class kinds to leave out (compared case-insensitively), e.g. `['лекция']`. */
  excludeKinds?: readonly string[];
  /** Add a reminder this many minutes before each class. */
  alarmMinutes?: number;
  /** SUMMARY template with `{subject}`, `{kind}`, `{room}`, `{building}`, `{teacher}`, `{groups}`, `{note}`. */
  titleTemplate?: string;
}

/** How a timetable's events are worded, by whose timetable it is (see event-text.ts). */
export interface EventWording {
  /** The title template when the subscriber chose none. */
  title: string;
  /** Whether the description names the teacher (a teacher's own timetable need not). */
  teacherLine: boolean;
}

/** Everything expansion depends on besides the entries; clock and randomness are not needed at all. */
export interface ExpandOptions {
  /** IANA zone of the wall-clock times. */
  timezone: string;
  /**
   * The term starts in force (ISO dates), already resolved: configured (`WEEK_PARITY_ANCHORS`) or inferred
   * from the timetables (see terms.ts); empty for the default rule (1 September of every year).
   */
  anchors?: readonly string[] | undefined;
  /** ISO dates without classes. */
  holidays?: Iterable<string> | undefined;
  /** Only occurrences on or after / on or before these ISO dates. */
  from?: string | undefined;
  to?: string | undefined;
  /** Hashes and sequences published before, keyed by uid. */
  previous?: ReadonlyMap<string, PreviousOccurrence> | undefined;
  subscriber?: SubscriberOptions | undefined;
  /** Row id → the id its class was published under, so that a merged class keeps its UIDs (see merge-rows.ts). */
  classIds?: ReadonlyMap<number, number> | undefined;
  /** Which rules to expand by; absent: the current ones ({@link EXPANSION_RULES}). */
  rules?: ExpansionRules | undefined;
  /** The study plan classes are described with (personal timetables); absent: no plan lines. */
  studyPlan?: StudyPlanNotes | undefined;
  /** How events are worded (a teacher's timetable names the groups); absent: as a group's. */
  wording?: EventWording | undefined;
}

/**
 * Versions of the expansion rules, so that what a feed published is re-expanded exactly as it was. 1: before
 * rows were merged and term starts inferred, each row its own class, and week 1 the week containing the term
 * start whatever its weekday (by default 1 September, or 2 September when that is a Sunday). 2: rows of one
 * class merged, weekend term starts counting from the following week.
 */
export type ExpansionRules = 1 | 2;

/** The rules new publications expand by. */
export const EXPANSION_RULES: ExpansionRules = 2;

/** The outcome of expanding one timetable. */
export interface Expansion {
  /** Sorted by start, then uid. */
  occurrences: Occurrence[];
  /** Entries that could not be used, with the reason. */
  problems: EntryProblem[];
}
