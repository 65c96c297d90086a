/**
 * An in-memory {@link CalDavClient} with Radicale 3.1.8's semantics as the adapter reports them (measured with
 * curl, see the CalDAV plan): every write answers a new ETag; a create (`If-None-Match: *`) of a name that exists
 * is a 412 ({@link ResourceExistsError}); an update or delete with a stale ETag, or an update of a name that is
 * gone, is a 412 ({@link EtagMismatchError}); a write whose UID another resource of the collection holds is a 409
 * ({@link UidConflictError}); a delete of a missing resource is a 404 (`missing`); sync tokens list what changed
 * and what was removed since, and an unknown token (Radicale's 403 valid-sync-token) gives a full listing, as the
 * adapter turns it into one.
 *
 * Faults: {@link MemoryCalDav.faults} (a given call of a method, or a given href, throws an error before or after
 * its change is applied: after means the server wrote but the client never heard) and {@link MemoryCalDav.chaos}
 * (a function asked on every request, for random faults). People are played by {@link MemoryCalDav.edit},
 * {@link MemoryCalDav.deleteByHand} and {@link MemoryCalDav.plant} (a file copied in, even with a UID taken).
 */
import {
  type CalDavCalendar,
  type CalDavClient,
  type Discovery,
  HASH_PROPERTY,
  type Listing,
  MARKER_PROPERTY,
  type RemoteResource,
  type RemoveOutcome,
} from '../../src/caldav/caldav-client.ts';
import {
  CalDavCalendarGoneError,
  EtagMismatchError,
  ResourceExistsError,
  ResourceMissingError,
  UidConflictError,
} from '../../src/caldav/errors.ts';
import { idOfHref } from '../../src/caldav/resource-index.ts';

/** Methods of {@link CalDavClient} that send requests. */
export type Method =
  | 'discover'
  | 'makeCalendar'
  | 'getCalendar'
  | 'deleteCalendar'
  | 'create'
  | 'update'
  | 'get'
  | 'remove'
  | 'list';

/** The methods that change a resource. */
export const WRITE_METHODS = ['create', 'update', 'remove'] as const;
export type WriteMethod = (typeof WRITE_METHODS)[number];

/** When a fault strikes: before the request does anything, or after its change was applied. */
export type FaultWhen = 'before' | 'after';

/** One fault, used once: the `at`-th call of `method` (counted over the fake's life), or its next call on `href`. */
export interface Fault {
  method: Method;
  at?: number | undefined;
  href?: string | undefined;
  when: FaultWhen;
  error: Error;
}

/** A resource as the fake keeps it. */
export interface StoredResource {
  ics: string;
  etag: string;
  uid: string | undefined;
  /** The collection's change number of its last write. */
  changed: number;
}

interface Collection {
  displayName: string;
  resources: Map<string, StoredResource>;
  /** Names removed, with the change number of the removal. */
  removed: Map<string, number>;
  /** Bumped on every change; sync tokens and the ctag carry it. */
  change: number;
  /** A random part of this collection's tokens, so that tokens of another collection (or an old one) are unknown. */
  epoch: string;
}

/** What the fake parses out of a resource, as the adapter's `parseResource` does. */
export function parseIcs(ics: string): { uid?: string; markerValue?: string; hash?: string } {
  const unfolded = ics.replace(/\r?\n[ \t]/g, '');
  const event = /BEGIN:VEVENT\r?\n([\s\S]*?)END:VEVENT/.exec(unfolded)?.[1] ?? '';
  const found: { uid?: string; markerValue?: string; hash?: string } = {};
  for (const line of event.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const name = (line.slice(0, colon).split(';')[0] ?? '').toUpperCase();
    const value = line.slice(colon + 1);
    // A VALARM's lines sit inside the VEVENT too, but never carry these names.
    if (name === 'UID') found.uid ??= value;
    else if (name === MARKER_PROPERTY) found.markerValue ??= value;
    else if (name === HASH_PROPERTY) found.hash ??= value;
  }
  return found;
}

/** The in-memory CalDAV server of one account (`https://dav.test/<user>/`). */
export class MemoryCalDav implements CalDavClient {
  readonly home: string;
  private readonly collections = new Map<string, Collection>();
  /** Requests per method, faulted ones included. */
  readonly calls = new Map<Method, number>();
  /** Writes the server applied, per method (a write faulted `after` counts: it happened). */
  readonly applied = new Map<WriteMethod, number>();
  /** Every request, in the order sent. */
  readonly sent: { method: Method; href: string }[] = [];
  faults: Fault[] = [];
  /** Asked on every request after {@link faults}: answer a fault to inject one. */
  chaos: ((method: Method, href: string) => Omit<Fault, 'method'> | undefined) | undefined;
  /** Milliseconds every request takes (so that requests overlap). */
  latencyMs = 0;
  /** Whether `list` honours sync tokens (false: always a full listing, as servers without sync-collection). */
  supportsSync = true;
  /** Awaited before every request, like the adapter's `BeforeCalDavRequest`. */
  beforeRequest: ((host: string) => Promise<void>) | undefined;
  private etags = 0;

