/**
 * One push: bring a calendar in line with the desired events, touching only events that carry our marker.
 * Every successful write updates the index at once, so a crash loses at most the writes in flight, and those
 * are found again through deterministic ids (an insert answering 409) or the next reconcile. A write Google
 * refuses for good is recorded in the index as refused and not tried again until the class changes or a day
 * has passed, so one bad event never holds up the others.
 */
import type { Logger } from '../logger.ts';
import type { DesiredEvent } from '../push/desired-events.ts';
import { TargetRemovedError } from '../push/errors.ts';
import { emptyCounts, LanePool } from '../push/lane-pool.ts';
import { CANCELLED, carryRefusals, DELETE_REFUSED, diffPush, FOREIGN } from '../push/push-diff.ts';
import type { RefusalExample, SyncCounts } from '../store/push-target-record.ts';
import type { CalendarClient, EventMarker, RemoteEvent } from './calendar-client.ts';
import { EventExistsError, EventMissingError, EventRefusedError, GooglePermanentError } from './errors.ts';
import { indexFromRemote } from './remote-index.ts';

/** The index operations a sync needs on its target's index (`PushIndex` implements them over Redis). */
export interface GoogleSyncIndex {
  read(): Promise<Map<string, string>>;
  set(eventId: string, hash: string): Promise<unknown>;
  replace(index: Map<string, string>): Promise<unknown>;
}

/** A write request, for metrics. */
export type GoogleWriteOperation = 'insert' | 'patch' | 'revive' | 'delete';

/** Everything one sync works with. */
export interface GoogleSyncOptions {
  calendar: CalendarClient;
  calendarId: string;
  targetId: string;
  marker: EventMarker;
  desired: readonly DesiredEvent[];
  index: GoogleSyncIndex;
  /** List the calendar's marked events and rebuild the index from them before comparing. */
  reconcile: boolean;
  /** Requests in flight at once (default 4). */
  concurrency?: number | undefined;
  signal?: AbortSignal | undefined;
  log: Logger;
  /** Called as each write request is sent. */
  onWrite?: ((operation: GoogleWriteOperation) => void) | undefined;
  /** Called for every refusal of this push as it happens, whether the push then completes or fails. */
  onRefusal?: ((example: RefusalExample) => void) | undefined;
  /** Called after every index entry written: the push got somewhere (a write, a refusal, a conflict noted). */
  onIndexed?: (() => void) | undefined;
  /** The clock (epoch ms): when a refused event is due to be tried again. */
  now: () => number;
}

/**
 * Runs one push. A rate-limit, quota, consent, calendar-gone, transient or unknown error stops it: no new
 * request starts, the ones in flight settle (their successes are indexed), and the first such error is
 * rethrown. A permanent refusal of one event is recorded and counted, and the push goes on; once five come
 * before any write succeeded, no new request starts until the ones in flight settle: if none of them
 * succeeded either (the calendar refuses us, not one event), the push stops and throws the first refusal.
 */
export async function syncGoogleTarget(options: GoogleSyncOptions): Promise<SyncCounts> {
  return new SyncRun(options).run();
}

class SyncRun {
  private readonly options: GoogleSyncOptions;
  private readonly now: number;
  private readonly counts: SyncCounts = emptyCounts();
  private readonly conflictIds: string[] = [];
  private readonly lanes: LanePool;
  /** A delete answered 404, which Google also answers for every event of a deleted calendar. */
  private deleteMissed = false;

  constructor(options: GoogleSyncOptions) {
    this.options = options;
    this.now = options.now();
    const record = (id: string, value: string) => this.record(id, value);
    const isRefusal = (error: unknown) => error instanceof EventRefusedError;
    this.lanes = new LanePool({ ...options, isRefusal, record, counts: this.counts, now: this.now });
  }

  async run(): Promise<SyncCounts> {
    const { options, counts } = this;
    const index = options.reconcile ? await this.reconcileIndex() : await options.index.read();
    const diff = diffPush(options.desired, index, this.now);
    counts.unchanged = diff.unchanged;
    counts.conflicts = diff.conflicts;
    counts.refused = diff.refused;
    // Not from the diff's counts: its `refused` holds refused deletes of events no longer desired as well.
    counts.desired = new Set(options.desired.map((event) => event.id)).size;
    // Deletions of cancelled classes matter to people more than revivals and new events, so they come early.
    const operations = [
      ...diff.patch.map((event) => () => this.write(event, () => this.patch(event, true))),
      ...diff.remove.map((id) => () => this.lanes.refusable(id, DELETE_REFUSED, () => this.remove(id))),
      ...diff.revive.map((event) => () => this.write(event, () => this.revive(event))),
      ...diff.insert.map((event) => () => this.write(event, () => this.insert(event, true))),
    ];
    await this.lanes.run(operations);
    await this.checkCalendar();
    this.report();
    const stop = this.lanes.stopReason();
    if (stop !== undefined) {
      options.log.debug({ ...counts }, 'push stopped before it was complete');
      throw stop;
    }
    return { ...counts };
  }

  /** Lists our marked events (deleted ones included) and makes them the new index, keeping refusals not due yet. */
  private async reconcileIndex(): Promise<Map<string, string>> {
    const { calendar, calendarId, marker, index, targetId } = this.options;
    const events: RemoteEvent[] = [];
    for await (const page of calendar.listMarkedEvents(calendarId, marker)) {
      this.counts.reads += 1;
      events.push(...page);
    }
    // Without the old refusals, the reconcile that follows a failed push would try the same refused events first.
    const remote = carryRefusals(await index.read(), indexFromRemote(events, marker), this.now);
    if ((await index.replace(remote)) === false) throw new TargetRemovedError(targetId);
    return remote;
  }

