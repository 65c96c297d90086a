/**
 * What a CalDAV target of a source should hold: the published feed's classes (push/pending-changes.ts reads
 * them) as resources, with the timetable's name.
 */
import { loadPublishedOccurrences, type PublishedDeps } from '../push/pending-changes.ts';
import type { SourceKey } from '../timetable/source.ts';
import type { DesiredResource } from './caldav-client.ts';
import { desiredResources } from './ics-resource.ts';

/** What {@link loadPublishedResources} uses: the published timetable and the feed settings. */
export type PublishedResourcesDeps = PublishedDeps;

/** The resources a target of `source` should hold, and the timetable's name; undefined before publication. */
export async function loadPublishedResources(
  ctx: PublishedResourcesDeps,
  source: SourceKey,
): Promise<{ desired: DesiredResource[]; name: string } | undefined> {
  const published = await loadPublishedOccurrences(ctx, source);
  if (published === undefined) return undefined;
  const desired = desiredResources(published.occurrences, source, {
    cancelledPrefix: ctx.config.cancelledTitlePrefix,
    timeZone: ctx.config.timezone,
  });
  return { desired, name: published.name };
}
