/**
 * The change set a publication tells subscribers of (pure): from the diff's uncapped pairs, the classes that
 * moved, were cancelled, were added or got another teacher, that have not started and start within the horizon.
 */
import { teacherName } from '../timetable/event-text.ts';
import type { ChangeSet, NotifyItem, NotifyKind, NotifySide } from '../timetable/notify-change.ts';
import type { SourceKey } from '../timetable/source.ts';
import type { Occurrence, TimetableEntry } from '../timetable/types.ts';
import type { RefreshDiff } from './refresh-diff.ts';

/** How many items a change set lists; the rest are counted in `omitted`. */
export const NOTIFY_ITEM_LIMIT = 200;

/** What {@link notifyChangeSet} needs besides the diff. */
export interface NotifyChangeInput {
  source: SourceKey;
  name: string;
  /** The publication's stamp: also the moment the horizon is counted from. */
  stamp: number;
  horizonMs: number;
  /**
   * The snapshot digest of the publication before (undefined: there was none). A first publication is all
   * "added" and tells nothing; a publication of the same snapshot (new settings, term starts, a re-render) moved
   * nothing the university changed, and tells nothing either.
   */
  previousSnapshotHash: string | undefined;
  snapshotHash: string;
}

/** The change set of a publication, or undefined when it tells nobody anything. */
export function notifyChangeSet(
  diff: Pick<RefreshDiff, 'pairs' | 'entriesBefore' | 'entriesAfter'>,
  input: NotifyChangeInput,
): ChangeSet | undefined {
  if (input.previousSnapshotHash === undefined || input.previousSnapshotHash === input.snapshotHash) return undefined;
  const { pairs, entriesBefore, entriesAfter } = diff;
  const items: NotifyItem[] = [];
  for (const [before, after] of pairs.moved) {
    const was = entriesBefore.get(before.entryId);
    const now = entriesAfter.get(after.entryId);
    const item = itemOf('moved', after.uid, side(before, was), side(after, now), now ?? was);
    if (before.uid !== after.uid) item.beforeUid = before.uid;
    if (was && now && (was.kind !== now.kind || was.note !== now.note))
      item.was = { lessonKind: was.kind, note: was.note };
    items.push(item);
  }
  for (const [before, after] of pairs.changed) {
    const was = entriesBefore.get(before.entryId);
    const now = entriesAfter.get(after.entryId);
    const beforeSide = side(before, was);
    const afterSide = side(after, now);
    // A new title or note alone is not worth a message; a new teacher is.
    if (beforeSide.teacher !== afterSide.teacher)
      items.push(itemOf('teacher', after.uid, beforeSide, afterSide, now ?? was));
  }
  for (const occurrence of pairs.removed) {
    const entry = entriesBefore.get(occurrence.entryId);
    items.push(itemOf('cancelled', occurrence.uid, side(occurrence, entry), undefined, entry));
  }
  for (const occurrence of pairs.added) {
    const entry = entriesAfter.get(occurrence.entryId);
    items.push(itemOf('added', occurrence.uid, undefined, side(occurrence, entry), entry));
  }
  const until = input.stamp + input.horizonMs;
  const told = items
    .filter((item) => item.startsAt > input.stamp && item.startsAt <= until)
    .sort((a, b) => a.startsAt - b.startsAt || (a.uid < b.uid ? -1 : a.uid > b.uid ? 1 : 0));
  if (told.length === 0) return undefined;
  return {
    source: input.source,
    name: input.name,
    stamp: input.stamp,
    items: told.slice(0, NOTIFY_ITEM_LIMIT),
    omitted: Math.max(0, told.length - NOTIFY_ITEM_LIMIT),
  };
}

function side(occurrence: Occurrence, entry: TimetableEntry | undefined): NotifySide {
  return {
    date: occurrence.date,
    begin: occurrence.beginTime,
    end: occurrence.endTime,
    startUtc: occurrence.startUtc,
    summary: occurrence.summary,
    location: occurrence.location,
    teacher: entry ? teacherName(entry) : '',
  };
}

/** One item; `uid` is the class's uid after the change (a cancelled one keeps its own). */
function itemOf(
  kind: NotifyKind,
  uid: string,
  before: NotifySide | undefined,
  after: NotifySide | undefined,
  entry: TimetableEntry | undefined,
): NotifyItem {
  const starts = [before?.startUtc, after?.startUtc].filter((start): start is number => start !== undefined);
  return {
    kind,
    uid,
    ...(before ? { before } : {}),
    ...(after ? { after } : {}),
    startsAt: Math.min(...starts),
    lessonKind: entry?.kind ?? '',
    note: entry?.note ?? '',
  };
}
