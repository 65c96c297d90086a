/**
 * The requests a pending follow-up refresh answers. While a source's refresh runs, BullMQ keeps one follow-up
 * behind it (`keepLastIfActive`), but only the LAST caller's data and options: an admin's resync followed by a
 * term-start re-render would run as a re-render (no fetch) at background priority. Every caller therefore
 * records its request first (store/follow-up-asks.ts), and queues the merge of all of them
 * ({@link mergeFollowUps}).
 */

import type { RefreshAsk, RefreshReason } from './contract.ts';

/**
 * One refresh that answers every ask: a fetching reason wins over `rerender` (which never asks the
 * university), then the most urgent ask's reason; the highest priority of all; the longest delay, since a
 * request never pulls a confirming re-fetch forward (the same rule as deduplication into a queued one).
 * Undefined for no asks.
 */
export function mergeFollowUps(asks: readonly RefreshAsk[]): RefreshAsk | undefined {
  let merged: RefreshAsk | undefined;
  for (const ask of asks) {
    if (merged === undefined) {
      merged = { ...ask };
      continue;
    }
    const winner = outranks(ask, merged) ? ask : merged;
    const delayMs = Math.max(merged.delayMs ?? 0, ask.delayMs ?? 0);
    merged = {
      reason: winner.reason,
      priority: Math.min(merged.priority, ask.priority),
      ...(delayMs > 0 ? { delayMs } : {}),
    };
  }
  return merged;
}

/**
 * Whether `ask`'s reason should be the follow-up's rather than `current`'s. Equal priorities fall back to the
 * reasons' names: Redis returns a set's members in no set order, and every caller must reach the same merge.
 */
function outranks(ask: RefreshAsk, current: RefreshAsk): boolean {
  const fetches = (reason: RefreshReason) => reason !== 'rerender';
  if (fetches(ask.reason) !== fetches(current.reason)) return fetches(ask.reason);
  if (ask.priority !== current.priority) return ask.priority < current.priority;
  return ask.reason < current.reason;
}

/** Whether two asks would queue the same job. */
export function sameAsk(a: RefreshAsk | undefined, b: RefreshAsk | undefined): boolean {
  return a?.reason === b?.reason && a?.priority === b?.priority && (a?.delayMs ?? 0) === (b?.delayMs ?? 0);
}
