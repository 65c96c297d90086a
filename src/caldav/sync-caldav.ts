/**
 * One CalDAV push: bring a calendar collection in line with the desired resources, writing only the difference
 * and touching only resources of ours (named `tts-*.ics` and carrying our marker with this source). Over the push
 * core as google/sync-target.ts is: the same diff (push/push-diff.ts, over the index's digests), the same pool of
 * lanes and refusal tally (push/lane-pool.ts), the same counts; what differs is CalDAV's conditional writes.
 *
 * - A create sends `If-None-Match: *`. Its 412 means the name exists: ours (an earlier write whose index entry was
 *   lost, e.g. a worker killed between the PUT and the index write) is recorded, or merged and updated when it
 *   holds another version; someone else's is left alone ({@link FOREIGN}). A 409 (another resource holds the UID)
 *   is left alone too. Names are deterministic, so a retried or crashed job never duplicates a resource.
 * - An update or delete sends `If-Match` with the ETag we last saw. Its 412 means a person changed the resource:
 *   it is read back and merged (ics-merge.ts: our fields win, theirs such as alarms stay), then written with the
 *   new ETag. After {@link MAX_RESOLVES} such rounds (a person editing it at that very moment) it is left for
 *   a retry of the push, which then fails as transient once the other writes are done. A 412 although the ETag
 *   still matches is the server refusing the data (Xandikos answers so for iCalendar it cannot read): refused.
 * - A reconcile (asked for, or with an empty index) lists the collection (with the sync token when there is an
 *   index to update, else in full), rebuilds the index from our resources only, and deletes duplicates (a
 *   second resource of ours holding a desired UID). Resources of ours deleted by hand drop out of the index, so
 *   that they are created again only if still desired.
 *
 * Every successful write updates the index at once, so a crash loses at most the writes in flight, and those are
 * found again through the deterministic names (a create answering 412) or the next reconcile.
 */
import type { Logger } from '../logger.ts';
import { TargetRemovedError } from '../push/errors.ts';
import { emptyCounts, LanePool } from '../push/lane-pool.ts';
import { DELETE_REFUSED, diffPush, FOREIGN, parseRefused } from '../push/push-diff.ts';
import type { RefusalExample, SyncCounts } from '../store/push-target-record.ts';
import type { CalDavClient, DesiredResource, RemoteResource, RemoveOutcome } from './caldav-client.ts';
import {
  CalDavTransientError,
  EtagMismatchError,
  ResourceExistsError,
  ResourceMissingError,
  ResourceRefusedError,
  UidConflictError,
} from './errors.ts';
import { mergeOwned } from './ics-merge.ts';
import { type CalDavIndex, hrefFor, idOfHref, ownedValue, parseOwned, projectHashes } from './resource-index.ts';

/** A write request, for metrics. */
export type CalDavWriteOperation = 'create' | 'update' | 'delete';

/** What a listing leaves to keep for the next one. */
export interface ListingState {
  syncToken?: string | undefined;
  ctag?: string | undefined;
}

/** Everything one CalDAV push works with. */
export interface CalDavSyncOptions {
  client: CalDavClient;
  /** The collection's absolute URL, ending in `/`. */
  calendarUrl: string;
  /** The source key (`group:4242`): our marker's value. */
  source: string;
  desired: readonly DesiredResource[];
  index: CalDavIndex;
  /** List the collection and rebuild the index before comparing (done anyway when the index is empty). */
  reconcile: boolean;
  /** The sync token of the last listing, if any: a reconcile then asks only what changed since. */
  syncToken?: string | undefined;
  /** Called after a listing rebuilt the index, with what to ask the next one with. */
  onListing?: ((listing: ListingState) => Promise<void>) | undefined;
  signal?: AbortSignal | undefined;
  log: Logger;
  /** For the error when the target is removed meanwhile. */
  targetId?: string | undefined;
  /** Requests in flight at once (default 4). */
  concurrency?: number | undefined;
  /** Called as each write request is sent. */
  onWrite?: ((operation: CalDavWriteOperation) => void) | undefined;
  /** Called for every refusal of this push as it happens. */
  onRefusal?: ((example: RefusalExample) => void) | undefined;
  /** Called after every index entry written. */
  onIndexed?: (() => void) | undefined;
  /** The clock (epoch ms), for refusals (default `Date.now`). */
  now?: (() => number) | undefined;
}

/**
 * Rounds of "412 → read back → merge → write with the new ETag" per resource and push before it is left for
 * the push's retry: a person editing the same event again and again should not hold a push forever, nor make
 * the change wait a day as a refusal would.
 */
export const MAX_RESOLVES = 2;

