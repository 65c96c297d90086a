/**
 * How the freshness benchmark sees a change arrive: it hears the service's feed-updates channel (the feed store
 * announces every stored feed there) and, for a source some change still waits for, reads the stored feed and
 * looks for the change's room token in it. The time is when the announcement was heard: the feed was stored
 * then, and a subscriber asking from then on is served the new room.
 */
import { duplicateRedis } from '../../src/lib/redis-connection.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { feedBody } from '../../src/store/feed-store.ts';
import { parseFeedUpdate } from '../../src/store/feed-updates.ts';
import type { ChangeLedger } from './freshness-ledger.ts';

/** A running watch; `close()` unsubscribes and waits for the reads in flight. */
export interface FeedWatch {
  close(): Promise<void>;
  /** Announcements heard, and stored feeds read. */
  counts(): { heard: number; read: number };
}

/** Watches the feeds `ledger` waits for; `now` gives ms since the phase started. */
export async function watchFeeds(
  ctx: Pick<ServiceContext, 'redis' | 'keys' | 'feeds'>,
  ledger: ChangeLedger,
  now: () => number,
): Promise<FeedWatch> {
  const subscriber = duplicateRedis(ctx.redis, 'bench-freshness-watch');
  subscriber.on('error', () => undefined);
  const inFlight = new Map<string, Promise<void>>();
  /**
   * Sources announced again while their read ran: read once more, stamped with the last announcement (a token
   * found then may have been stored by any of them: the latest never makes a change look faster than it was).
   */
  const again = new Map<string, number>();
  let heard = 0;
  let read = 0;
  const check = async (source: string, at: number): Promise<void> => {
    const feed = await ctx.feeds.get(source);
    read += 1;
    if (feed) ledger.observe(source, (await feedBody(feed)).toString('utf8'), at);
  };
  const schedule = (source: string, at: number): void => {
    if (inFlight.has(source)) {
      again.set(source, at);
      return;
    }
    const run = check(source, at)
      .catch(() => undefined)
      .finally(() => {
        inFlight.delete(source);
        const next = again.get(source);
        again.delete(source);
        if (next !== undefined && ledger.waitsFor(source)) schedule(source, next);
      });
    inFlight.set(source, run);
  };
  subscriber.on('message', (_channel: string, message: string) => {
    heard += 1;
    const update = parseFeedUpdate(message);
    if (update.kind === 'feed' && ledger.waitsFor(update.source)) schedule(update.source, now());
  });
  await subscriber.subscribe(ctx.keys.feedUpdates);
  return {
    counts: () => ({ heard, read }),
    close: async () => {
      await subscriber.unsubscribe().catch(() => undefined);
      subscriber.disconnect();
      await Promise.all(inFlight.values());
    },
  };
}
