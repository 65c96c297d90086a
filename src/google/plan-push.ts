/** The diff between what a calendar should hold and what we know it holds (pure). */
import type { DesiredEvent, EventMarker, RemoteEvent } from './calendar-target.ts';

/** What one push does: each desired event is inserted, patched or left alone; indexed events not desired are removed. */
export interface PushPlan {
  /** Desired events the index does not know. */
  insert: DesiredEvent[];
  /** Desired events the index knows with another digest. */
  patch: DesiredEvent[];
  /** Indexed event ids that are no longer desired. */
  remove: string[];
  /** Desired events the index knows with the same digest. */
  unchanged: number;
}

/**
 * Plans a push from the desired events and the index (event id → digest of what we last wrote). Applying the
 * plan to the index yields exactly the desired events. A desired id listed twice counts once (the first wins).
 */
export function planPush(desired: readonly DesiredEvent[], index: ReadonlyMap<string, string>): PushPlan {
  const plan: PushPlan = { insert: [], patch: [], remove: [], unchanged: 0 };
  const wanted = new Set<string>();
  for (const event of desired) {
    if (wanted.has(event.id)) continue;
    wanted.add(event.id);
    const known = index.get(event.id);
    if (known === undefined) plan.insert.push(event);
    else if (known !== event.hash) plan.patch.push(event);
    else plan.unchanged += 1;
  }
  for (const id of index.keys()) if (!wanted.has(id)) plan.remove.push(id);
  return plan;
}

/**
 * Rebuilds an index from a calendar's listing: our live events (marker value equal to `marker.value`). An
 * event of ours without a digest gets `''`, so that the next plan patches it. Cancelled events are left out:
 * a desired one is revived, the others are already deleted.
 */
export function indexFromRemote(events: Iterable<RemoteEvent>, marker: EventMarker): Map<string, string> {
  const index = new Map<string, string>();
  for (const event of events) {
    if (event.cancelled || event.markerValue !== marker.value) continue;
    index.set(event.id, event.hash ?? '');
  }
  return index;
}
