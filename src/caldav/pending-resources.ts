/**
 * What a CalDAV target's calendar is missing: the next push's writes, computed from Redis alone (no request to
 * the server): the published feed's resources against the target's index, counted by push/pending-changes.ts.
 */
import { type PendingChanges, pendingOf } from '../push/pending-changes.ts';
import type { PushTarget } from '../store/push-target-record.ts';
import { loadPublishedResources, type PublishedResourcesDeps } from './published-resources.ts';
import { projectHashes } from './resource-index.ts';

/** What {@link caldavPendingChanges} uses: the published timetable, the target's index and the clock. */
export interface CalDavPendingDeps extends PublishedResourcesDeps {
  readonly caldav: { readonly targets: { index(id: string): { read(): Promise<Map<string, string>> } } };
  /** Epoch ms. */
  readonly now: () => number;
}

/**
 * The difference between what a target should hold (its source, with its feed options) and what its index says
 * it holds (changes not pushed yet: a push waiting, a paused target, a failed push, options just changed); null
 * before the source's first publication.
 */
export async function caldavPendingChanges(
  ctx: CalDavPendingDeps,
  target: Pick<PushTarget, 'id' | 'source' | 'options'>,
): Promise<PendingChanges | null> {
  const published = await loadPublishedResources(ctx, target.source, target.options);
  if (published === undefined) return null;
  return pendingOf(published.desired, projectHashes(await ctx.caldav.targets.index(target.id).read()), ctx.now());
}