  /** Google answers 404 for the events of a calendar its owner deleted: after a delete answered 404, asks once. */
  private async checkCalendar(): Promise<void> {
    const { calendar, calendarId } = this.options;
    if (!this.deleteMissed || this.lanes.stopping()) return;
    this.counts.reads += 1;
    try {
      await calendar.getCalendar(calendarId);
    } catch (error) {
      this.lanes.fail(error);
    }
  }

  /** Logs the conflicts and refusals of this push, once each. */
  private report(): void {
    const { log } = this.options;
    if (this.conflictIds.length > 0)
      log.warn(
        { conflicts: this.counts.conflicts, examples: this.conflictIds },
        'event ids taken by events this service did not create; left alone',
      );
    const { count, examples } = this.lanes.refusals;
    if (count > 0)
      log.warn(
        { refused: count, examples },
        `Google refused ${count} events; they are tried again when they change or after 24 h`,
      );
  }

  /** One event's write; a permanent refusal is indexed against that version instead of stopping the push. */
  private write(event: DesiredEvent, operation: () => Promise<void>): Promise<void> {
    return this.lanes.refusable(event.id, event.hash, operation);
  }

  private async insert(event: DesiredEvent, mayPatch: boolean): Promise<void> {
    const { calendar, calendarId, marker } = this.options;
    try {
      this.writing('insert');
      await calendar.insertEvent(calendarId, event, marker);
    } catch (error) {
      if (error instanceof EventExistsError) return this.resolveTaken(event, mayPatch);
      throw error;
    }
    this.lanes.succeeded();
    await this.record(event.id, event.hash);
    this.counts.inserted += 1;
  }

  /** The id is taken: by our own earlier write (lost from the index), by our cancelled event, or by someone else. */
  private async resolveTaken(event: DesiredEvent, mayPatch: boolean): Promise<void> {
    const { calendar, calendarId, marker } = this.options;
    this.counts.reads += 1;
    const remote = await calendar.getEvent(calendarId, event.id);
    // Google keeps the ids of purged events reserved: asking again will not free this one.
    if (remote === undefined)
      throw new EventRefusedError(
        `event ${event.id}: insert answered 409 but get found nothing (the id stays reserved)`,
      );
    if (remote.markerValue !== marker.value) {
      this.counts.conflicts += 1;
      if (this.conflictIds.length < 5) this.conflictIds.push(event.id);
      // Remembered, so that later pushes do not ask again; a reconcile forgets it and tries once more.
      return this.record(event.id, FOREIGN);
    }
    if (remote.cancelled) return this.revive(event, false);
    if (remote.hash === event.hash) {
      await this.record(event.id, event.hash);
      this.counts.unchanged += 1;
      return;
    }
    if (!mayPatch) throw new EventRefusedError(`event ${event.id}: patch found nothing, then insert found it taken`);
    return this.patch(event, false);
  }

  private async patch(event: DesiredEvent, mayInsert: boolean): Promise<void> {
    const { calendar, calendarId, marker } = this.options;
    try {
      this.writing('patch');
      await calendar.patchEvent(calendarId, event, marker);
    } catch (error) {
      // Gone from the calendar for good (deleted events stay as cancelled, so this is rare): write it anew.
      if (mayInsert && error instanceof EventMissingError) return this.insert(event, false);
      throw error;
    }
    this.lanes.succeeded();
    await this.record(event.id, event.hash);
    this.counts.patched += 1;
  }

  private async revive(event: DesiredEvent, mayInsert = true): Promise<void> {
    const { calendar, calendarId, marker } = this.options;
    try {
      this.writing('revive');
      await calendar.reviveEvent(calendarId, event, marker);
    } catch (error) {
      // Never there at all (a delete answering 404 is indexed as deleted too): write it anew.
      if (mayInsert && error instanceof EventMissingError) return this.insert(event, false);
      // Google has been seen to answer 403 to an update of an event its owner deleted in the web UI: that event
      // is refused, not the calendar (a lost writer access stops the push through the other writes' 403s).
      if (error instanceof GooglePermanentError && !(error instanceof EventRefusedError) && error.status === 403) {
        throw new EventRefusedError(
          `event ${event.id}: Google refused to bring the deleted event back (${error.message})`,
          { status: 403, reason: error.reason, cause: error },
        );
      }
      throw error;
    }
    this.lanes.succeeded();
    await this.record(event.id, event.hash);
    this.counts.revived += 1;
  }

  /**
   * Deletes an event; Google keeps it as cancelled, and so does the index, so that it comes back in one write.
   * A refused delete is indexed as refused ({@link DELETE_REFUSED}, by the lane pool) and waits like a refused
   * write, so that deletes Google keeps refusing cannot stop every push before its other writes.
   */
  private async remove(eventId: string): Promise<void> {
    const { calendar, calendarId } = this.options;
    this.writing('delete');
    const outcome = await calendar.deleteEvent(calendarId, eventId);
    if (outcome === 'deleted') this.lanes.succeeded();
    if (outcome === 'missing') this.deleteMissed = true;
    await this.record(eventId, CANCELLED);
    this.counts.deleted += 1;
  }

  /** Writes one index entry at once; the index refuses it once the target is removed. */
  private async record(eventId: string, value: string): Promise<void> {
    const { index, targetId } = this.options;
    if ((await index.set(eventId, value)) === false) throw new TargetRemovedError(targetId);
    this.options.onIndexed?.();
  }

  /** Counts a write request and reports it. */
  private writing(operation: GoogleWriteOperation): void {
    this.counts.writes += 1;
    this.options.onWrite?.(operation);
  }
}
