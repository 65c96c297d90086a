/**
 * What a push changed, read from the fake Google's own calendar (not from the service's counts): the marked
 * live events before and after, compared by id and owned fields, and the calendar checked against the desired
 * events of the published feed.
 */
import { HASH_KEY, MARKER_KEY } from '../src/google/event-marker.ts';
import type { DesiredEvent } from '../src/push/desired-events.ts';
import type { FakeEvent, FakeGoogle } from './fake-google/index.ts';

/** A marked live event reduced to what we own: its fields as one comparable text, and our digest. */
interface HeldEvent {
  fields: string;
  hash: string | undefined;
}

/** The live events of a calendar that carry `marker`, by id. */
export type CalendarState = Map<string, HeldEvent>;

/** Reads the live (not cancelled) events carrying our marker with value `marker`. */
export function calendarState(fake: FakeGoogle, calendarId: string, marker: string): CalendarState {
  const state: CalendarState = new Map();
  for (const event of fake.events(calendarId)) {
    const properties = event.extendedProperties?.private ?? {};
    if (properties[MARKER_KEY] !== marker) continue;
    state.set(event.id, { fields: ownedText(event), hash: properties[HASH_KEY] });
  }
  return state;
}

/** Events that appeared, changed their owned fields, and disappeared between two states. */
export interface CalendarDiff {
  inserted: number;
  patched: number;
  deleted: number;
}

/** Compares two states. */
export function diffCalendars(before: CalendarState, after: CalendarState): CalendarDiff {
  const diff: CalendarDiff = { inserted: 0, patched: 0, deleted: 0 };
  for (const [id, event] of after) {
    const previous = before.get(id);
    if (previous === undefined) diff.inserted += 1;
    else if (previous.fields !== event.fields) diff.patched += 1;
  }
  for (const id of before.keys()) if (!after.has(id)) diff.deleted += 1;
  return diff;
}

/**
 * How many events differ from `desired`: missing, extra, or with other owned fields or digest. Google answers
 * times with the offset of the zone; the desired ones are local times without it, so only the first 19
 * characters are compared (plus the zone).
 */
export function mismatches(state: CalendarState, desired: readonly DesiredEvent[]): number {
  let wrong = 0;
  for (const event of desired) {
    const held = state.get(event.id);
    if (held === undefined || held.hash !== event.hash || held.fields !== desiredText(event)) wrong += 1;
  }
  const ids = new Set(desired.map((event) => event.id));
  for (const id of state.keys()) if (!ids.has(id)) wrong += 1;
  return wrong;
}

function ownedText(event: FakeEvent): string {
  const time = (value: FakeEvent['start']) =>
    `${(value.dateTime ?? value.date ?? '').slice(0, 19)} ${value.timeZone ?? ''}`;
  return JSON.stringify([
    event.summary ?? '',
    event.location ?? '',
    event.description ?? '',
    time(event.start),
    time(event.end),
  ]);
}

function desiredText(event: DesiredEvent): string {
  const { summary, location, description, start, end } = event.fields;
  return JSON.stringify([
    summary,
    location,
    description,
    `${start.dateTime} ${start.timeZone}`,
    `${end.dateTime} ${end.timeZone}`,
  ]);
}
