/** The served-feeds counter of the metrics, as the feed routes and the fast path in front of them count. */
import type { Counter } from 'prom-client';
import type { SourceKind } from '../timetable/source.ts';

/** The part of a prom-client metric that {@link FeedCounters} hooks: called before each read of its values. */
interface Collecting {
  collect?: (() => unknown) | undefined;
}

/**
 * Counts served feeds by kind and status. The counts are kept here as plain numbers and added to the counter
 * when it is read (a scrape, `get()`): a labelled `inc()` hashes and checks its labels each time, about 3 % of the
 * CPU time of a cached feed's answer.
 */
export class FeedCounters {
  private readonly counter: Counter<'kind' | 'status'>;
  /** Answers not yet added to the counter, by kind, then status. */
  private readonly pending = new Map<SourceKind, Map<number, number>>();

  constructor(counter: Counter<'kind' | 'status'>) {
    this.counter = counter;
    // prom-client calls a metric's `collect` (a documented option) before each read of it; one set before, by
    // the metric's owner or another of these, still runs.
    const collecting = counter as unknown as Collecting;
    const before = collecting.collect;
    const flush = () => this.flush();
    collecting.collect = function (this: unknown) {
      flush();
      return before?.call(this);
    };
  }

  /** Counts one answer with `status` to a request for a feed of `kind`. */
  served(kind: SourceKind, status: number): void {
    let byStatus = this.pending.get(kind);
    if (byStatus === undefined) {
      byStatus = new Map();
      this.pending.set(kind, byStatus);
    }
    byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
  }

  private flush(): void {
    for (const [kind, byStatus] of this.pending) {
      for (const [status, count] of byStatus) {
        if (count === 0) continue;
        this.counter.inc({ kind, status: String(status) }, count);
        byStatus.set(status, 0);
      }
    }
  }
}
