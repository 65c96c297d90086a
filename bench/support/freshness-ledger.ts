/**
 * The freshness benchmark's bookkeeping (pure): each change made, the feeds it must reach and when each stored
 * feed first held its room token; then the figures of a phase. A (change, feed) pair that never arrived stays
 * in the figures as an infinite latency: it is counted, never dropped.
 */
import type { AffectedFeed, PlannedChange } from './freshness-changes.ts';

/** One (change, feed) pair: when the change was made and, once it arrived, when the feed served it. */
export interface PairRecord {
  change: number;
  entryId: number;
  room: string;
  personalOnly: boolean;
  kind: AffectedFeed['kind'];
  source: string;
  /** ms since the phase started. */
  madeMs: number;
  arrivedMs?: number;
}

/** The changes of one phase and their arrivals. */
export class ChangeLedger {
  private readonly pairs: PairRecord[] = [];
  /** source → pending pairs of that source. */
  private readonly pending = new Map<string, PairRecord[]>();

  /** Records a change made at `madeMs`; `sourceOf` names each affected feed's source key. */
  register(change: PlannedChange, madeMs: number, sourceOf: (feed: AffectedFeed) => string): void {
    for (const feed of change.feeds) {
      const source = sourceOf(feed);
      const pair: PairRecord = {
        change: change.n,
        entryId: change.entryId,
        room: change.room,
        personalOnly: change.personalOnly,
        kind: feed.kind,
        source,
        madeMs,
      };
      this.pairs.push(pair);
      this.pending.set(source, [...(this.pending.get(source) ?? []), pair]);
    }
  }

  /** Whether any change still waits for `source`. */
  waitsFor(source: string): boolean {
    return this.pending.has(source);
  }

  /** The stored feed of `source` as it was at `atMs`: every pending room token it holds has arrived. */
  observe(source: string, feedText: string, atMs: number): number {
    const waiting = this.pending.get(source);
    if (!waiting) return 0;
    const text = unfold(feedText);
    const left = waiting.filter((pair) => {
      if (!text.includes(pair.room)) return true;
      pair.arrivedMs = Math.max(atMs, pair.madeMs);
      return false;
    });
    if (left.length === 0) this.pending.delete(source);
    else this.pending.set(source, left);
    return waiting.length - left.length;
  }

  /** Pairs not arrived yet. */
  pendingPairs(): number {
    let count = 0;
    for (const pairs of this.pending.values()) count += pairs.length;
    return count;
  }

  /** Every pair, in the order made. */
  records(): readonly PairRecord[] {
    return this.pairs;
  }
}

/** An ICS text with its folded lines joined (RFC 5545 §3.1), so that a token split by folding is found. */
export function unfold(ics: string): string {
  return ics.replace(/\r?\n[ \t]/g, '');
}

/** Nearest-rank percentile of `values` (Infinity counts as the largest); NaN for none. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] as number;
}

/** Latency figures of one class of changes, seconds. */
export interface LatencyFigures {
  changes: number;
  pairs: number;
  /** Pairs that never arrived within the phase. */
  missingPairs: number;
  /** Changes some feed of which never served them. */
  missingChanges: number;
  pairP50: number;
  pairP95: number;
  /** Until every feed of the change served it. */
  changeP50: number;
  changeP95: number;
}

/** Figures of the group-visible and the personal-only changes of a phase. */
export interface PhaseLatency {
  group: LatencyFigures;
  personal: LatencyFigures;
}

/** The latency of a pair, seconds; Infinity when it never arrived. */
export function pairLatency(pair: PairRecord): number {
  return pair.arrivedMs === undefined ? Number.POSITIVE_INFINITY : (pair.arrivedMs - pair.madeMs) / 1000;
}

/** Splits the records into group-visible and personal-only changes and takes their percentiles. */
export function phaseLatency(records: readonly PairRecord[]): PhaseLatency {
  return {
    group: latencyOf(records.filter((pair) => !pair.personalOnly)),
    personal: latencyOf(records.filter((pair) => pair.personalOnly)),
  };
}

function latencyOf(records: readonly PairRecord[]): LatencyFigures {
  const byChange = new Map<number, number>();
  for (const pair of records) byChange.set(pair.change, Math.max(byChange.get(pair.change) ?? 0, pairLatency(pair)));
  const pairs = records.map(pairLatency);
  const changes = [...byChange.values()];
  return {
    changes: changes.length,
    pairs: pairs.length,
    missingPairs: pairs.filter((value) => value === Number.POSITIVE_INFINITY).length,
    missingChanges: changes.filter((value) => value === Number.POSITIVE_INFINITY).length,
    pairP50: percentile(pairs, 50),
    pairP95: percentile(pairs, 95),
    changeP50: percentile(changes, 50),
    changeP95: percentile(changes, 95),
  };
}
