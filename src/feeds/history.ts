/**
 * The past is history (pure): occurrences that have ended keep what was published, whatever a later refresh
 * or settings change says about them. Only entries whose ended occurrences would otherwise change are kept
 * ("frozen"), as the occurrences the feed showed, so that the stored state stays small.
 */
import { applyTitleTemplate, keepsEntry } from '../timetable/event-text.ts';
import { occurrenceUid } from '../timetable/expand.ts';
import type { FrozenEntry, FrozenGroup } from '../timetable/publication.ts';
import type { Occurrence, SubscriberOptions, TimetableEntry } from '../timetable/types.ts';
import { ZonedTimes } from '../timetable/zoned-time.ts';

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
