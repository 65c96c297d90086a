/**
 * One push: bring a calendar in line with the desired events, touching only events that carry our marker.
 * Every successful write updates the index at once, so a crash loses at most the writes in flight, and those
 * are found again through deterministic ids (an insert answering 409) or the next reconcile. A write Google
 * refuses for good is recorded in the index as refused and not tried again until the class changes or a day
 * has passed, so one bad event never holds up the others.
 */
import type { Logger } from '../logger.ts';
import type { RefusalExample, SyncCounts } from '../store/push-target-record.ts';
import type { CalendarClient, DeleteOutcome, DesiredEvent, EventMarker, RemoteEvent } from './calendar-client.ts';
import {
  EventExistsError,
  EventMissingError,
  EventRefusedError,
  GooglePermanentError,
  TargetRemovedError,
} from './errors.ts';
import {
  CANCELLED,
  carryRefusals,
  DELETE_REFUSED,
  diffPush,
  FOREIGN,
  indexFromRemote,
  refusedMarker,
} from './push-diff.ts';
import { RefusalTally } from './refusal-tally.ts';

/** The index operations a sync needs on its target's index (`PushIndex` implements them over Redis). */
export interface SyncIndex {
  read(): Promise<Map<string, string>>;
  set(eventId: string, hash: string): Promise<unknown>;
  replace(index: Map<string, string>): Promise<unknown>;
}

/** A write request, for metrics. */
export type WriteOperation = 'insert' | 'patch' | 'revive' | 'delete';

/** Everything one sync works with. */
export interface SyncOptions {
  calendar: CalendarClient;
  calendarId: string;
  targetId: string;
  marker: EventMarker;
  desired: readonly DesiredEvent[];
  index: SyncIndex;
  /** List the calendar's marked events and rebuild the index from them before comparing. */
  reconcile: boolean;
  /** Requests in flight at once (default 4). */
  concurrency?: number | undefined;
  signal?: AbortSignal | undefined;
  log: Logger;
  /** Called as each write request is sent. */
  onWrite?: ((operation: WriteOperation) => void) | undefined;
  /** Called for every refusal of this push as it happens, whether the push then completes or fails. */
  onRefusal?: ((example: RefusalExample) => void) | undefined;
  /** Called after every index entry written: the push got somewhere (a write, a refusal, a conflict noted). */
  onIndexed?: (() => void) | undefined;
  /** The clock (epoch ms): when a refused event is due to be tried again. */
  now: () => number;
}

/** How long a version of an event Google refused waits before it is tried again (a changed version: at once). */
export const REFUSAL_RETRY_MS = 24 * 60 * 60_000;

/**
 * Runs one push. A rate-limit, quota, consent, calendar-gone, transient or unknown error stops it: no new
 * request starts, the ones in flight settle (their successes are indexed), and the first such error is
 * rethrown. A permanent refusal of one event is recorded and counted, and the push goes on; once five come
 * before any write succeeded, no new request starts until the ones in flight settle: if none of them
 * succeeded either (the calendar refuses us, not one event), the push stops and throws the first refusal.
 */
export async function syncTarget(options: SyncOptions): Promise<SyncCounts> {
  return new SyncRun(options).run();
}

class SyncRun {
  private readonly options: SyncOptions;
  private readonly now: number;
  private readonly counts: SyncCounts = {
    desired: 0,
    inserted: 0,
    patched: 0,
    revived: 0,
    deleted: 0,
    unchanged: 0,
    conflicts: 0,
    refused: 0,
    writes: 0,
    reads: 0,
  };
  private readonly conflictIds: string[] = [];
  private readonly refusals = new RefusalTally();
  private stopError: unknown;
  /** A delete answered 404, which Google also answers for every event of a deleted calendar. */
  private deleteMissed = false;

