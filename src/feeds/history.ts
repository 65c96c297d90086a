/**
 * The past is history (pure): occurrences that have ended keep what was published, whatever a later refresh
 * or settings change says about them. Only entries whose ended occurrences would otherwise change are kept
 * ("frozen"), as the occurrences the feed showed, so that the stored state stays small.
 */
import { applyTitleTemplate, keepsEntry } from '../timetable/event-text.ts';
import { occurrenceUid } from '../timetable/expand.ts';
import type { StudyPlanNotes } from '../timetable/study-plan.ts';
import type { ExpansionRules, Occurrence, SubscriberOptions, TimetableEntry } from '../timetable/types.ts';
import { ZonedTimes } from '../timetable/zoned-time.ts';

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

/** Which live occurrences the history leaves to the current snapshot. */
export class HistoryMask {
  private readonly cutoffs = new Map<number, number>();
  private readonly uids = new Set<string>();

  constructor(frozen: readonly FrozenEntry[] = []) {
    for (const record of frozen) {
      this.cutoffs.set(record.entryId, Math.max(record.until, this.cutoffs.get(record.entryId) ?? -Infinity));
      for (const group of record.kept) for (const date of Object.keys(group.dates)) this.uids.add(uidOf(record, date));
    }
  }

  /**
   * A live occurrence is shown when it ends after its entry's latest cutoff and its uid is not frozen (a class
   * that already took place on a date keeps that date, even if the new version puts it later that day).
   */
  shows(occurrence: Occurrence): boolean {
    const cutoff = this.cutoffs.get(occurrence.entryId);
    return (cutoff === undefined || occurrence.endUtc > cutoff) && !this.uids.has(occurrence.uid);
  }

  /** Whether an entry id has frozen occurrences or a cutoff. */
  hasHistory(entryId: number): boolean {
    return this.cutoffs.has(entryId);
  }

  /** The live occurrences this history leaves shown. */
  filter(occurrences: readonly Occurrence[]): Occurrence[] {
    if (this.cutoffs.size === 0) return [...occurrences];
    return occurrences.filter((occurrence) => this.shows(occurrence));
  }
}

/** Everything {@link freezeHistory} compares. */
export interface FreezeInput {
  frozen: readonly FrozenEntry[];
  /** The live occurrences the feed showed (the previous expansion, its history applied). */
  before: readonly Occurrence[];
  /** The new expansion, before any history is applied. */
  after: readonly Occurrence[];
  previousEntries: ReadonlyMap<number, TimetableEntry>;
  now: number;
}

/**
 * The history after a publication at `now`: every entry of the previous snapshot whose ended occurrences the
 * new expansion would show differently (other dates, times, texts, or none at all) is frozen as it was shown.
 * Entries new in this snapshot are not frozen: their past was never published, so there is nothing to keep.
 */
export function freezeHistory(input: FreezeInput): FrozenEntry[] {
  const { now } = input;
  const mask = new HistoryMask(input.frozen);
  const before = endedByEntry(input.before, now);
  const after = endedByEntry(mask.filter(input.after), now);
  const frozen = [...input.frozen];
  // An entry that left the timetable and came back has a history too: its past stays what was shown meanwhile.
  const known = new Set([...input.previousEntries.keys(), ...[...after.keys()].filter((id) => mask.hasHistory(id))]);
  for (const entryId of known) {
    const shown = before.get(entryId) ?? [];
    if (signature(shown) === signature(after.get(entryId) ?? [])) continue;
    const entry = shown.length > 0 ? input.previousEntries.get(entryId) : undefined;
    frozen.push({ entryId, ...(entry ? { entry } : {}), until: now, kept: groupsOf(shown) });
  }
  return withoutSuperseded(frozen);
}

/** The frozen occurrences as a subscriber sees them: entries the subscriber keeps, titled with their template. */
export function frozenOccurrences(frozen: readonly FrozenEntry[], subscriber: SubscriberOptions = {}): Occurrence[] {
  const occurrences: Occurrence[] = [];
  for (const record of frozen) {
    const { entry } = record;
    if (entry === undefined || !keepsEntry(entry, subscriber)) continue;
    const title =
      subscriber.titleTemplate === undefined
        ? undefined
        : applyTitleTemplate(subscriber.titleTemplate, entry) || entry.subjectName;
    for (const group of record.kept) {
      const times = ZonedTimes.shared(group.timezone);
      const { dates, ...content } = group;
      for (const [date, sequence] of Object.entries(dates)) {
        const [startUtc, endUtc] = times.spanUtc(date, group.beginTime, group.endTime);
        // A variant retitles the class like a live one, and its SEQUENCE is one higher than the default feed's,
        // as the live expansion of that variant gave it (its digest differs from the published one).
        const retitled = title !== undefined && title !== group.summary;
        occurrences.push({
          ...content,
          uid: uidOf(record, date),
          entryId: record.entryId,
          date,
          startUtc,
          endUtc,
          summary: retitled ? title : group.summary,
          status: 'CONFIRMED',
          sequence: retitled ? sequence + 1 : sequence,
        });
      }
    }
  }
  return occurrences;
}

function uidOf(record: FrozenEntry, date: string): string {
  return occurrenceUid(record.entryId, date);
}

/** A record keeping nothing only says where its id's cutoff is: a later record of the same id says it again. */
function withoutSuperseded(frozen: readonly FrozenEntry[]): FrozenEntry[] {
  const latest = new Map<number, number>();
  for (const record of frozen) latest.set(record.entryId, Math.max(record.until, latest.get(record.entryId) ?? 0));
  return frozen.filter((record) => record.kept.length > 0 || record.until === latest.get(record.entryId));
}

function endedByEntry(occurrences: readonly Occurrence[], now: number): Map<number, Occurrence[]> {
  const byEntry = new Map<number, Occurrence[]>();
  for (const occurrence of occurrences) {
    if (occurrence.endUtc > now) continue;
    const list = byEntry.get(occurrence.entryId);
    if (list === undefined) byEntry.set(occurrence.entryId, [occurrence]);
    else list.push(occurrence);
  }
  return byEntry;
}

/** What a calendar shows of a list of occurrences, in a stable order. */
function signature(occurrences: readonly Occurrence[]): string {
  return occurrences
    .map((o) => `${o.uid}|${o.hash}|${o.startUtc}|${o.endUtc}|${o.sequence}`)
    .sort()
    .join('\n');
}

function groupsOf(occurrences: readonly Occurrence[]): FrozenGroup[] {
  const groups = new Map<string, FrozenGroup>();
  for (const o of occurrences) {
    const key = JSON.stringify([o.hash, o.beginTime, o.endTime, o.timezone, o.summary]);
    let group = groups.get(key);
    if (group === undefined) {
      group = {
        beginTime: o.beginTime,
        endTime: o.endTime,
        timezone: o.timezone,
        summary: o.summary,
        location: o.location,
        description: o.description,
        categories: o.categories,
        hash: o.hash,
        dates: {},
      };
      groups.set(key, group);
    }
    group.dates[o.date] = o.sequence;
  }
  return [...groups.values()];
}