/**
 * Runs one push. An error other than a refusal of one resource (auth, forbidden, quota, rate limit, transient,
 * calendar gone, unknown) stops it: no new request starts, the ones in flight settle (their successes are
 * indexed), and the first such error is rethrown. Refusals are recorded and counted, and the push goes on,
 * unless five come before any write succeeded and none in flight succeeds (the calendar refuses us).
 */
export async function syncCaldav(options: CalDavSyncOptions): Promise<SyncCounts> {
  return new CalDavSyncRun(options).run();
}

class CalDavSyncRun {
  private readonly options: CalDavSyncOptions;
  private readonly now: number;
  private readonly counts: SyncCounts = emptyCounts();
  private readonly conflictIds: string[] = [];
  private readonly lanes: LanePool;
  /** Resources that kept changing on the server while we merged: the push fails with this once done. */
  private contention: CalDavTransientError | undefined;

  constructor(options: CalDavSyncOptions) {
    this.options = options;
    this.now = (options.now ?? Date.now)();
    const record = (id: string, value: string) => this.record(id, value);
    const isRefusal = (error: unknown) => error instanceof ResourceRefusedError;
    this.lanes = new LanePool({ ...options, isRefusal, record, counts: this.counts, now: this.now });
  }

  async run(): Promise<SyncCounts> {
    const { options, counts } = this;
    let index = await options.index.read();
    if (options.reconcile || index.size === 0) index = await this.reconcileIndex(index);
    const diff = diffPush(options.desired, projectHashes(index), this.now);
    counts.unchanged = diff.unchanged;
    counts.conflicts = diff.conflicts;
    counts.refused = diff.refused;
    counts.desired = new Set(options.desired.map((resource) => resource.id)).size;
    // Deletes go first: a duplicate of ours holding a UID makes the server refuse (409) to create the UID's
    // rightful name, and deletions of cancelled classes matter to people more than new events anyway.
    await this.lanes.run(diff.remove.map((id) => () => this.remove(id, index.get(id))));
    await this.lanes.run([
      ...diff.patch.map((resource) => () => this.write(resource, () => this.update(resource, index.get(resource.id)))),
      ...diff.insert.map((resource) => () => this.write(resource, () => this.create(resource, MAX_RESOLVES))),
    ]);
    this.report();
    const stop = this.lanes.stopReason() ?? this.contention;
    if (stop !== undefined) {
      options.log.debug({ ...counts }, 'CalDAV push stopped before it was complete');
      throw stop;
    }
    return { ...counts };
  }

  /**
   * Lists the collection and makes our resources in it the new index: everything with a full listing, the
   * changes and removals since the sync token otherwise (an empty index is always listed in full). Names
   * someone else holds are forgotten (tried once more), refusals not due yet are kept.
   */
  private async reconcileIndex(previous: Map<string, string>): Promise<Map<string, string>> {
    const { client, calendarUrl, source, desired, syncToken } = this.options;
    const listing = await client.list(calendarUrl, previous.size === 0 ? undefined : syncToken);
    this.counts.reads += 1;
    const next = new Map<string, string>();
    if (!listing.full) {
      for (const [id, value] of previous) if (value !== FOREIGN) next.set(id, value);
      for (const href of listing.removed) {
        const id = idOfHref(href);
        if (id !== undefined) next.delete(id);
      }
    }
    const desiredIdOfUid = new Map<string, string>();
    for (const resource of desired)
      if (!desiredIdOfUid.has(resource.uid)) desiredIdOfUid.set(resource.uid, resource.id);
    let duplicates = 0;
    for (const resource of listing.resources) {
      const id = idOfHref(resource.href);
      if (id === undefined) continue;
      if (resource.markerValue !== source) {
        next.delete(id);
        continue;
      }
      // A duplicate (ours, holding the UID of another desired name) is indexed like any resource of ours no
      // longer desired: the deletes that follow remove it, and if they fail, the next push still knows it.
      const rightful = resource.uid === undefined ? undefined : desiredIdOfUid.get(resource.uid);
      if (rightful !== undefined && rightful !== id) duplicates += 1;
      next.set(id, ownedValue(resource.hash ?? '', resource.etag));
    }
    this.carryRefusals(previous, next);
    await this.replaceIndex(next);
    this.options.log.debug(
      { full: listing.full, ours: next.size, removed: listing.removed.length, duplicates },
      'CalDAV collection listed',
    );
    if (duplicates > 0) this.options.log.info({ duplicates }, 'duplicate resources of ours found; deleting them');
    await this.options.onListing?.({ syncToken: listing.syncToken, ctag: listing.ctag });
    return next;
  }

