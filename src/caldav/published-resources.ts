/**
 * What a CalDAV target of a source should hold: the published feed's classes (push/pending-changes.ts reads
 * them) as resources, with the timetable's name.
 */
import { loadPublishedAs, type PublishedDeps } from '../push/pending-changes.ts';
import type { SourceKey } from '../timetable/source.ts';
import type { SubscriberOptions } from '../timetable/types.ts';
import type { DesiredResource } from './caldav-client.ts';
import { desiredResources } from './ics-resource.ts';

/** What {@link loadPublishedResources} uses: the published timetable and the feed settings. */
export type PublishedResourcesDeps = PublishedDeps;

/**
 * The resources a target of `source` following `options` should hold (with an alarm among them, each class
 * carries our VALARM), and the timetable's name; undefined before publication.
 */
export function loadPublishedResources(
  ctx: PublishedResourcesDeps,
  source: SourceKey,
  options: SubscriberOptions | undefined,
): Promise<{ desired: DesiredResource[]; name: string } | undefined> {
  const wording = {
    cancelledPrefix: ctx.config.cancelledTitlePrefix,
    timeZone: ctx.config.timezone,
    alarmMinutes: options?.alarmMinutes,
  };
  return loadPublishedAs(ctx, source, options, (occurrences) => desiredResources(occurrences, source, wording));
}
