/**
 * What a CalDAV target of a source should hold: the published feed's classes as resources, read from the stored
 * snapshot and publication (never from the university: one fetch per source feeds every target, whatever their
 * number), with the timetable's name.
 */
import { type FeedSettings, feedOccurrences } from '../feeds/build-feed.ts';
import type { SnapshotStore } from '../store/snapshot-store.ts';
import type { SourceKey } from '../timetable/source.ts';
import type { DesiredResource } from './caldav-client.ts';
import { desiredResources } from './ics-resource.ts';

/** What {@link loadPublishedResources} uses: the published timetable and the feed settings. */
export interface PublishedResourcesDeps {
  readonly config: FeedSettings;
  readonly snapshots: Pick<SnapshotStore, 'load'>;
}

/** The resources a target of `source` should hold, and the timetable's name; undefined before publication. */
export async function loadPublishedResources(
  ctx: PublishedResourcesDeps,
  source: SourceKey,
): Promise<{ desired: DesiredResource[]; name: string } | undefined> {
  const { snapshot, published } = await ctx.snapshots.load(source);
  if (!snapshot || !published) return undefined;
  const occurrences = feedOccurrences(snapshot, published, ctx.config);
  const desired = desiredResources(occurrences, source, {
    cancelledPrefix: ctx.config.cancelledTitlePrefix,
    timeZone: ctx.config.timezone,
  });
  return { desired, name: snapshot.name };
}
