/** One subscriber's part of a change set (pure). */
import { keepsClass } from '../timetable/event-text.ts';
import type { ChangeSet, NotifyItem, NotifyOptions } from '../timetable/notify-change.ts';

/**
 * The items of `set` a subscriber with `options` is told of at `now`: classes their options keep (a moved class
 * when either its old or its new kind and note are kept) that have not started. `items` may come out empty.
 */
export function filterFor(set: ChangeSet, options: NotifyOptions, now: number): ChangeSet {
  return { ...set, items: set.items.filter((item) => item.startsAt > now && keeps(item, options)) };
}

function keeps(item: NotifyItem, options: NotifyOptions): boolean {
  if (keepsClass({ kind: item.lessonKind, note: item.note }, options)) return true;
  return item.was !== undefined && keepsClass({ kind: item.was.lessonKind, note: item.was.note }, options);
}
