/**
 * Feeds stored before Redis kept their gzip form only still hold their identity body and brotli form (about 180 of
 * a median group's 186 KB), and a refresh that changes nothing does not rewrite them. A worker drops those
 * fields once per Redis, in the background once it has started; the api serves either layout meanwhile.
 */
import { tryWithLock } from '../lib/redis-lock.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import type { Logger } from '../logger.ts';
import type { FeedStore } from '../store/feed-store.ts';
import type { RedisKeys } from '../store/keys.ts';
import { feedFormsDropped, markFeedFormsDropped } from '../store/migration-markers.ts';

/** What {@link dropRetiredFeedForms} uses. */
export interface FeedFormsDeps {
  readonly redis: RedisClient;
  readonly keys: RedisKeys;
  readonly feeds: Pick<FeedStore, 'dropRetiredForms'>;
  readonly logger: Logger;
}

/** How long one worker may shrink the feeds before another may try (shrinking is idempotent). */
const MIGRATION_LOCK_MS = 5 * 60_000;

/**
 * Drops the retired forms of every stored feed unless a marker says it was done, in one worker at a time: one
 * that finds another at it returns at once (nothing waits for it). Logs how many feeds it shrank and resolves
 * to that count.
 */
export async function dropRetiredFeedForms(ctx: FeedFormsDeps): Promise<number> {
  if (await feedFormsDropped(ctx.redis, ctx.keys)) return 0;
  const shrunk = await tryWithLock(ctx.redis, ctx.keys.lock('feed-forms-migration'), MIGRATION_LOCK_MS, async () => {
    if (await feedFormsDropped(ctx.redis, ctx.keys)) return 0;
    const count = await ctx.feeds.dropRetiredForms();
    await markFeedFormsDropped(ctx.redis, ctx.keys);
    ctx.logger.info({ feeds: count }, 'stored feeds shrunk to their gzip form');
    return count;
  });
  return shrunk ?? 0;
}
