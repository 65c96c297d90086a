/** How Google events of ours are marked: private extended properties naming the source and the fields' digest. */
import type { EventMarker } from './calendar-client.ts';

/** Private extended property that marks our events; its value is the source key. */
export const MARKER_KEY = 'timetableSync';

/** Private extended property holding `fieldsHash` (push/desired-events.ts) of what we last wrote. */
export const HASH_KEY = 'timetableSyncHash';

/** The marker of a source's events (`{ key: 'timetableSync', value: 'group:4242' }`). */
export function markerFor(source: string): EventMarker {
  return { key: MARKER_KEY, value: source };
}