  constructor(calendarUrls: string[] = [], home = 'https://dav.test/alice/') {
    this.home = home;
    for (const url of calendarUrls) this.addCalendar(url);
  }

  /** Makes an empty calendar collection (its URL ends in `/`). */
  addCalendar(url: string, displayName = url): void {
    this.collections.set(url, {
      displayName,
      resources: new Map(),
      removed: new Map(),
      change: 0,
      epoch: Math.random().toString(36).slice(2, 10),
    });
  }

  // ---- what a test inspects ----

  /** The resources of a calendar, by absolute href, sorted. */
  resources(calendarUrl: string): (RemoteResource & { ics: string })[] {
    const collection = this.collection(calendarUrl);
    return [...collection.resources]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([name, stored]) => ({
        ...parseIcs(stored.ics),
        href: calendarUrl + name,
        etag: stored.etag,
        ics: stored.ics,
      }));
  }

  /** The stored resource at `href`, if any. */
  stored(href: string): StoredResource | undefined {
    const { collection, name } = this.locate(href);
    return collection.resources.get(name);
  }

  /** Writes applied of one method, or of all three. */
  writes(method?: WriteMethod): number {
    if (method !== undefined) return this.applied.get(method) ?? 0;
    return WRITE_METHODS.reduce((sum, each) => sum + (this.applied.get(each) ?? 0), 0);
  }

  /** Forgets the counts (after a setup phase). */
  resetCounts(): void {
    this.calls.clear();
    this.applied.clear();
    this.sent.length = 0;
  }

  // ---- what people do ----

  /** A person edits a resource in their calendar app: new text, new ETag. */
  edit(href: string, change: (ics: string) => string): void {
    const { collection, name } = this.locate(href);
    const stored = collection.resources.get(name);
    if (!stored) throw new Error(`no resource at ${href}`);
    this.store(collection, name, change(stored.ics));
  }

  /** A person deletes a resource in their calendar app. */
  deleteByHand(href: string): void {
    const { collection, name } = this.locate(href);
    if (!collection.resources.has(name)) throw new Error(`no resource at ${href}`);
    this.drop(collection, name);
  }

  /** A file put in place behind the server's back (no UID check), as copying it into Radicale's folder does. */
  plant(href: string, ics: string): void {
    const { collection, name } = this.locate(href);
    this.store(collection, name, ics);
  }

  // ---- CalDavClient ----

  async discover(serverOrCalendarUrl: string): Promise<Discovery> {
    await this.request('discover', serverOrCalendarUrl);
    return {
      principalUrl: this.home,
      homeUrl: this.home,
      calendars: [...this.collections.keys()].map((url) => this.calendarInfo(url)),
    };
  }

  async makeCalendar(homeUrl: string, slug: string, displayName: string): Promise<CalDavCalendar> {
    await this.request('makeCalendar', homeUrl);
    const url = `${homeUrl}${slug}/`;
    if (this.collections.has(url)) throw new ResourceExistsError(`MKCALENDAR ${url}: 409`, { status: 409 });
    this.addCalendar(url, displayName);
    return this.calendarInfo(url);
  }

  async getCalendar(url: string): Promise<CalDavCalendar> {
    await this.request('getCalendar', url);
    this.collection(url);
    return this.calendarInfo(url);
  }

  async deleteCalendar(url: string): Promise<void> {
    await this.request('deleteCalendar', url);
    this.collections.delete(url);
  }

  async create(href: string, ics: string): Promise<{ etag: string }> {
    return this.write('create', href, (collection, name) => {
      if (collection.resources.has(name)) throw new ResourceExistsError(`PUT ${name}: 412`, { status: 412 });
      this.checkUid(collection, name, ics);
      return { etag: this.store(collection, name, ics) };
    });
  }

  async update(href: string, ics: string, etag: string): Promise<{ etag: string }> {
    return this.write('update', href, (collection, name) => {
      const stored = collection.resources.get(name);
      // Radicale: If-Match on a name that is gone is a 412 too ("the item has been removed"). The adapter sends
      // no If-Match without an ETag: it reads the resource first, and finds nothing.
      if (etag === '' && stored === undefined) throw new ResourceMissingError(`GET ${name}: 404`, { status: 404 });
      if (etag !== '' && (stored === undefined || stored.etag !== etag))
        throw new EtagMismatchError(`PUT ${name}: 412`, { status: 412 });
      this.checkUid(collection, name, ics);
      return { etag: this.store(collection, name, ics) };
    });
  }

  async get(href: string): Promise<RemoteResource | undefined> {
    await this.request('get', href);
    const { collection, name } = this.locate(href);
    const stored = collection.resources.get(name);
    if (!stored) return undefined;
    return { ...parseIcs(stored.ics), href, etag: stored.etag, ics: stored.ics };
  }

  async remove(href: string, etag: string): Promise<RemoveOutcome> {
    return this.write('remove', href, (collection, name) => {
      const stored = collection.resources.get(name);
      if (!stored) return 'missing';
      if (etag !== '' && stored.etag !== etag) throw new EtagMismatchError(`DELETE ${name}: 412`, { status: 412 });
      this.drop(collection, name);
      return 'deleted';
    });
  }

  async list(calendarUrl: string, syncToken?: string): Promise<Listing> {
    await this.request('list', calendarUrl);
    const collection = this.collection(calendarUrl);
    const since = this.supportsSync ? this.tokenChange(collection, syncToken) : undefined;
    const resources: RemoteResource[] = [];
    for (const [name, stored] of collection.resources) {
      if (since !== undefined && stored.changed <= since) continue;
      const href = calendarUrl + name;
      // As the adapter: only resources named as ours come with their text.
      resources.push(
        idOfHref(href) === undefined
          ? { href, etag: stored.etag }
          : { ...parseIcs(stored.ics), href, etag: stored.etag, ics: stored.ics },
      );
    }
    const removed =
      since === undefined
        ? []
        : [...collection.removed]
            .filter(([name, change]) => change > since && !collection.resources.has(name))
            .map(([name]) => calendarUrl + name);
    return {
      resources,
      removed,
      full: since === undefined,
      syncToken: this.supportsSync ? this.token(collection) : undefined,
      ctag: `"${collection.epoch}-${collection.change}"`,
    };
  }

  // ---- inside ----

  private token(collection: Collection): string {
    return `http://radicale.org/ns/sync/${collection.epoch}-${collection.change}`;
  }

  /** The change number a token stands for, or undefined when this collection never gave it (a full listing). */
  private tokenChange(collection: Collection, token: string | undefined): number | undefined {
    if (token === undefined || token === '') return undefined;
    const match = /^http:\/\/radicale\.org\/ns\/sync\/([a-z0-9]+)-(\d+)$/.exec(token);
    if (!match || match[1] !== collection.epoch) return undefined;
    const change = Number(match[2]);
    return change <= collection.change ? change : undefined;
  }

  private calendarInfo(url: string): CalDavCalendar {
    const collection = this.collection(url);
    return {
      url,
      displayName: collection.displayName,
      ctag: `"${collection.epoch}-${collection.change}"`,
      syncToken: this.supportsSync ? this.token(collection) : undefined,
      supportsSync: this.supportsSync,
      holdsEvents: true,
    };
  }

  private checkUid(collection: Collection, name: string, ics: string): void {
    const { uid } = parseIcs(ics);
    for (const [other, stored] of collection.resources)
      if (other !== name && uid !== undefined && stored.uid === uid)
        throw new UidConflictError(`PUT ${name}: 409 no-uid-conflict (${other})`, { status: 409 });
  }

  /** Stores a resource with a new ETag; answers it. */
  private store(collection: Collection, name: string, ics: string): string {
    this.etags += 1;
    collection.change += 1;
    const etag = `"${this.etags.toString(16).padStart(8, '0')}"`;
    collection.resources.set(name, { ics, etag, uid: parseIcs(ics).uid, changed: collection.change });
    collection.removed.delete(name);
    return etag;
  }

  private drop(collection: Collection, name: string): void {
    collection.change += 1;
    collection.resources.delete(name);
    collection.removed.set(name, collection.change);
  }

  private async write<T>(method: WriteMethod, href: string, apply: (c: Collection, name: string) => T): Promise<T> {
    const after = await this.request(method, href);
    const { collection, name } = this.locate(href);
    const before = collection.change;
    const result = apply(collection, name);
    if (collection.change !== before) this.applied.set(method, (this.applied.get(method) ?? 0) + 1);
    if (after) throw after;
    return result;
  }

  private collection(url: string): Collection {
    const collection = this.collections.get(url);
    if (!collection) throw new CalDavCalendarGoneError(`calendar ${url}: 404`, { status: 404 });
    return collection;
  }

  private locate(href: string): { collection: Collection; name: string } {
    const slash = href.lastIndexOf('/');
    return { collection: this.collection(href.slice(0, slash + 1)), name: href.slice(slash + 1) };
  }

  /**
   * Counts a request, waits its latency, throws a `before` fault; answers an `after` fault for the caller to
   * throw once the change is applied.
   */
  private async request(method: Method, href: string): Promise<Error | undefined> {
    await this.beforeRequest?.(new URL(href).host);
    const call = (this.calls.get(method) ?? 0) + 1;
    this.calls.set(method, call);
    this.sent.push({ method, href });
    if (this.latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, this.latencyMs));
    const index = this.faults.findIndex(
      (fault) =>
        fault.method === method &&
        (fault.at === undefined || fault.at === call) &&
        (fault.href === undefined || fault.href === href),
    );
    const fault = index < 0 ? this.chaos?.(method, href) : this.faults.splice(index, 1)[0];
    if (fault === undefined) return undefined;
    // Only a write has anything to apply first; a read faulted `after` fails all the same.
    if (fault.when === 'before' || !(WRITE_METHODS as readonly Method[]).includes(method)) throw fault.error;
    return fault.error;
  }
}