  /**
   * Keeps the refusals of `previous` not due yet whose refused version the server does not hold, so that a
   * reconcile does not try them again at once; a refused delete is kept while the server still holds ours.
   */
  private carryRefusals(previous: ReadonlyMap<string, string>, next: Map<string, string>): void {
    for (const [id, value] of previous) {
      const refusal = parseRefused(value);
      if (refusal === undefined || refusal.retryAt <= this.now || next.get(id) === value) continue;
      const held = parseOwned(next.get(id) ?? FOREIGN)?.hash;
      const keep = refusal.hash === DELETE_REFUSED ? held !== undefined : held !== refusal.hash;
      if (keep) next.set(id, value);
    }
  }

  private report(): void {
    const { log } = this.options;
    if (this.conflictIds.length > 0)
      log.warn(
        { conflicts: this.counts.conflicts, examples: this.conflictIds },
        'resource names or UIDs taken by resources this service did not write; left alone',
      );
    const { count, examples } = this.lanes.refusals;
    if (count > 0)
      log.warn(
        { refused: count, examples },
        `the CalDAV server refused ${count} resources; they are tried again when they change or after 24 h`,
      );
  }

  /** One resource's write; a refusal is indexed against that version instead of stopping the push. */
  private write(resource: DesiredResource, operation: () => Promise<void>): Promise<void> {
    return this.lanes.refusable(resource.id, resource.hash, operation);
  }

  private href(id: string): string {
    return hrefFor(this.options.calendarUrl, id);
  }

  /** Creates a resource; a name or UID already taken is resolved by reading it (`resolves` rounds left). */
  private async create(resource: DesiredResource, resolves: number): Promise<void> {
    let etag: string;
    try {
      this.writing('create');
      ({ etag } = await this.options.client.create(this.href(resource.id), resource.ics));
    } catch (error) {
      if (error instanceof ResourceExistsError) return this.resolveTaken(resource, resolves);
      if (error instanceof UidConflictError) return this.conflict(resource.id);
      throw error;
    }
    this.lanes.succeeded();
    await this.record(resource.id, ownedValue(resource.hash, etag));
    this.counts.inserted += 1;
  }

  /** A create found the name taken: by our own earlier write (lost from the index), or by someone else. */
  private async resolveTaken(resource: DesiredResource, resolves: number): Promise<void> {
    const remote = await this.read(resource.id);
    // Nothing there after a 412 on If-None-Match: the server refused the data itself (Xandikos does so).
    if (remote === undefined)
      throw new ResourceRefusedError(`resource ${resource.id}: create answered 412 but nothing is there`);
    if (resolves <= 0) return this.contended(resource.id);
    return this.mergeInto(resource, remote, resolves);
  }

  /** Updates a resource from the version we last wrote; a person's change since is read back and merged. */
  private async update(resource: DesiredResource, known: string | undefined): Promise<void> {
    const etag = parseOwned(known ?? '')?.etag ?? '';
    // Without an ETag (the server sent none) the resource is read first: a person's change may be there.
    if (etag === '') return this.resolveChanged(resource, undefined, MAX_RESOLVES);
    let answer: { etag: string };
    try {
      this.writing('update');
      answer = await this.options.client.update(this.href(resource.id), resource.ics, etag);
    } catch (error) {
      if (error instanceof EtagMismatchError) return this.resolveChanged(resource, etag, MAX_RESOLVES);
      if (error instanceof ResourceMissingError) return this.create(resource, MAX_RESOLVES - 1);
      if (error instanceof UidConflictError) return this.uidHeld(resource.id);
      throw error;
    }
    this.lanes.succeeded();
    await this.record(resource.id, ownedValue(resource.hash, answer.etag));
    this.counts.patched += 1;
  }

  /** An update found the resource changed since `sentEtag` (or had none to send): reads it back. */
  private async resolveChanged(resource: DesiredResource, sentEtag: string | undefined, resolves: number) {
    const remote = await this.read(resource.id);
    // Deleted by hand meanwhile, and still desired: created again.
    if (remote === undefined) return this.create(resource, resolves - 1);
    if (sentEtag !== undefined && remote.etag === sentEtag)
      throw new ResourceRefusedError(`resource ${resource.id}: update answered 412 although its ETag matched`);
    return this.mergeInto(resource, remote, resolves);
  }

