/** Reading stored feeds in tests: Redis holds their gzip form only. */
import { gunzipSync } from 'node:zlib';
import type { FeedStore, StoredFeed } from '../../src/store/feed-store.ts';
import type { SourceKey } from '../../src/timetable/source.ts';

/** The ICS text of a stored feed; '' without one. */
export function icsOf(feed: Pick<StoredFeed, 'gzip'> | undefined): string {
  return feed === undefined ? '' : gunzipSync(feed.gzip).toString('utf8');
}

/** The ICS text of the feed stored for `source`; '' when there is none. */
export async function storedIcs(feeds: Pick<FeedStore, 'get'>, source: SourceKey): Promise<string> {
  return icsOf(await feeds.get(source));
}
