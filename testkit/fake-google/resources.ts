/** The resource shapes the fake's inspection methods answer (what Google stores, as JSON). */

/** A start or end of an event, as Google answers it (dateTime carries the offset of its zone). */
export interface FakeEventTime {
  dateTime?: string;
  date?: string;
  timeZone?: string;
}

/** A full event resource. */
export interface FakeEvent {
  kind: 'calendar#event';
  id: string;
  status: 'confirmed' | 'tentative' | 'cancelled';
  summary?: string;
  location?: string;
  description?: string;
  start: FakeEventTime;
  end: FakeEventTime;
  reminders: { useDefault: boolean; overrides?: { method: string; minutes: number }[] };
  colorId?: string;
  extendedProperties?: { private?: Record<string, string>; shared?: Record<string, string> };
  created: string;
  updated: string;
  etag: string;
  sequence: number;
  iCalUID: string;
  htmlLink: string;
  /** Anything else a client or the owner set (attendees, transparency…). */
  [field: string]: unknown;
}

/** A calendar as the fake holds it. */
export interface FakeCalendar {
  id: string;
  /** The Google user id that created it. */
  owner: string;
  summary: string;
  timeZone: string;
  description?: string;
}
