/**
 * The net change of several change sets of one source, told to one chat in one message (pure): what changed
 * between the timetable the chat last heard of (before the first set) and the one after the last. Messages held
 * through the quiet hours are collapsed with it, so the morning brings one message that is true now, not a
 * night's history in the wrong order.
 *
 * Items of one class are chained by UID: a later item continues the earlier one whose class it now is (its
 * `beforeUid`, or its own `uid` for a class that kept its day). A cancelled class that comes back under another
 * UID but exactly as it was is the same class too. What is left of each chain is compared end to end:
 *
 * - ауд. 425 → 518, then 518 → 620: one «ауд. 425 → 620»;
 * - moved and moved back, cancelled and restored, added and cancelled: nothing;
 * - a new teacher and nothing else: «преподаватель …»; a class that no longer exists: cancelled; one that did not
 *   exist before: added.
 */
import type { ChangeSet, NotifyItem, NotifySide } from '../timetable/notify-change.ts';

/** One class followed through the sets. */
interface Chain {
  /** The class as the chat last heard of it; undefined when it did not exist (added). */
  first: NotifySide | undefined;
  /** The class now; undefined when it no longer exists (cancelled). */
  last: NotifySide | undefined;
  uid: string;
  lessonKind: string;
  note: string;
  was: { lessonKind: string; note: string };
}

/**
 * The net change of `sets` (one source's, oldest first, each already filtered for the chat), as one change set
 * named and stamped by the last; its items are in the order change sets keep (soonest first, then UID), and
 * `omitted` sums the sets' own. Undefined when `sets` is empty.
 */
export function netChange(sets: readonly ChangeSet[]): ChangeSet | undefined {
  const latest = sets.at(-1);
  if (latest === undefined) return undefined;
  const chains: Chain[] = [];
  const byUid = new Map<string, Chain>();
  for (const set of [...sets].sort((a, b) => a.stamp - b.stamp))
    for (const item of set.items) {
      const chain =
        byUid.get(item.beforeUid ?? item.uid) ?? (item.kind === 'added' ? restored(chains, item) : undefined);
      if (chain === undefined) {
        const started: Chain = {
          first: item.before,
          last: item.after,
          uid: item.uid,
          lessonKind: item.lessonKind,
          note: item.note,
          was: item.was ?? { lessonKind: item.lessonKind, note: item.note },
        };
        chains.push(started);
        byUid.set(item.uid, started);
        continue;
      }
      byUid.delete(chain.uid);
      chain.last = item.after;
      chain.uid = item.uid;
      chain.lessonKind = item.lessonKind;
      chain.note = item.note;
      byUid.set(item.uid, chain);
    }
  const items = chains
    .map(itemOf)
    .filter((item): item is NotifyItem => item !== undefined)
    .sort((a, b) => a.startsAt - b.startsAt || (a.uid < b.uid ? -1 : a.uid > b.uid ? 1 : 0));
  return { ...latest, items, omitted: sets.reduce((sum, set) => sum + set.omitted, 0) };
}

/** A cancelled chain that an added item brings back exactly as it was (the university re-created the class). */
function restored(chains: readonly Chain[], item: NotifyItem): Chain | undefined {
  const after = item.after;
  if (after === undefined) return undefined;
  return chains.find(
    (chain) => chain.last === undefined && chain.first !== undefined && sameClass(chain.first, after, true),
  );
}

/** Whether two sides tell the same class at the same time and place (and, with `titled`, under one title). */
function sameClass(a: NotifySide, b: NotifySide, titled = false): boolean {
  return (
    a.date === b.date &&
    a.begin === b.begin &&
    a.end === b.end &&
    a.location === b.location &&
    a.teacher === b.teacher &&
    (!titled || a.summary === b.summary)
  );
}

/** What a chain comes to: one item, or undefined when the class ends as the chat knew it (or never was). */
function itemOf(chain: Chain): NotifyItem | undefined {
  const { first, last } = chain;
  if (first === undefined && last === undefined) return undefined;
  if (first !== undefined && last !== undefined && sameClass(first, last)) return undefined;
  const kind =
    first === undefined
      ? 'added'
      : last === undefined
        ? 'cancelled'
        : first.date === last.date &&
            first.begin === last.begin &&
            first.end === last.end &&
            first.location === last.location
          ? 'teacher'
          : 'moved';
  const starts = [first?.startUtc, last?.startUtc].filter((start): start is number => start !== undefined);
  const item: NotifyItem = {
    kind,
    uid: chain.uid,
    ...(first ? { before: first } : {}),
    ...(last ? { after: last } : {}),
    startsAt: Math.min(...starts),
    lessonKind: chain.lessonKind,
    note: chain.note,
  };
  if (kind === 'moved' && (chain.was.lessonKind !== chain.lessonKind || chain.was.note !== chain.note))
    item.was = chain.was;
  return item;
}