  constructor(options: SyncOptions) {
    this.options = options;
    this.now = options.now();
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
      ...diff.remove.map((id) => () => this.remove(id)),
      ...diff.revive.map((event) => () => this.write(event, () => this.revive(event))),
      ...diff.insert.map((event) => () => this.write(event, () => this.insert(event, true))),
    ];
    await this.pool(operations);
    await this.checkCalendar();
    this.report();
    if (this.stopError === undefined && options.signal?.aborted)
      this.stopError = options.signal.reason ?? new Error('push aborted');
    const stop = this.stopError ?? this.refusals.stopError();
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

  /**
   * Runs operations with at most `concurrency` in flight, starting none once the run must stop, nor while the
   * refusals hold the run: then, once the operations in flight settled, it goes on from where it stopped if
   * one of them succeeded, and stops if none did (the breaker trips).
   */
  private async pool(operations: (() => Promise<void>)[]): Promise<void> {
    let next = 0;
    const lane = async () => {
      while (next < operations.length && !this.stopping() && !this.refusals.holding()) {
        const operation = operations[next] as () => Promise<void>;
        next += 1;
        try {
          await operation();
        } catch (error) {
          this.stopError ??= error;
        }
      }
    };
    for (;;) {
      const lanes = Math.max(1, Math.min(this.options.concurrency ?? 4, operations.length - next));
      await Promise.all(Array.from({ length: lanes }, lane));
      // Every lane is idle: the operations ran out, the run must stop, or the refusals hold it and decide now.
      if (!this.refusals.holding() || this.stopping() || !this.refusals.resume()) return;
    }
  }

  private stopping(): boolean {
    return (
      this.stopError !== undefined || this.refusals.stopError() !== undefined || this.options.signal?.aborted === true
    );
  }

  /** Google answers 404 for the events of a calendar its owner deleted: after a delete answered 404, asks once. */
  private async checkCalendar(): Promise<void> {
    const { calendar, calendarId } = this.options;
    if (!this.deleteMissed || this.stopping()) return;
    this.counts.reads += 1;
    try {
      await calendar.getCalendar(calendarId);
    } catch (error) {
      this.stopError ??= error;
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
    const { count, examples } = this.refusals;
    if (count > 0)
      log.warn(
        { refused: count, examples },
        `Google refused ${count} events; they are tried again when they change or after 24 h`,
      );
  }

  /**
   * One event's write; a permanent refusal is indexed against that version of the event instead of stopping the push.
   */
  private async write(event: DesiredEvent, operation: () => Promise<void>): Promise<void> {
    try {
      await operation();
    } catch (error) {
      if (!(error instanceof EventRefusedError)) throw error;
      this.refused(event.id, error);
      await this.record(event.id, refusedMarker(event.hash, this.now + REFUSAL_RETRY_MS));
    }
  }

  private refused(eventId: string, error: EventRefusedError): void {
    this.refusals.add(eventId, error);
    this.counts.refused += 1;
    this.options.onRefusal?.({ eventId, message: error.message });
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
    this.refusals.succeeded();
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
    this.refusals.succeeded();
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
    this.refusals.succeeded();
    await this.record(event.id, event.hash);
    this.counts.revived += 1;
  }

  /**
   * Deletes an event; Google keeps it as cancelled, and so does the index, so that it comes back in one write.
   * A refused delete is indexed as refused ({@link DELETE_REFUSED}) and waits like a refused write, so that
   * deletes Google keeps refusing cannot stop every push before its other writes.
   */
  private async remove(eventId: string): Promise<void> {
    const { calendar, calendarId } = this.options;
    this.writing('delete');
    let outcome: DeleteOutcome;
    try {
      outcome = await calendar.deleteEvent(calendarId, eventId);
    } catch (error) {
      if (!(error instanceof EventRefusedError)) throw error;
      this.refused(eventId, error);
      return this.record(eventId, refusedMarker(DELETE_REFUSED, this.now + REFUSAL_RETRY_MS));
    }
    if (outcome === 'deleted') this.refusals.succeeded();
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
  private writing(operation: WriteOperation): void {
    this.counts.writes += 1;
    this.options.onWrite?.(operation);
  }
}
