/** What a Google target's calendar is missing: the next push's writes, computed from Redis alone (no Google call). */

import { loadPublished, type PendingChanges, type PublishedDeps, pendingOf } from '../push/pending-changes.ts';
import type { PushIndex } from '../store/push-index.ts';
import type { PushTarget } from '../store/push-target-record.ts';

/** What {@link googlePendingChanges} uses: the published timetable, the Google push index and the clock. */
export interface GooglePendingDeps extends PublishedDeps {
  readonly google: { readonly targets: { index(targetId: string): Pick<PushIndex, 'read'> } };
  /** Epoch ms. */
  readonly now: () => number;
}

/**
 * The difference between what a Google target should hold (its source, with its feed options) and what its index
 * says it holds (changes not pushed yet: a push waiting, a paused target, a failed push, options just changed);
 * null before the source's first publication.
 */
export async function googlePendingChanges(
  ctx: GooglePendingDeps,
  target: Pick<PushTarget, 'id' | 'source' | 'options'>,
): Promise<PendingChanges | null> {
  const published = await loadPublished(ctx, target.source, target.options);
  if (published === undefined) return null;
  return pendingOf(published.desired, await ctx.google.targets.index(target.id).read(), ctx.now());
}
