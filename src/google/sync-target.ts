/**
 * One push: bring a calendar in line with the desired events, touching only events that carry our marker.
 * Every successful write updates the index at once, so a crash loses at most the writes in flight, and those
 * are found again through deterministic ids (an insert answering 409) or the next reconcile.
 */
import type { Logger } from '../logger.ts';
import type { CalendarTarget, DesiredEvent, EventMarker, RemoteEvent } from './calendar-target.ts';
import { EventExistsError, EventMissingError, GooglePermanentError, GoogleTransientError } from './errors.ts';
import { CANCELLED, FOREIGN, indexFromRemote, planPush } from './plan-push.ts';

/** The index operations a sync needs (`PushIndex` implements them over Redis). */
export interface SyncIndex {
  read(targetId: string): Promise<Map<string, string>>;
  set(targetId: string, eventId: string, hash: string): Promise<unknown>;
  replace(targetId: string, index: Map<string, string>): Promise<unknown>;
}

/** A write request, for metrics. */
export type WriteOperation = 'insert' | 'patch' | 'revive' | 'delete';

/** The target was removed while its push ran (the index refuses writes for a removed target). */
export class TargetRemovedError extends Error {
  override name = 'TargetRemovedError';
}

/** What one sync did. `writes` and `reads` count API requests sent, refused ones included. */
export interface SyncCounts {
  desired: number;
  inserted: number;
  patched: number;
  /** Events of ours that had been deleted (cancelled) and were brought back. */
  revived: number;
  deleted: number;
  unchanged: number;
  /** Desired ids taken by events without our marker: left alone (indexed as FOREIGN until a reconcile). */
  conflicts: number;
  writes: number;
  reads: number;
}

/** Everything one sync works with. */
export interface SyncOptions {
  calendar: CalendarTarget;
  calendarId: string;
  targetId: string;
  marker: EventMarker;
  desired: readonly DesiredEvent[];
  index: SyncIndex;
  /** List the calendar's marked events and rebuild the index from them before planning. */
  reconcile: boolean;
  /** Requests in flight at once (default 4). */
  concurrency?: number;
  signal?: AbortSignal;
  log: Logger;
  /** Called as each write request is sent. */
  onWrite?: (operation: WriteOperation) => void;
}

/** One event's permanent refusal does not stop the others; this many do (the calendar itself refuses us). */
const MAX_PERMANENT_FAILURES = 5;

/**
 * Runs one push. A rate-limit, quota, consent, calendar-gone, transient or unknown error stops it: no new
 * request starts, the ones in flight settle (their successes are indexed), and the first such error is
 * rethrown. A permanent refusal of one event is rethrown only after every other operation ran.
 */
export async function syncTarget(options: SyncOptions): Promise<SyncCounts> {
  return new SyncRun(options).run();
}

class SyncRun {
  private readonly options: SyncOptions;
  private readonly counts: SyncCounts = { desired: 0, inserted: 0, patched: 0, revived: 0, deleted: 0, unchanged: 0, conflicts: 0, writes: 0, reads: 0 };
  private readonly conflictIds: string[] = [];
  private stopError: unknown;
  private readonly permanentErrors: GooglePermanentError[] = [];

  constructor(options: SyncOptions) {
    this.options = options;
  }

  async run(): Promise<SyncCounts> {
    const { options, counts } = this;
    const index = options.reconcile ? await this.reconcileIndex() : await options.index.read(options.targetId);
    const plan = planPush(options.desired, index);
    counts.unchanged = plan.unchanged;
    counts.conflicts = plan.conflicts;
    counts.desired = plan.insert.length + plan.revive.length + plan.patch.length + plan.unchanged + plan.conflicts;
    const operations = [
      ...plan.patch.map((event) => () => this.patch(event, true)),
      ...plan.insert.map((event) => () => this.insert(event, true)),
      ...plan.revive.map((event) => () => this.revive(event)),
      ...plan.remove.map((id) => () => this.remove(id)),
    ];
    await this.pool(operations);
    if (this.conflictIds.length > 0) options.log.warn({ conflicts: counts.conflicts, examples: this.conflictIds }, 'event ids taken by events this service did not create; left alone');
    if (this.stopError === undefined && options.signal?.aborted) this.stopError = options.signal.reason ?? new Error('push aborted');
    if (this.stopError !== undefined || this.permanentErrors.length > 0) {
      options.log.debug({ ...counts }, 'push stopped before it was complete');
      throw this.stopError ?? this.permanentErrors[0];
    }
    return counts;
  }

  /** Lists our marked events (deleted ones included) and makes them the new index. */
  private async reconcileIndex(): Promise<Map<string, string>> {
    const { calendar, calendarId, marker, index, targetId } = this.options;
    const events: RemoteEvent[] = [];
    for await (const page of calendar.listMarkedEvents(calendarId, marker)) {
      this.counts.reads += 1;
      events.push(...page);
    }
    const remote = indexFromRemote(events, marker);
    if ((await index.replace(targetId, remote)) === false) throw new TargetRemovedError(`target ${targetId} was removed`);
    return remote;
  }

  /** Runs operations with at most `concurrency` in flight, starting none once the run must stop. */
  private async pool(operations: (() => Promise<void>)[]): Promise<void> {
    let next = 0;
    const lane = async () => {
      while (next < operations.length && !this.stopping()) {
        const operation = operations[next] as () => Promise<void>;
        next += 1;
        try {
          await operation();
        } catch (error) {
          this.fail(error);
        }
      }
    };
    const lanes = Math.max(1, Math.min(this.options.concurrency ?? 4, operations.length));
    await Promise.all(Array.from({ length: lanes }, lane));
  }

  private stopping(): boolean {
    return this.stopError !== undefined || this.permanentErrors.length >= MAX_PERMANENT_FAILURES || this.options.signal?.aborted === true;
  }

  private fail(error: unknown): void {
    if (error instanceof GooglePermanentError) this.permanentErrors.push(error);
    else this.stopError ??= error;
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
    await this.record(event.id, event.hash);
    this.counts.inserted += 1;
  }

  /** The id is taken: by our own earlier write (lost from the index), by our cancelled event, or by someone else. */
  private async resolveTaken(event: DesiredEvent, mayPatch: boolean): Promise<void> {
    const { calendar, calendarId, marker } = this.options;
    this.counts.reads += 1;
    const remote = await calendar.getEvent(calendarId, event.id);
    if (remote === undefined) throw new GoogleTransientError(`event ${event.id}: insert answered 409 but get found nothing`);
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
    if (!mayPatch) throw new GoogleTransientError(`event ${event.id}: patch found nothing, then insert found it taken`);
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
      throw error;
    }
    await this.record(event.id, event.hash);
    this.counts.revived += 1;
  }

  /** Deletes an event; Google keeps it as cancelled, and so does the index, so that it comes back in one write. */
  private async remove(eventId: string): Promise<void> {
    const { calendar, calendarId } = this.options;
    this.writing('delete');
    await calendar.deleteEvent(calendarId, eventId);
    await this.record(eventId, CANCELLED);
    this.counts.deleted += 1;
  }

  /** Writes one index entry at once; the index refuses it once the target is removed. */
  private async record(eventId: string, value: string): Promise<void> {
    const { index, targetId } = this.options;
    if ((await index.set(targetId, eventId, value)) === false) throw new TargetRemovedError(`target ${targetId} was removed`);
  }

  /** Counts a write request and reports it. */
  private writing(operation: WriteOperation): void {
    this.counts.writes += 1;
    this.options.onWrite?.(operation);
  }
}
