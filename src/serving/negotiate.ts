/** HTTP content negotiation and conditional requests for feeds (pure). */

/** A stored feed body comes in these forms. */
export type FeedEncoding = 'br' | 'gzip' | 'identity';

// Our preference when the client likes several forms equally: the smallest first.
const PREFERENCE: readonly FeedEncoding[] = ['br', 'gzip', 'identity'];

/**
 * The encoding to answer with, from an `Accept-Encoding` header (RFC 9110 §12.5.3): the highest q wins, ties go
 * to br, then gzip; `q=0` refuses a coding; `*` stands for every coding not named. Without a header: identity.
 */
export function chooseEncoding(header: string | undefined): FeedEncoding {
  if (header === undefined || header.trim() === '') return 'identity';
  const weights = new Map<string, number>();
  for (const part of header.split(',')) {
    const [name = '', ...params] = part.split(';').map((piece) => piece.trim());
    if (name === '') continue;
    weights.set(name.toLowerCase(), qualityOf(params));
  }
  const wildcard = weights.get('*');
  let best: FeedEncoding = 'identity';
  let bestWeight = 0;
  for (const coding of PREFERENCE) {
    // identity stays acceptable unless refused explicitly, or by `*;q=0` without naming it (RFC 9110).
    const fallback = coding === 'identity' ? (wildcard === 0 ? 0 : 0.001) : (wildcard ?? 0);
    const weight = weights.get(coding) ?? fallback;
    if (weight > bestWeight) {
      best = coding;
      bestWeight = weight;
    }
  }
  // Every coding refused: identity anyway (a 406 would only leave the calendar app without its feed).
  return best;
}

function qualityOf(params: readonly string[]): number {
  for (const param of params) {
    const match = /^q\s*=\s*([0-9.]+)$/i.exec(param);
    if (!match) continue;
    const value = Number(match[1]);
    return Number.isFinite(value) ? Math.min(Math.max(value, 0), 1) : 1;
  }
  return 1;
}

/** Entity tags listed in an `If-None-Match` header (`*` kept as is), with their weakness prefix. */
function entityTags(header: string): string[] {
  return header.match(/\*|(?:W\/)?"[^"]*"/g) ?? [];
}

function opaque(tag: string): string {
  return tag.startsWith('W/') ? tag.slice(2) : tag;
}

// What each coding adds inside the quotes of the stored (identity) ETag.
const CODING_SUFFIX: Readonly<Record<FeedEncoding, string>> = { identity: '', gzip: '-gz', br: '-br' };

/**
 * The strong ETag of one content coding of a feed whose stored ETag is `etag` (`"<base>"`): `"<base>"` for
 * identity, `"<base>-gz"` and `"<base>-br"` for the compressed bodies. RFC 9110 §8.8.3 requires strong
 * validators to differ between representations, and the encodings are different bytes.
 */
export function codingEtag(etag: string, encoding: FeedEncoding): string {
  const suffix = CODING_SUFFIX[encoding];
  return suffix === '' ? etag : `${etag.slice(0, -1)}${suffix}"`;
}

/**
 * Whether `If-None-Match` matches the feed whose stored ETag is `etag`, in any of its codings, by weak
 * comparison (RFC 9110 §13.1.2): lists and `*` included. A client that cached the gzip body may send its
 * tag with a request that would now get br; the content is the same, so it is still not modified.
 */
export function noneMatchHits(header: string, etag: string): boolean {
  const base = opaque(etag);
  return entityTags(header).some(
    (tag) => tag === '*' || PREFERENCE.some((encoding) => opaque(tag) === codingEtag(base, encoding)),
  );
}

/**
 * Whether a GET may be answered 304: a matching `If-None-Match`, or, only when that header is absent, an
 * `If-Modified-Since` at or after the last modification (whole seconds, as HTTP dates are).
 */
export function isNotModified(
  headers: { ifNoneMatch?: string | undefined; ifModifiedSince?: string | undefined },
  etag: string,
  lastModified: number,
): boolean {
  if (headers.ifNoneMatch !== undefined) return noneMatchHits(headers.ifNoneMatch, etag);
  if (headers.ifModifiedSince === undefined) return false;
  const since = Date.parse(headers.ifModifiedSince);
  return Number.isFinite(since) && Math.floor(lastModified / 1000) * 1000 <= since;
}
