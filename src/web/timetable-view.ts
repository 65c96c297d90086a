/**
 * What a timetable's page shows of its classes (pure): this week's and next week's occurrences exactly as the
 * feed publishes them (same expansion, history, cancellations and subscriber options), each with the fields of
 * the class it came from, grouped by day, and each week labelled odd or even by the term starts the feed was
 * expanded with, so that the page and the calendar never disagree about a week.
 */
import { type FeedSettings, feedOccurrences, publishedExpansion } from '../feeds/build-feed.ts';
import type { Snapshot } from '../store/snapshot-store.ts';
import { type DayNumber, dayNumber, isoDate, mondayOf } from '../timetable/dates.ts';
import { entryText, keepsEntry, locationOf, teacherName } from '../timetable/event-text.ts';
import { mergeRows, publishedClassIds } from '../timetable/merge-rows.ts';
import { weekParity } from '../timetable/parity.ts';
import type { OccurrenceBrief, PublishedState } from '../timetable/publication.ts';
import type { Occurrence, SubscriberOptions, TimetableEntry } from '../timetable/types.ts';
import { localDate } from '../timetable/zoned-time.ts';

/** One class as a row of the week table. */
export interface ClassRow {
  uid: string;
  date: string;
  beginTime: string;
  endTime: string;
  /** The feed's title of the class (with the subscriber's template). */
  title: string;
  subject: string;
  kind: string;
  location: string;
  teacher: string;
  groups: readonly string[];
  note: string;
  cancelled: boolean;
  /** Where the class was before a recent change moved it. */
  movedFrom?: { date: string; beginTime: string } | undefined;
}

/** One day of a week with its classes, in start order. */
export interface DayView {
  date: string;
  /** ISO weekday: 1 = Monday … 7 = Sunday. */
  weekday: number;
  classes: ClassRow[];
}

/**
 * One week, Monday to Sunday; days without classes are left out, and so are this week's days before today
 * (the page is read for what comes next: the next week is whole).
 */
export interface WeekView {
  monday: string;
  sunday: string;
  odd: boolean;
  /** Week number counted from the term start in force (1 = its first week). */
  number: number;
  current: boolean;
  /** Today's date in the week that holds it (the current one); undefined in the next week. */
  today: string | undefined;
  days: DayView[];
}

/**
 * The weeks of `today` and the next one, with the given rows placed in them: the current week from today on,
 * the next one whole. Parity comes from the term starts the feed was expanded with (`termStarts`, `rules` as
 * published). A week is labelled by its Sunday: when a term starts inside the week, the days from the term
 * start on are counted from it (as the feed expands their classes) while the days before it still count from
 * the previous term, and the label names the new count.
 */
export function weeksOf(
  rows: readonly ClassRow[],
  today: string,
  parity: { termStarts: readonly string[]; rules?: 1 | 2 | undefined },
): WeekView[] {
  const rule = weekParity(parity.termStarts, parity.rules ?? 2);
  const todayNumber = dayNumber(today);
  const first = mondayOf(todayNumber);
  return [first, first + 7].map((monday: DayNumber) => {
    const days: DayView[] = [];
    const current = monday === first;
    for (let day = current ? todayNumber : monday; day < monday + 7; day++) {
      const date = isoDate(day);
      const classes = rows
        .filter((row) => row.date === date)
        .sort((a, b) => (a.beginTime < b.beginTime ? -1 : a.beginTime > b.beginTime ? 1 : 0));
      if (classes.length > 0) days.push({ date, weekday: day - monday + 1, classes });
    }
    return {
      monday: isoDate(monday),
      sunday: isoDate(monday + 6),
      odd: rule.isOdd(monday + 6),
      number: rule.weekNumber(monday + 6),
      current,
      today: current ? today : undefined,
      days,
    };
  });
}

/** What the weeks of a page are made from. */
export interface TimetableWeeksInput {
  snapshot: Pick<Snapshot, 'entries'>;
  published: PublishedState;
  settings: FeedSettings;
  options: SubscriberOptions;
  /** Recent change records' moves, newest first: a moved class is marked with where it was. */
  moves: readonly { before: OccurrenceBrief; after: OccurrenceBrief }[];
  now: number;
}

