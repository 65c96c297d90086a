/** What a target's calendar is missing: the next push's writes, computed from Redis alone (no Google call). */
import { type FeedSettings, feedOccurrences } from '../feeds/build-feed.ts';
import type { PushIndex } from '../store/push-index.ts';
import type { SnapshotStore } from '../store/snapshot-store.ts';
import type { SourceKey } from '../timetable/source.ts';
import type { DesiredEvent } from './calendar-client.ts';
import { desiredEvents } from './desired-events.ts';
import { diffPush } from './push-diff.ts';

/** What {@link loadPublished} and {@link loadDesired} use: the published timetable and the feed settings. */
export interface PublishedDeps {
  readonly config: FeedSettings;
  readonly snapshots: Pick<SnapshotStore, 'load'>;
}

/** What {@link pendingChanges} uses: also the push index and the clock. */
export interface PendingChangesDeps extends PublishedDeps {
  readonly google: { index(targetId: string): Pick<PushIndex, 'read'> };
  /** Epoch ms. */
  readonly now: () => number;
}

/** Write counts the next push would make, by kind, and the refused events it would leave alone. */
export interface PendingChanges {
  insert: number;
  patch: number;
  delete: number;
  /** Events whose version (or delete) Google refused, not due to be tried again yet (they change or a day passes). */
  refused: number;
}

/**
 * The events a target of `source` should hold: the published feed's classes (cancelled ones titled as such, see
 * `desiredEvents`); undefined before the first publication.
 */
export async function loadDesired(ctx: PublishedDeps, source: SourceKey): Promise<DesiredEvent[] | undefined> {
  return (await loadPublished(ctx, source))?.desired;
}

/** The events a target of `source` should hold, and the published timetable's name; undefined before publication. */
export async function loadPublished(
  ctx: PublishedDeps,
  source: SourceKey,
): Promise<{ desired: DesiredEvent[]; name: string } | undefined> {
  const { snapshot, published } = await ctx.snapshots.load(source);
  if (!snapshot || !published) return undefined;
  const occurrences = feedOccurrences(snapshot, published, ctx.config);
  return { desired: desiredEvents(occurrences, ctx.config.cancelledTitlePrefix), name: snapshot.name };
}

/**
 * The difference between what the target should hold and what its index says it holds (changes not pushed
 * yet: a push waiting, a paused target, a failed push); null before the source's first publication.
 */
export async function pendingChanges(
  ctx: PendingChangesDeps,
  targetId: string,
  source: SourceKey,
): Promise<PendingChanges | null> {
  const desired = await loadDesired(ctx, source);
  if (desired === undefined) return null;
  const diff = diffPush(desired, await ctx.google.index(targetId).read(), ctx.now());
  return {
    insert: diff.insert.length + diff.revive.length,
    patch: diff.patch.length,
    delete: diff.remove.length,
    refused: diff.refused,
  };
}