  /**
   * Brings a resource read back in line: someone else's is left alone; ours already holding this version is only
   * recorded; else their copy with our fields replaced is written with the ETag just read.
   */
  private async mergeInto(resource: DesiredResource, remote: RemoteResource, resolves: number): Promise<void> {
    if (remote.markerValue !== this.options.source) return this.conflict(resource.id);
    if (remote.hash === resource.hash) {
      await this.record(resource.id, ownedValue(resource.hash, remote.etag));
      this.counts.unchanged += 1;
      return;
    }
    if (resolves <= 0) return this.contended(resource.id);
    const merged = remote.ics === undefined ? resource.ics : mergeOwned(remote.ics, resource.ics);
    let answer: { etag: string };
    try {
      this.writing('update');
      answer = await this.options.client.update(this.href(resource.id), merged, remote.etag);
    } catch (error) {
      if (error instanceof EtagMismatchError) return this.resolveChanged(resource, remote.etag, resolves - 1);
      if (error instanceof ResourceMissingError) return this.create(resource, resolves - 1);
      if (error instanceof UidConflictError) return this.uidHeld(resource.id);
      throw error;
    }
    this.lanes.succeeded();
    await this.record(resource.id, ownedValue(resource.hash, answer.etag));
    this.counts.patched += 1;
  }

  /** A desired name or UID held by a resource we did not write: left alone until a reconcile forgets it. */
  private async conflict(id: string): Promise<void> {
    this.counts.conflicts += 1;
    if (this.conflictIds.length < 5) this.conflictIds.push(id);
    await this.record(id, FOREIGN);
  }

  /** A resource kept changing on the server while we merged it: its entry stays, and the push is retried. */
  private contended(id: string): void {
    this.contention ??= new CalDavTransientError(
      `resource ${id} changed on the server again while it was being merged; the push is tried again`,
    );
  }

  /**
   * An update of a resource of ours answered 409: another resource holds its UID (a duplicate the index does not
   * know yet). The name stays ours, so its entry stays as it is (indexing it as foreign would lose it): the next
   * reconcile lists the duplicate and deletes it, and the update is tried again.
   */
  private uidHeld(id: string): void {
    this.counts.conflicts += 1;
    if (this.conflictIds.length < 5) this.conflictIds.push(id);
  }

  /**
   * Deletes a resource of ours no longer desired, with the ETag we last saw (read first when we have none). A
   * resource changed by a person meanwhile is read back and deleted with its new ETag if it is still ours; one
   * no longer ours is only forgotten. A refused delete waits like a refused write.
   */
  private async remove(id: string, known: string | undefined): Promise<void> {
    const etag = parseOwned(known ?? FOREIGN)?.etag ?? '';
    await this.lanes.refusable(id, DELETE_REFUSED, async () => {
      await this.deleteOurs(id, etag === '' ? undefined : etag, MAX_RESOLVES);
    });
  }

  /** Deletes `id` with `etag`, or after reading it when undefined; answers whether it was deleted now. */
  private async deleteOurs(id: string, etag: string | undefined, resolves: number): Promise<boolean> {
    let sent = etag;
    if (sent === undefined) {
      const remote = await this.read(id);
      if (remote === undefined || remote.markerValue !== this.options.source) {
        await this.forget(id);
        return false;
      }
      sent = remote.etag;
    }
    let outcome: RemoveOutcome;
    try {
      this.writing('delete');
      outcome = await this.options.client.remove(this.href(id), sent);
    } catch (error) {
      if (!(error instanceof EtagMismatchError)) throw error;
      if (resolves <= 1) {
        this.contended(id);
        return false;
      }
      const remote = await this.read(id);
      if (remote !== undefined && remote.etag === sent)
        throw new ResourceRefusedError(`resource ${id}: delete answered 412 although its ETag matched`);
      if (remote === undefined || remote.markerValue !== this.options.source) {
        await this.forget(id);
        return false;
      }
      return this.deleteOurs(id, remote.etag, resolves - 1);
    }
    if (outcome === 'deleted') this.lanes.succeeded();
    await this.forget(id);
    this.counts.deleted += 1;
    return outcome === 'deleted';
  }

  /** GET, counted. */
  private async read(id: string): Promise<RemoteResource | undefined> {
    this.counts.reads += 1;
    return this.options.client.get(this.href(id));
  }

  private async replaceIndex(entries: Map<string, string>): Promise<void> {
    if ((await this.options.index.replace(entries)) === false) throw this.removed();
  }

  /** Writes one index entry at once; the index refuses it once the target is removed. */
  private async record(id: string, value: string): Promise<void> {
    if ((await this.options.index.set(id, value)) === false) throw this.removed();
    this.options.onIndexed?.();
  }

  private async forget(id: string): Promise<void> {
    if ((await this.options.index.remove(id)) === false) throw this.removed();
    this.options.onIndexed?.();
  }

  private removed(): TargetRemovedError {
    return new TargetRemovedError(this.options.targetId ?? this.options.calendarUrl);
  }

  private writing(operation: CalDavWriteOperation): void {
    this.counts.writes += 1;
    this.options.onWrite?.(operation);
  }
}
