/**
 * The messages of the feed-updates channel, which API processes hear to drop what they keep in memory. A bare
 * source key says its stored feed changed (the feed store announces every write). A personal subscription's
 * feed tokens changing (a rotation, a revocation) and the subscription going are announced with a word before
 * the source, so that API processes also drop what they keep for Redis outages: memory must never serve a feed
 * URL that Redis no longer knows. An API process of an older release takes such a message for a source it
 * never cached, and ignores it.
 */
import type { RedisClient } from '../lib/redis-target.ts';
import type { SourceKey } from '../timetable/source.ts';
import type { RedisKeys } from './keys.ts';

/** What a message on the feed-updates channel announces. */
export interface FeedUpdate {
  /**
   * `feed`: the stored feed (or a personal subscription's saved options) changed; `tokens`: some feed tokens of
   * the personal subscription stopped working; `gone`: the personal subscription was deleted with its tokens.
   */
  kind: 'feed' | 'tokens' | 'gone';
  source: SourceKey;
}

const WORDS = ['tokens', 'gone'] as const;

/** The message announcing `update`. */
export function feedUpdateMessage(update: FeedUpdate): string {
  return update.kind === 'feed' ? update.source : `${update.kind} ${update.source}`;
}

/** The update a message on the channel announces (a source key never holds a space). */
export function parseFeedUpdate(message: string): FeedUpdate {
  const space = message.indexOf(' ');
  if (space < 0) return { kind: 'feed', source: message };
  const word = message.slice(0, space);
  for (const kind of WORDS) if (kind === word) return { kind, source: message.slice(space + 1) };
  return { kind: 'feed', source: message };
}

/** Announces `update` on the feed-updates channel (API processes drop what they keep of its source). */
export async function announceFeedUpdate(
  redis: RedisClient,
  keys: Pick<RedisKeys, 'feedUpdates'>,
  update: FeedUpdate,
): Promise<void> {
  await redis.publish(keys.feedUpdates, feedUpdateMessage(update));
}
