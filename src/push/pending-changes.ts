/**
 * What a target's calendar should hold and what it is missing, from Redis alone (no request to the calendar):
 * the published feed's classes, and the next push's writes planned by `diffPush` against the target's index.
 * Every calendar kind reads its desired items and its index its own way, and counts the plan here.
 */
import { type FeedSettings, feedOccurrences } from '../feeds/build-feed.ts';
import type { SnapshotStore } from '../store/snapshot-store.ts';
import type { SourceKey } from '../timetable/source.ts';
import type { Occurrence, SubscriberOptions } from '../timetable/types.ts';
import { type DesiredEvent, desiredEvents } from './desired-events.ts';
import { type Diffable, diffPush } from './push-diff.ts';

/** What {@link loadPublishedAs} and {@link loadPublished} use: the published timetable and the feed settings. */
export interface PublishedDeps {
  readonly config: FeedSettings;
  readonly snapshots: Pick<SnapshotStore, 'load'>;
}

/** Write counts the next push would make, by kind, and the refused events it would leave alone. */
export interface PendingChanges {
  insert: number;
  patch: number;
  delete: number;
  /** Events whose version (or delete) the calendar refused, not due to be tried again yet (they change or a day passes). */
  refused: number;
}

/**
 * What a target of `source` following `options` should hold, as the items `desire` makes of the classes the feed
 * with those options shows (read from the stored snapshot and publication, never from the university: one fetch
 * per source feeds every target, whatever their number), and the timetable's name; undefined before the first
 * publication. Without options (a target connected before push followed them): the whole timetable, as the
 * default feed shows it.
 */
export async function loadPublishedAs<T>(
  ctx: PublishedDeps,
  source: SourceKey,
  options: SubscriberOptions | undefined,
  desire: (occurrences: Occurrence[]) => T[],
): Promise<{ desired: T[]; name: string } | undefined> {
  const { snapshot, published } = await ctx.snapshots.load(source);
  if (!snapshot || !published) return undefined;
  return { desired: desire(feedOccurrences(snapshot, published, ctx.config, options ?? {})), name: snapshot.name };
}

/**
 * The events a target of `source` following `options` should hold (with options, the reminders are ours: see
 * `OwnedReminders`), and the published timetable's name; undefined before publication.
 */
export function loadPublished(
  ctx: PublishedDeps,
  source: SourceKey,
  options: SubscriberOptions | undefined,
): Promise<{ desired: DesiredEvent[]; name: string } | undefined> {
  const reminders = options === undefined ? undefined : { alarmMinutes: options.alarmMinutes };
  return loadPublishedAs(ctx, source, options, (occurrences) =>
    desiredEvents(occurrences, ctx.config.cancelledTitlePrefix, reminders),
  );
}

/**
 * The difference between what a target should hold (`desired`) and what its index (id → digest or marker, as
 * `diffPush` reads it) says it holds at `now` (epoch ms): changes not pushed yet (a push waiting, a paused
 * target, a failed push).
 */
export function pendingOf(
  desired: readonly Diffable[],
  index: ReadonlyMap<string, string>,
  now: number,
): PendingChanges {
  const diff = diffPush(desired, index, now);
  return {
    insert: diff.insert.length + diff.revive.length,
    patch: diff.patch.length,
    delete: diff.remove.length,
    refused: diff.refused,
  };
}
