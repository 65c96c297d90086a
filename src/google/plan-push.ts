/** The diff between what a calendar should hold and what we know it holds (pure). */
import type { DesiredEvent, EventMarker, RemoteEvent } from './calendar-target.ts';

/**
 * The index value of an event of ours that Google keeps as deleted (`status: cancelled`). Its id cannot be
 * inserted again (409), so a class that comes back is revived in one write. Digests are base64url: never this.
 */
export const CANCELLED = '!cancelled';

/**
 * The index value of a desired id taken by an event without our marker (made by someone else): left alone,
 * and not tried again until a reconcile (which lists only marked events) forgets it.
 */
export const FOREIGN = '!foreign';

/** What one push does: each desired event is inserted, revived, patched or left alone; indexed live events not desired are removed. */
export interface PushPlan {
  /** Desired events the index does not know. */
  insert: DesiredEvent[];
  /** Desired events whose id the index knows as deleted: brought back with one write. */
  revive: DesiredEvent[];
  /** Desired events the index knows with another digest. */
  patch: DesiredEvent[];
  /** Indexed live event ids that are no longer desired. */
  remove: string[];
  /** Desired events the index knows with the same digest. */
  unchanged: number;
  /** Desired ids taken by someone else's event ({@link FOREIGN}): not written. */
  conflicts: number;
}

/**
 * Plans a push from the desired events and the index (event id → digest of what we last wrote, or
 * {@link CANCELLED}). Applying the plan to the index yields exactly the desired events, plus deleted ones
 * marked {@link CANCELLED}. A desired id listed twice counts once (the first wins).
 */
export function planPush(desired: readonly DesiredEvent[], index: ReadonlyMap<string, string>): PushPlan {
  const plan: PushPlan = { insert: [], revive: [], patch: [], remove: [], unchanged: 0, conflicts: 0 };
  const wanted = new Set<string>();
  for (const event of desired) {
    if (wanted.has(event.id)) continue;
    wanted.add(event.id);
    const known = index.get(event.id);
    if (known === undefined) plan.insert.push(event);
    else if (known === CANCELLED) plan.revive.push(event);
    else if (known === FOREIGN) plan.conflicts += 1;
    else if (known !== event.hash) plan.patch.push(event);
    else plan.unchanged += 1;
  }
  for (const [id, known] of index) if (!wanted.has(id) && known !== CANCELLED && known !== FOREIGN) plan.remove.push(id);
  return plan;
}

/**
 * Rebuilds an index from a calendar's listing (deleted events included) of the events carrying `marker`: our
 * live events with their digest (`''` when one lacks it, so that the next plan patches it), our deleted ones
 * as {@link CANCELLED}. Events of another marker value are left out.
 */
export function indexFromRemote(events: Iterable<RemoteEvent>, marker: EventMarker): Map<string, string> {
  const index = new Map<string, string>();
  for (const event of events) {
    if (event.markerValue !== marker.value) continue;
    index.set(event.id, event.cancelled ? CANCELLED : (event.hash ?? ''));
  }
  return index;
}
