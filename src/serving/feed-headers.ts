/**
 * The headers of a feed answer, shared by the feed routes and the fast path in front of them (feed-fast-path.ts),
 * so that both answer alike. Computed once per served feed or variant rather than once per request: feeds are hot.
 */
import type { FeedValidators } from '../store/feed-store.ts';
import { codingEtag, type FeedEncoding } from './negotiate.ts';

/**
 * How long a shared cache (deploy/nginx.conf's proxy) and calendar apps may keep a public feed without asking
 * again, unless `FEED_PUBLIC_MAX_AGE` lowers it. 30 s keeps a published change at most 30 s behind the api at the
 * proxy, inside the minute we promise, with room for the proxy's background revalidation; asking again costs a
 * 304 without a body once a copy is held.
 */
export const PUBLIC_MAX_AGE_SECONDS = 30;
/** How long the one calendar app holding a personal feed may keep it (no shared cache may keep it at all). */
export const PERSONAL_MAX_AGE_SECONDS = 300;

/** Flat `[name, value, name, value, …]` lists, one per coding, public or personal. */
type HeaderLists = Partial<Record<`${FeedEncoding} ${boolean}`, readonly string[]>>;

const lists = new WeakMap<FeedValidators, HeaderLists>();

/**
 * The headers of an answer with `feed` in `encoding` (a 304 carries the ETag a 200 would have), as a flat
 * `[name, value, …]` list in the order they are sent; without Content-Encoding, which only a 200 carries. A public
 * feed may be kept `publicMaxAge` seconds (the api's `FEED_PUBLIC_MAX_AGE`).
 */
export function feedHeaders(
  feed: FeedValidators,
  encoding: FeedEncoding,
  personal: boolean,
  publicMaxAge: number = PUBLIC_MAX_AGE_SECONDS,
): readonly string[] {
  let made = lists.get(feed);
  if (made === undefined) {
    made = {};
    lists.set(feed, made);
  }
  const key = `${encoding} ${personal}` as const;
  const cached = made[key];
  if (cached !== undefined) return cached;
  const headers = [
    'content-type',
    'text/calendar; charset=utf-8',
    'etag',
    codingEtag(feed.etag, encoding),
    'last-modified',
    new Date(feed.lastModified).toUTCString(),
    // Personal feeds must not sit in shared caches: their URL is the only secret protecting them.
    'cache-control',
    personal ? `private, max-age=${PERSONAL_MAX_AGE_SECONDS}` : `public, max-age=${publicMaxAge}`,
    'vary',
    'Accept-Encoding',
  ];
  if (feed.staleSince !== undefined) headers.push('x-timetable-stale', new Date(feed.staleSince).toISOString());
  made[key] = headers;
  return headers;
}
