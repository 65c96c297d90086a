/**
 * The {@link CalDavClient} over real HTTP. tsdav (a maintained CalDAV client) does discovery and builds and
 * parses the DAV XML; every request, tsdav's included, goes through {@link DavHttp} (undici: timeouts, auth,
 * redirects, the per-host wait, the internal-address guard). The conditional writes are plain requests of our
 * own, because their exact status (412, 409 no-uid-conflict, 415) and the ETag header are the whole point and
 * tsdav does not hand them back.
 *
 * How servers differ, and where this file copes (see docs/caldav.md):
 * - hrefs relative (Radicale, Sabre) or absolute on another host (iCloud): every one is `new URL(href, base)`
 *   of the URL that answered, percent-encoding kept as the server wrote it;
 * - `text/calendar; charset=utf-8` refused with 415 by some servers: one retry as `text/calendar`, kept for
 *   the rest of this client's life;
 * - a 412 that is no ETag conflict (Xandikos answers it for data it cannot read): after a 412 the resource is
 *   read back, and when nobody changed it the 412 was a refusal of our data;
 * - no sync-collection, a sync token refused (403 valid-sync-token) or a listing too large (507, Yandex): a
 *   full listing by PROPFIND, then calendar-multiget (or single GETs) of our own resources.
 */
import { davRequest, getDAVAttribute, makeCalendar, propfind, syncCollection } from 'tsdav';
import type {
  CalDavCalendar,
  CalDavClient,
  CalDavClientFactory,
  Discovery,
  Listing,
  RemoteResource,
  RemoveOutcome,
} from './caldav-client.ts';
import { RESOURCE_PREFIX } from './caldav-client.ts';
import {
  createDavTransport,
  DavHttp,
  type DavResponse,
  type DavTransport,
  type DavTransportOptions,
  etagOf,
  hasPrecondition,
  shownUrl,
} from './dav-http.ts';
import { asCollection, davCall, discoverAccount, readCalendar, resolveHref, succeeded, textOf } from './discovery.ts';
import {
  CalDavCalendarGoneError,
  EtagMismatchError,
  MkcalendarRefusedError,
  ResourceExistsError,
  ResourceMissingError,
  ResourceRefusedError,
  UidConflictError,
} from './errors.ts';
import { IcsNestingError } from './ics-lines.ts';
import { parseResource, type ResourceIdentity } from './ics-resource.ts';

/** Hrefs per calendar-multiget. */
const MULTIGET_BATCH = 100;
/** Rounds of a sync-collection the server truncated (507 on the collection inside the multistatus). */
const MAX_SYNC_ROUNDS = 50;
const CONTENT_TYPE = 'text/calendar; charset=utf-8';
const PLAIN_CONTENT_TYPE = 'text/calendar';

const DAV_CALDAV = getDAVAttribute(['DAV:' as never, 'urn:ietf:params:xml:ns:caldav' as never]);

/** A client factory with its own connection pool, to close at shutdown. */
export type ClosableCalDavClientFactory = CalDavClientFactory & { close(): Promise<void> };

/**
 * A factory of clients sharing one transport with these settings (timeouts; `allowPrivateHosts` for tests and
 * servers on the service's own network).
 */
export function calDavClientFactory(options: DavTransportOptions = {}): ClosableCalDavClientFactory {
  const transport = createDavTransport(options);
  const factory: CalDavClientFactory = (credentials, beforeRequest, signal) =>
    new DavCalDavClient(new DavHttp(transport, credentials, beforeRequest, signal));
  return Object.assign(factory, { close: () => transport.close() });
}

let defaultTransport: DavTransport | undefined;

/** A client with the default settings (internal addresses refused), on a transport shared by all of them. */
export const createCalDavClient: CalDavClientFactory = (credentials, beforeRequest, signal) => {
  defaultTransport ??= createDavTransport();
  return new DavCalDavClient(new DavHttp(defaultTransport, credentials, beforeRequest, signal));
};

/** Whether an href names one of our resources (`tts-*.ics`), judged on its last path segment. */
export function isOurHref(href: string): boolean {
  const name = new URL(href).pathname.split('/').at(-1) ?? '';
  return name.startsWith(RESOURCE_PREFIX) && name.toLowerCase().endsWith('.ics');
}

/** A resource seen in a listing, with the href as the server wrote it (sent back as such in a multiget). */
interface Seen {
  resource: RemoteResource;
  rawHref: string;
}

class DavCalDavClient implements CalDavClient {
  private contentType = CONTENT_TYPE;
  private readonly http: DavHttp;

