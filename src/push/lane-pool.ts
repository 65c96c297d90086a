/**
 * The pool of lanes a push runs its writes in, for every calendar kind: at most `concurrency` operations in
 * flight, none started once the run must stop (an error, an abort, the refusal breaker tripped), nor while the
 * refusals hold the run. A held run decides once every lane is idle: it goes on from where it stopped if a write
 * in flight succeeded, and stops if none did (the calendar refuses us, not one event).
 */
import type { RefusalExample, SyncCounts } from '../store/target-record.ts';
import { RefusalTally } from './refusal-tally.ts';

/** What a pool is told by the push it serves. */
export interface LanePoolOptions {
  /** Operations in flight at once (default 4). */
  concurrency?: number | undefined;
  /** Aborted when the run must stop (the job's deadline, a shutdown): no new operation starts. */
  signal?: AbortSignal | undefined;
  /** Called for every refusal of this push as it happens, whether the push then completes or fails. */
  onRefusal?: ((example: RefusalExample) => void) | undefined;
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

  /** Notes that the calendar refused the write of `id` for good, and reports it. */
  refused(id: string, error: Error): void {
    this.refusals.add(id, error);
    this.options.onRefusal?.({ eventId: id, message: error.message });
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
