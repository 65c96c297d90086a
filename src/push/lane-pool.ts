/**
 * The pool of lanes a push runs its writes in, for every calendar kind: at most `concurrency` operations in
 * flight, none started once the run must stop (an error, an abort, the refusal breaker tripped), nor while the
 * refusals hold the run. A held run decides once every lane is idle: it goes on from where it stopped if a write
 * in flight succeeded, and stops if none did (the calendar refuses us, not one event). A refusal of one item is
 * indexed against the version refused and waits {@link REFUSAL_RETRY_MS}, so one bad event never holds up the
 * others.
 */
import type { RefusalExample, SyncCounts } from '../store/push-target-record.ts';
import { refusedMarker } from './push-diff.ts';
import { REFUSAL_RETRY_MS, RefusalTally } from './refusal-tally.ts';

/** What a pool is told by the push it serves. */
export interface LanePoolOptions {
  /** Operations in flight at once (default 4). */
  concurrency?: number | undefined;
  /** Aborted when the run must stop (the job's deadline, a shutdown): no new operation starts. */
  signal?: AbortSignal | undefined;
  /** Called for every refusal of this push as it happens, whether the push then completes or fails. */
  onRefusal?: ((example: RefusalExample) => void) | undefined;
  /** Whether `error` is the kind's refusal of one item (the calendar can still take the others). */
  isRefusal(error: unknown): error is Error;
  /** Writes one index entry (a refusal marker), as the push records its writes. */
  record(id: string, value: string): Promise<void>;
  /** The push's counts: `refused` goes up with every refusal. */
  counts: SyncCounts;
  /** When the push started (epoch ms): a refusal is tried again {@link REFUSAL_RETRY_MS} later. */
  now: number;
}

/** The counts of a push before it did anything. */
export function emptyCounts(): SyncCounts {
  return {
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
}

/** One push's lanes, its first stopping error and its refusal tally. */
export class LanePool {
  /** The refusals of this push (its count and examples are logged by the push). */
  readonly refusals = new RefusalTally();
  private readonly options: LanePoolOptions;
  private stopError: unknown;

  constructor(options: LanePoolOptions) {
    this.options = options;
  }

  /**
   * Runs operations in lanes until they run out or the run must stop. An operation that throws stops the run
   * (the first error is kept; the operations in flight settle).
   */
  async run(operations: readonly (() => Promise<void>)[]): Promise<void> {
    let next = 0;
    const lane = async () => {
      while (next < operations.length && !this.stopping() && !this.refusals.holding()) {
        const operation = operations[next] as () => Promise<void>;
        next += 1;
        try {
          await operation();
        } catch (error) {
          this.fail(error);
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

  /** Stops the run with `error`, unless an earlier error stopped it already. */
  fail(error: unknown): void {
    this.stopError ??= error;
  }

  /** Whether no operation may start any more: an error, the breaker tripped, or the signal aborted. */
  stopping(): boolean {
    return (
      this.stopError !== undefined || this.refusals.stopError() !== undefined || this.options.signal?.aborted === true
    );
  }

  /** Notes a write the calendar accepted: from now on, refusals never stop the push. */
  succeeded(): void {
    this.refusals.succeeded();
  }

  /**
   * Runs one item's write (version `hash` of item `id`; `DELETE_REFUSED` for its delete). A refusal of it is
   * counted, reported and indexed against that version instead of stopping the push; any other error is thrown.
   */
  async refusable(id: string, hash: string, write: () => Promise<void>): Promise<void> {
    const { options } = this;
    try {
      await write();
    } catch (error) {
      if (!options.isRefusal(error)) throw error;
      this.refusals.add(id, error);
      options.counts.refused += 1;
      options.onRefusal?.({ eventId: id, message: error.message });
      await options.record(id, refusedMarker(hash, options.now + REFUSAL_RETRY_MS));
    }
  }

  /**
   * What the push must fail with once its operations are done: the first error, else the abort's reason, else
   * the first refusal if the breaker tripped; undefined when it may complete.
   */
  stopReason(): unknown {
    if (this.stopError === undefined && this.options.signal?.aborted)
      this.stopError = this.options.signal.reason ?? new Error('push aborted');
    return this.stopError ?? this.refusals.stopError();
  }
}