  constructor(http: DavHttp) {
    this.http = http;
  }

  discover(serverOrCalendarUrl: string): Promise<Discovery> {
    return discoverAccount(this.http, serverOrCalendarUrl);
  }

  async makeCalendar(homeUrl: string, slug: string, displayName: string, color: string): Promise<CalDavCalendar> {
    const url = new URL(`${encodeURIComponent(slug)}/`, asCollection(homeUrl)).href;
    const { response } = await davCall(this.http, (fetchOverDav) =>
      makeCalendar({
        url,
        props: {
          'd:displayname': displayName,
          'ca:calendar-color': color,
          'c:supported-calendar-component-set': { 'c:comp': { _attributes: { name: 'VEVENT' } } },
        },
        fetch: fetchOverDav,
      }),
    );
    const refused = (why: string) =>
      new MkcalendarRefusedError(`MKCALENDAR ${shownUrl(url)} answered ${response.status}: ${why}`, {
        status: response.status,
        host: new URL(url).host,
      });
    if (succeeded(response)) return readCalendar(this.http, url);
    if (response.status === 405 || response.status === 409) {
      // Taken: by our own earlier try (a retried connect), then it is ours to use; else not allowed here.
      try {
        return await readCalendar(this.http, url);
      } catch (error) {
        if (error instanceof CalDavCalendarGoneError) throw refused('the server does not make calendars here');
        throw error;
      }
    }
    if ([400, 403, 404, 501].includes(response.status)) throw refused('the server does not make calendars here');
    throw this.http.fail(response, 'MKCALENDAR');
  }

  getCalendar(url: string): Promise<CalDavCalendar> {
    return readCalendar(this.http, url);
  }

  async deleteCalendar(url: string): Promise<void> {
    const response = await this.http.send({ method: 'DELETE', url: asCollection(url) });
    if (succeeded(response) || response.status === 404 || response.status === 410) return;
    throw this.http.fail(response, 'DELETE');
  }

  async create(href: string, ics: string): Promise<{ etag: string }> {
    const response = await this.put(href, ics, { 'if-none-match': '*' });
    if (succeeded(response)) return { etag: etagOf(response) };
    if (response.status === 412) {
      // Xandikos answers 412 for data it cannot read: then there is nothing under that name.
      if ((await this.get(href)) === undefined) throw this.refused(response, 'no resource is there');
      throw new ResourceExistsError(`PUT ${shownUrl(href)}: a resource of that name exists`, details(response));
    }
    throw this.writeFailure(response);
  }

  async update(href: string, ics: string, etag: string): Promise<{ etag: string }> {
    let ifMatch = etag;
    if (ifMatch === '') {
      const current = await this.get(href);
      if (current === undefined) throw new ResourceMissingError(`${shownUrl(href)} is gone`, { status: 404 });
      ifMatch = current.etag;
    }
    const response = await this.put(href, ics, ifMatch === '' ? {} : { 'if-match': ifMatch });
    if (succeeded(response)) return { etag: etagOf(response) };
    if (response.status === 404 || response.status === 410)
      throw new ResourceMissingError(`PUT ${shownUrl(href)}: the resource is gone`, details(response));
    if (response.status === 412) {
      const current = await this.get(href);
      if (current === undefined)
        throw new ResourceMissingError(`PUT ${shownUrl(href)}: the resource is gone`, details(response));
      if (current.etag !== '' && current.etag === ifMatch) throw this.refused(response, 'nobody changed it');
      throw new EtagMismatchError(`PUT ${shownUrl(href)}: changed since it was read`, details(response));
    }
    throw this.writeFailure(response);
  }

  async get(href: string): Promise<RemoteResource | undefined> {
    // A person may have attached a file to one of our events: read under the larger cap.
    const response = await this.http.send({ method: 'GET', url: href, answer: 'listing' });
    if (response.status === 404 || response.status === 410) return undefined;
    if (!succeeded(response)) throw this.http.fail(response, 'GET');
    return withText({ href: response.url, etag: etagOf(response) }, response.body);
  }

  async remove(href: string, etag: string): Promise<RemoveOutcome> {
    const response = await this.http.send({
      method: 'DELETE',
      url: href,
      headers: etag === '' ? {} : { 'if-match': etag },
    });
    if (succeeded(response)) return 'deleted';
    if (response.status === 404 || response.status === 410) return 'missing';
    if (response.status === 412) {
      if ((await this.get(href)) === undefined) return 'missing';
      throw new EtagMismatchError(`DELETE ${shownUrl(href)}: changed since it was read`, details(response));
    }
    throw this.http.fail(response, 'DELETE');
  }

