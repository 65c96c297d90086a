/**
 * What a webhook receives: one JSON body per change set, built once when the change set is fanned out and sent
 * byte for byte on every attempt (the signature covers those bytes), and its `webhook-id`, derived from the
 * delivery so that every attempt of one delivery carries the same one.
 *
 * ```json
 * {"type":"timetable.changed","timestamp":"2026-10-01T09:00:00.000Z","data":{"source":"group:4242",
 *  "name":"ИВТ-21","url":"https://…/timetables/groups/4242","changes":[{"change":"moved","uid":"…",
 *  "lessonKind":"Практика","before":{…},"after":{…}}],"omitted":0}}
 * ```
 */
import { createHash } from 'node:crypto';
import type { ChangeSet, NotifySide } from '../../timetable/notify-change.ts';

/** The event type of every delivery. */
export const WEBHOOK_EVENT_TYPE = 'timetable.changed';

/**
 * The `webhook-id` of a delivery (`wh:<hookId>:<source>:<stamp>`): `msg_` and 27 characters of its SHA-256 as
 * base64url, the same on every attempt (the specification asks for no `.` in it; base64url has none).
 */
export function webhookMessageId(deliveryId: string): string {
  return `msg_${createHash('sha256').update(deliveryId).digest('base64url').slice(0, 27)}`;
}

/** One side of a change as delivered: the local date and times, the start as an instant, what and where. */
function sideOf(side: NotifySide | undefined): object | undefined {
  if (side === undefined) return undefined;
  return {
    date: side.date,
    begin: side.begin,
    end: side.end,
    start: new Date(side.startUtc).toISOString(),
    summary: side.summary,
    location: side.location,
    teacher: side.teacher,
  };
}

/** The JSON body of a change set's delivery; `url` is the source's timetable page. */
export function webhookBody(set: ChangeSet, url: string): string {
  return JSON.stringify({
    type: WEBHOOK_EVENT_TYPE,
    timestamp: new Date(set.stamp).toISOString(),
    data: {
      source: set.source,
      name: set.name,
      url,
      changes: set.items.map((item) => ({
        change: item.kind,
        uid: item.uid,
        lessonKind: item.lessonKind,
        ...(item.before === undefined ? {} : { before: sideOf(item.before) }),
        ...(item.after === undefined ? {} : { after: sideOf(item.after) }),
      })),
      omitted: set.omitted,
    },
  });
}
