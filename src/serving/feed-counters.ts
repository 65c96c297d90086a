/** The served-feeds counter of the metrics, as the feed routes and the fast path in front of them count. */
import type { Counter } from 'prom-client';
import type { SourceKind } from '../timetable/source.ts';

/** Counts served feeds by kind and status, with the labelled children made once. */
export class FeedCounters {
  private readonly counter: Counter<'kind' | 'status'>;
  /** A labelled inc() hashes its labels on every call; a child made once does not. */
  private readonly children = new Map<string, { inc(): void }>();

  constructor(counter: Counter<'kind' | 'status'>) {
    this.counter = counter;
  }

  /** Counts one answer with `status` to a request for a feed of `kind`. */
  served(kind: SourceKind, status: number): void {
    const key = `${kind} ${status}`;
    let child = this.children.get(key);
    if (child === undefined) {
      child = this.counter.labels({ kind, status: String(status) });
      this.children.set(key, child);
    }
    child.inc();
  }
}