  async list(calendarUrl: string, syncToken?: string): Promise<Listing> {
    const url = asCollection(calendarUrl);
    const synced = await this.syncListing(url, syncToken ?? '');
    const { seen, listing } = synced ?? (await this.fullListing(url));
    await this.readOurs(url, seen, listing);
    listing.resources = seen.map((entry) => entry.resource);
    return listing;
  }

  /** PUT with `conditions`; a 415 is tried once more as plain `text/calendar`, which is then kept. */
  private async put(href: string, ics: string, conditions: Record<string, string>): Promise<DavResponse> {
    const send = (contentType: string) =>
      this.http.send({ method: 'PUT', url: href, headers: { ...conditions, 'content-type': contentType }, body: ics });
    const response = await send(this.contentType);
    if (response.status !== 415 || this.contentType === PLAIN_CONTENT_TYPE) return response;
    const retried = await send(PLAIN_CONTENT_TYPE);
    if (retried.status !== 415) this.contentType = PLAIN_CONTENT_TYPE;
    return retried;
  }

  private refused(response: DavResponse, why: string): ResourceRefusedError {
    const { reason } = this.http.fail(response, 'PUT');
    return new ResourceRefusedError(
      `PUT ${shownUrl(response.url)} was refused (${response.status}${reason ? `, ${reason}` : ''}): ${why}`,
      { ...details(response), reason },
    );
  }

  /** A PUT's failure other than 2xx and 412: conflicts, refusals of our data, or the general classes. */
  private writeFailure(response: DavResponse): Error {
    const { status } = response;
    if (status === 409 && hasPrecondition(response, 'no-uid-conflict'))
      return new UidConflictError(`PUT ${shownUrl(response.url)}: another resource holds the UID`, {
        ...details(response),
        reason: 'no-uid-conflict',
      });
    // RFC 4918 §9.7.1: 409 on a PUT means the collection is not there.
    if (status === 409 || status === 404 || status === 410)
      return new CalDavCalendarGoneError(`PUT ${shownUrl(response.url)}: the calendar is gone`, details(response));
    if ([400, 403, 413, 415, 422].includes(status)) return this.refused(response, 'the server would not take it');
    return this.http.fail(response, 'PUT');
  }

  /**
   * RFC 6578 sync-collection from `token` ('' for everything); undefined when the server has none, refuses the
   * token or the size (the caller then lists in full).
   */
  private async syncListing(url: string, token: string): Promise<{ seen: Seen[]; listing: Listing } | undefined> {
    const changed = new Map<string, Seen>();
    const removed = new Set<string>();
    let next = token;
    for (let round = 0; round < MAX_SYNC_ROUNDS; round++) {
      const { results, response } = await davCall(
        this.http,
        (fetchOverDav) =>
          syncCollection({ url, props: { 'd:getetag': {} }, syncLevel: 1, syncToken: next, fetch: fetchOverDav }),
        'listing',
      );
      if (response.status === 404 || response.status === 410)
        throw new CalDavCalendarGoneError(`${shownUrl(url)} is gone`, details(response));
      if (mustFail(response.status, [507, 501])) throw this.http.fail(response, 'REPORT');
      // Anything else that is not a multistatus: no sync-collection here, a token refused, a listing too large.
      if (response.status !== 207) return undefined;
      const multistatus = (results[0]?.raw as { multistatus?: { syncToken?: unknown } } | undefined)?.multistatus;
      let truncated = false;
      for (const result of results) {
        if (!result.href) continue;
        const href = resolveHref(result.href, response.url);
        if (asCollection(href) === url) {
          truncated ||= result.status === 507;
          continue;
        }
        if (result.status === 404 || result.status === 410) {
          removed.add(href);
          changed.delete(href);
        } else if (result.ok) {
          removed.delete(href);
          changed.set(href, { resource: { href, etag: textOf(result.props?.getetag) ?? '' }, rawHref: result.href });
        }
      }
      next = textOf(multistatus?.syncToken) ?? '';
      if (!truncated || next === '') break;
    }
    const listing: Listing = {
      resources: [],
      removed: token === '' ? [] : [...removed],
      full: token === '',
      syncToken: next === '' ? undefined : next,
    };
    return { seen: [...changed.values()], listing };
  }

