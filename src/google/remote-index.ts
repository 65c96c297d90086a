/** A Google push index rebuilt from a calendar's listing (pure). */
import { CANCELLED } from '../push/push-diff.ts';
import type { EventMarker, RemoteEvent } from './calendar-client.ts';

/**
 * Rebuilds an index from a calendar's listing (deleted events included) of the events carrying `marker`: our
 * live events with their digest (`''` when one lacks it, so that the next diff patches it), our deleted ones
 * as {@link CANCELLED} (Google keeps them, and their ids cannot be inserted again). Events of another marker
 * value are left out.
 */
export function indexFromRemote(events: Iterable<RemoteEvent>, marker: EventMarker): Map<string, string> {
  const index = new Map<string, string>();
  for (const event of events) {
    if (event.markerValue !== marker.value) continue;
    index.set(event.id, event.cancelled ? CANCELLED : (event.hash ?? ''));
  }
  return index;
}
