import { createHash } from 'node:crypto';
import { type DayNumber, dayNumber, isoDate, nextWeekday } from './dates.ts';
import { type EntryText, entryText, keepsEntry } from './event-text.ts';
import { mergeRows } from './merge-rows.ts';
import { type WeekParity, weekParity } from './parity.ts';
import { PlanIndex, planLines } from './study-plan.ts';
import {
  type EntryProblem,
  EXPANSION_RULES,
  type ExpandOptions,
  type Expansion,
  type Occurrence,
  type TimetableEntry,
} from './types.ts';
import { ZonedTimes } from './zoned-time.ts';

/** The UID of an upstream entry's occurrence on a date: the same across refreshes, restarts and machines. */
export function occurrenceUid(entryId: number, date: string): string {
  return `${entryId}-${date.slice(0, 4)}${date.slice(5, 7)}${date.slice(8, 10)}@timetable-sync`;
}

/**
 * Occurrence content that two entries must share to be the same class (used to collapse duplicates), and
 * what the SEQUENCE digest covers. CATEGORIES and the zone are shown by calendars too, so they belong here:
 * without them a kind changed only in case (template "{subject}") or a new TIMEZONE kept the old SEQUENCE.
 */
function contentKey(entry: TimetableEntry, text: EntryText, timezone: string): string {
  return JSON.stringify([
    text.summary,
    text.location,
    text.description,
    text.categories,
    entry.beginTime,
    entry.endTime,
    timezone,
  ]);
}

/** The dates part of an entry, which decides where it occurs (not what a calendar shows). */
function occurrenceRule(entry: TimetableEntry): string {
  return `|${entry.startDate}|${entry.finishDate}|${entry.weekday}|${entry.weekType}`;
}

/** Digest of what a calendar shows for an occurrence; the date is part of the uid, so it is left out. */
function contentHash(key: string, status: string): string {
  return createHash('sha1').update(key).update(status).digest('hex').slice(0, 16);
}

/** Every date an entry occurs on, in order (ISO dates). Pure: the rule of docs/design.md, nothing more. */
export function occurrenceDates(
  entry: Pick<TimetableEntry, 'startDate' | 'finishDate' | 'weekday' | 'weekType'>,
  parity: WeekParity,
  holidays: ReadonlySet<string>,
  window: { from?: DayNumber | undefined; to?: DayNumber | undefined } = {},
): string[] {
  const first = Math.max(dayNumber(entry.startDate), window.from ?? -Infinity);
  const last = Math.min(dayNumber(entry.finishDate), window.to ?? Infinity);
  const dates: string[] = [];
  for (let day = nextWeekday(first, entry.weekday); day <= last; day += 7) {
    if (entry.weekType !== 0 && parity.isOdd(day) !== (entry.weekType === 1)) continue;
    const date = isoDate(day);
    if (!holidays.has(date)) dates.push(date);
  }
  return dates;
}

/**
 * Expands timetable entries into concrete occurrences in `options.timezone`. Pure: the same entries and
 * options give the same result. Rows of one class for several groups are one entry first ({@link mergeRows});
 * entries repeated under one id are used once; occurrences of different entries with identical content on the
 * same date collapse into the one with the lowest entry id.
 */
export function expand(
  entries: readonly TimetableEntry[],
  options: ExpandOptions,
  zonedTimes = ZonedTimes.shared(options.timezone),
): Expansion {
  const rules = options.rules ?? EXPANSION_RULES;
  const parity = weekParity(options.anchors ?? [], rules);
  const holidays = new Set(options.holidays ?? []);
  const window = {
    from: options.from === undefined ? undefined : dayNumber(options.from),
    to: options.to === undefined ? undefined : dayNumber(options.to),
  };
  const occurrences: Occurrence[] = [];
  // Dates already taken by each content digest: identical classes of different entries collapse.
  const datesByContent = new Map<string, Set<string>>();
  const problems: EntryProblem[] = [];
  const keyById = new Map<number, string>();
  const plan = options.studyPlan === undefined ? undefined : new PlanIndex(options.studyPlan);
  // Merged before the subscriber's filters: they read the kind and note, which the merged rows share.
  // Rules 1 knew nothing of merged rows: a feed published by them is re-expanded row by row.
  const ordered = rules === 1 ? [...entries].sort((a, b) => a.id - b.id) : mergeRows(entries, options.classIds);
  for (const entry of ordered) {
    if (!keepsEntry(entry, options.subscriber)) continue;
    const text = entryText(entry, options.subscriber, planLines(entry, plan), options.wording);
    const content = contentKey(entry, text, options.timezone);
    const key = content + occurrenceRule(entry);
    const seen = keyById.get(entry.id);
    if (seen !== undefined) {
      // One id, two rows: identical rows are one class; different ones cannot both keep the id's UIDs.
      if (seen !== key)
        problems.push({
          entryId: entry.id,
          index: -1,
          field: 'id',
          reason: `id ${entry.id} appears again with different content; only its first row is used`,
        });
      continue;
    }
    keyById.set(entry.id, key);
    const hash = contentHash(content, 'CONFIRMED');
    let taken = datesByContent.get(hash);
    if (taken === undefined) {
      taken = new Set();
      datesByContent.set(hash, taken);
    }
    const previousByUid = options.previous;
    for (const date of occurrenceDates(entry, parity, holidays, window)) {
      if (taken.has(date)) continue;
      taken.add(date);
      const uid = occurrenceUid(entry.id, date);
      const previous = previousByUid === undefined ? undefined : previousByUid.get(uid);
      const [startUtc, endUtc] = zonedTimes.spanUtc(date, entry.beginTime, entry.endTime);
      occurrences.push({
        uid,
        entryId: entry.id,
        date,
        beginTime: entry.beginTime,
        endTime: entry.endTime,
        timezone: options.timezone,
        startUtc,
        endUtc,
        summary: text.summary,
        location: text.location,
        description: text.description,
        categories: text.categories,
        status: 'CONFIRMED',
        hash,
        sequence: previous === undefined ? 0 : previous.hash === hash ? previous.sequence : previous.sequence + 1,
      });
    }
  }
  occurrences.sort(compareOccurrences);
  return { occurrences, problems };
}

/** Start time, then uid: a total, deterministic order. */
export function compareOccurrences(a: Occurrence, b: Occurrence): number {
  return a.startUtc - b.startUtc || (a.uid < b.uid ? -1 : a.uid > b.uid ? 1 : 0);
}
