/**
 * What a CalDAV push knows of the resources it wrote: resource id (`tts-…`, the name stem) → one value. For a
 * resource of ours, `"<hash> <etag>"`: the digest of the fields we last wrote and the ETag the server answered
 * (the conditional writes need it; '' when the server sent none). Otherwise one of the push core's markers
 * (push/push-diff.ts), so that its pure `diffPush` plans CalDAV pushes too: {@link FOREIGN} (the name is taken
 * by a resource we did not write) and `!refused:<hash>:<retryAt>` (the server refused that version for good).
 * `CANCELLED` is never written: a CalDAV DELETE really deletes, and a name can be created again.
 *
 * Digests are base64url and never hold a space; an ETag may (a quoted string), so the value splits at its first
 * space only. Markers start with `!`, which no digest does.
 */
import { FOREIGN, parseRefused, REFUSED_PREFIX, refusedMarker } from '../push/push-diff.ts';
import { RESOURCE_PREFIX } from './caldav-client.ts';

export { FOREIGN, parseRefused, REFUSED_PREFIX, refusedMarker };

/**
 * One target's index (`store/push-index.ts` keeps it in Redis). `set` and `replace` may answer `false` when
 * the target was removed meanwhile (the index refuses writes then): the push stops with `TargetRemovedError`.
 */
export interface CalDavIndex {
  read(): Promise<Map<string, string>>;
  set(id: string, value: string): Promise<unknown>;
  remove(id: string): Promise<unknown>;
  replace(entries: Map<string, string>): Promise<unknown>;
}

/** A resource of ours as the index records it. */
export interface OwnedEntry {
  hash: string;
  etag: string;
}

/** The index value of a resource of ours. */
export function ownedValue(hash: string, etag: string): string {
  return `${hash} ${etag}`;
}

/** The resource of ours an index value records, or undefined for a marker. */
export function parseOwned(value: string): OwnedEntry | undefined {
  if (value.startsWith('!')) return undefined;
  const space = value.indexOf(' ');
  if (space < 0) return { hash: value, etag: '' };
  return { hash: value.slice(0, space), etag: value.slice(space + 1) };
}

/**
 * The index as `diffPush` reads it: id → digest for our resources, markers as they are. An entry of ours without
 * a digest projects to '' and so is rewritten by the next push.
 */
export function projectHashes(index: ReadonlyMap<string, string>): Map<string, string> {
  const projected = new Map<string, string>();
  for (const [id, value] of index) projected.set(id, parseOwned(value)?.hash ?? value);
  return projected;
}

/** The absolute URL of resource `id` in a calendar whose URL ends in `/`. */
export function hrefFor(calendarUrl: string, id: string): string {
  return `${calendarUrl}${id}.ics`;
}

/** Our resource names: the prefix, then base32hex (push/event-id.ts), then `.ics`. */
const OUR_NAME = new RegExp(`^(${RESOURCE_PREFIX}[0-9a-v]+)\\.ics$`);

/**
 * The resource id of an href of ours (`…/tts-<id>.ics`, relative or absolute, percent-encoded or not), or
 * undefined for any other name: those are never touched.
 */
export function idOfHref(href: string): string | undefined {
  const path = href.split(/[?#]/)[0] ?? '';
  const name = path.slice(path.lastIndexOf('/') + 1);
  let decoded: string;
  try {
    decoded = decodeURIComponent(name);
  } catch {
    return undefined;
  }
  return OUR_NAME.exec(decoded)?.[1];
}
