/**
 * Subscriptions made before one person had one subscription: a person may have several, and none is indexed
 * by its owner. They all keep working (their feed tokens and credentials are untouched); indexing leads each
 * owner to their newest, so that signing up again issues a token to it instead of making one more.
 */
import type { Logger } from '../logger.ts';
import type { SubscriptionStore } from '../store/subscription-store.ts';

/** What {@link indexLegacyOwners} uses. */
export interface OwnerIndexDeps {
  readonly subscriptions: Pick<SubscriptionStore, 'indexLegacyOwners'>;
  readonly logger: Logger;
}

/**
 * Indexes the owners of older subscriptions (once per deployment; the subscription store does the work). A
 * failure does not stop the caller: the next process to start tries again, and meanwhile a person with an older
 * subscription who signs up gets a new one (and the index).
 */
export async function indexLegacyOwners(ctx: OwnerIndexDeps): Promise<void> {
  try {
    const indexed = await ctx.subscriptions.indexLegacyOwners();
    if (indexed > 0) ctx.logger.info({ owners: indexed }, 'subscriptions made before one per person indexed by owner');
  } catch (error) {
    ctx.logger.warn({ err: error }, 'could not index the owners of older subscriptions; the next start tries again');
  }
}