/**
 * This week's classes from today on and next week's, of a published timetable, as its feed (with `options`)
 * shows them.
 */
export function timetableWeeks(input: TimetableWeeksInput): WeekView[] {
  const { snapshot, published, settings } = input;
  const today = localDate(input.now, settings.timezone);
  const to = isoDate(mondayOf(dayNumber(today)) + 13);
  const shown = feedOccurrences(snapshot, published, settings, input.options).filter(
    (occurrence) => occurrence.date >= today && occurrence.date <= to,
  );
  const entries = entriesById(snapshot, published);
  const movedFrom = new Map<string, OccurrenceBrief>();
  for (const move of input.moves) if (!movedFrom.has(move.after.uid)) movedFrom.set(move.after.uid, move.before);
  const rows = shown.map((occurrence) => classRow(occurrence, entries.get(occurrence.entryId), movedFrom));
  const expansion = publishedExpansion(published, settings);
  return weeksOf(rows, today, { termStarts: expansion.termStarts, rules: expansion.rules });
}

/** The class behind each occurrence's entry id: merged classes of the snapshot, then cancelled and frozen ones. */
function entriesById(snapshot: Pick<Snapshot, 'entries'>, published: PublishedState): Map<number, TimetableEntry> {
  const byId = new Map<number, TimetableEntry>();
  for (const record of published.frozen ?? []) if (record.entry) byId.set(record.entryId, record.entry);
  for (const tomb of published.tombstones) byId.set(tomb.occurrence.entryId, tomb.entry);
  const merged = mergeRows(snapshot.entries, publishedClassIds(snapshot.entries, published.classIds));
  for (const entry of merged) byId.set(entry.id, entry);
  return byId;
}

/** A table row of an occurrence; without its class (never expected), the occurrence's own texts. */
export function classRow(
  occurrence: Occurrence,
  entry: TimetableEntry | undefined,
  movedFrom: ReadonlyMap<string, OccurrenceBrief> = new Map(),
): ClassRow {
  const before = movedFrom.get(occurrence.uid);
  const moved =
    before !== undefined && (before.date !== occurrence.date || before.begin !== occurrence.beginTime)
      ? { date: before.date, beginTime: before.begin }
      : undefined;
  return {
    uid: occurrence.uid,
    date: occurrence.date,
    beginTime: occurrence.beginTime,
    endTime: occurrence.endTime,
    title: occurrence.summary,
    subject: entry?.subjectName ?? occurrence.summary,
    kind: entry?.kind ?? occurrence.categories[0] ?? '',
    location: entry ? locationOf(entry) : occurrence.location,
    teacher: entry ? teacherName(entry) : '',
    groups: entry?.groups ?? [],
    note: entry?.note ?? '',
    cancelled: occurrence.status === 'CANCELLED',
    movedFrom: moved,
  };
}

/** How one event of the feed looks with the subscriber's options. */
export interface EventPreview {
  title: string;
  location: string;
  description: string;
  /** Minutes before the class, when the options ask for a reminder. */
  alarmMinutes: number | null;
  /** The class's day and time, as in the week table. */
  weekday: number;
  beginTime: string;
  endTime: string;
}

/**
 * One event as the feed with `options` shows it: the timetable's first class (by id) that the options keep;
 * undefined when they keep none.
 */
export function eventPreview(
  snapshot: Pick<Snapshot, 'entries'>,
  published: Pick<PublishedState, 'classIds' | 'expansion'>,
  options: SubscriberOptions,
): EventPreview | undefined {
  const merged = mergeRows(snapshot.entries, publishedClassIds(snapshot.entries, published.classIds));
  const entry = merged.find((candidate) => keepsEntry(candidate, options));
  if (entry === undefined) return undefined;
  // Worded as the feed's publication words it (a teacher's: groups in the title, no teacher line).
  const text = entryText(entry, options, [], published.expansion?.wording);
  return {
    title: text.summary,
    location: text.location,
    description: text.description,
    alarmMinutes: options.alarmMinutes ?? null,
    weekday: entry.weekday,
    beginTime: entry.beginTime,
    endTime: entry.endTime,
  };
}
