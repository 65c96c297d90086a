/**
 * The live feed URLs of a personal subscription as its owner sees them listed on the personal page: never a
 * token, a short part of its hash, whether it is the page's own URL, and when and by what kind of client it was
 * last read (the hash field `read:<token hash>` = `<ms> <client>`, a word of a fixed list written by
 * subscription-touch-token.lua).
 */

/** A feed URL of a subscription as its owner sees it listed: never the token, a short part of its hash. */
export interface FeedUrlView {
  /** The first {@link URL_KEY_LENGTH} hex digits of the token's hash: names it in a revocation. */
  key: string;
  /** Whether it is the page's own URL (`pageTokenHash`: revoked, the page gets a new one). */
  page: boolean;
  /**
   * Whether it is the URL this browser's page shows: the page's own, or for a browser signed in before sessions
   * the feed URL its cookie holds.
   */
  shown: boolean;
  /** When a client last read it and what kind of client that was; undefined when none has since it was kept. */
  read?: { at: number; client: string };
}

/** Hex digits of a token hash that name its feed URL to its owner (64 bits: unique among a subscription's few). */
export const URL_KEY_LENGTH = 16;

/**
 * The views of the live token hashes `tokens` of a subscription whose hash fields are `fields`: the one shown
 * on this page first (`shownHash`, the hash of the token the page shows), then the page's own, then the most
 * recently read.
 */
export function feedUrlViews(
  tokens: readonly string[],
  fields: Record<string, string>,
  shownHash: string | undefined,
): FeedUrlView[] {
  const views = tokens.map((hash): FeedUrlView => {
    const read = parseRead(fields[`read:${hash}`]);
    return {
      key: hash.slice(0, URL_KEY_LENGTH),
      page: hash === fields.pageTokenHash,
      shown: hash === (shownHash ?? fields.pageTokenHash),
      ...(read ? { read } : {}),
    };
  });
  return views.sort(
    (a, b) =>
      Number(b.shown) - Number(a.shown) || Number(b.page) - Number(a.page) || (b.read?.at ?? 0) - (a.read?.at ?? 0),
  );
}

/** A read record (`<ms> <client>`) back; undefined when there is none or it is unreadable. */
function parseRead(text: string | undefined): { at: number; client: string } | undefined {
  const match = /^(\d+) ([a-z0-9-]{1,20})$/.exec(text ?? '');
  return match ? { at: Number(match[1]), client: match[2] as string } : undefined;
}