  /** PROPFIND Depth 1: every resource with its ETag, and the collection's ctag and sync token. */
  private async fullListing(url: string): Promise<{ seen: Seen[]; listing: Listing }> {
    const { results, response } = await davCall(
      this.http,
      (fetchOverDav) =>
        propfind({
          url,
          props: { 'd:resourcetype': {}, 'd:getetag': {}, 'cs:getctag': {}, 'd:sync-token': {} },
          depth: '1',
          fetch: fetchOverDav,
        }),
      'listing',
    );
    if (response.status === 404 || response.status === 410)
      throw new CalDavCalendarGoneError(`${shownUrl(url)} is gone`, details(response));
    if (!succeeded(response)) throw this.http.fail(response, 'PROPFIND');
    const seen: Seen[] = [];
    const listing: Listing = { resources: [], removed: [], full: true };
    for (const result of results) {
      if (!result.href) continue;
      const href = resolveHref(result.href, response.url);
      const props = result.props ?? {};
      if (asCollection(href) === url) {
        listing.ctag = textOf(props.getctag);
        listing.syncToken = textOf(props.syncToken);
        continue;
      }
      if (!result.ok || Object.keys(props.resourcetype ?? {}).includes('collection')) continue;
      seen.push({ resource: { href, etag: textOf(props.getetag) ?? '' }, rawHref: result.href });
    }
    return { seen, listing };
  }

  /** Fills in the text of our own resources (calendar-multiget in batches; single GETs where there is none). */
  private async readOurs(url: string, seen: Seen[], listing: Listing): Promise<void> {
    const ours = seen.filter((entry) => isOurHref(entry.resource.href));
    const gone = new Set<string>();
    for (let start = 0; start < ours.length; start += MULTIGET_BATCH) {
      const batch = ours.slice(start, start + MULTIGET_BATCH);
      const read = await this.multiget(url, batch);
      for (const entry of batch) {
        const found = read === undefined ? await this.get(entry.resource.href) : read.get(entry.resource.href);
        if (found === undefined || found.ics === undefined) {
          if (read === undefined || found === undefined) gone.add(entry.resource.href);
          continue;
        }
        Object.assign(entry.resource, found, { href: entry.resource.href });
      }
    }
    if (gone.size === 0) return;
    // Deleted between the listing and the read: gone for this listing too.
    seen.splice(0, seen.length, ...seen.filter((entry) => !gone.has(entry.resource.href)));
    if (!listing.full) listing.removed.push(...gone);
  }

  /** calendar-multiget of `batch`: the resources read, by absolute href; undefined when the server has none. */
  private async multiget(url: string, batch: readonly Seen[]): Promise<Map<string, RemoteResource> | undefined> {
    const { results, response } = await davCall(
      this.http,
      (fetchOverDav) =>
        davRequest({
          url,
          init: {
            method: 'REPORT',
            namespace: 'd',
            headers: { depth: '1' },
            body: {
              'c:calendar-multiget': {
                _attributes: DAV_CALDAV,
                'd:prop': { 'd:getetag': {}, 'c:calendar-data': {} },
                'd:href': batch.map((entry) => entry.rawHref),
              },
            },
          },
          fetch: fetchOverDav,
        }),
      'listing',
    );
    if (mustFail(response.status, [501])) throw this.http.fail(response, 'REPORT');
    if (response.status !== 207) return undefined;
    const read = new Map<string, RemoteResource>();
    for (const result of results) {
      if (!result.href || !result.ok) continue;
      const href = resolveHref(result.href, response.url);
      const ics = textOf(result.props?.calendarData);
      if (ics === undefined) continue;
      read.set(href, withText({ href, etag: textOf(result.props?.getetag) ?? '' }, ics));
    }
    return read;
  }
}

/**
 * Whether a REPORT's status is one to raise (login refused, slow down, server trouble) rather than a sign the
 * server lacks the report (`fallbacks`: 501 Not Implemented; for sync-collection also 507, too large).
 */
function mustFail(status: number, fallbacks: readonly number[]): boolean {
  if (fallbacks.includes(status)) return false;
  return status === 401 || status === 429 || status >= 500;
}

function details(response: DavResponse) {
  return { status: response.status, host: new URL(response.url).host };
}

/** A resource with its text and what the text says of itself. */
function withText(resource: RemoteResource, ics: string): RemoteResource {
  let identity: ResourceIdentity;
  try {
    identity = parseResource(ics);
  } catch (error) {
    // Components nested past reason: no calendar data we can read, so nobody's we know of, as a resource whose
    // text has no marker: left alone, never taken for ours.
    if (error instanceof IcsNestingError) return { ...resource, ics };
    throw error;
  }
  const { uid, markerValue, hash } = identity;
  return { ...resource, ics, uid, markerValue, hash };
}
