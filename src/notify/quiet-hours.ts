/**
 * When a message to a person may go out (pure): after the quiet hours of the university's zone, and, for a
 * subscriber who chose a daily digest, at the next digest time. Both hold a message the same way: until a moment,
 * unless a class it tells of starts before then.
 */
import { createHash } from 'node:crypto';
import { DateTime } from 'luxon';
import type { NotifyItem, QuietHours } from '../timetable/notify-change.ts';

/** Messages held for the morning go out over this much time, so that they do not all leave in one second. */
export const MORNING_SPREAD_MS = 5 * 60_000;

/**
 * The epoch ms a message telling `items` may be sent at: `now` when nothing holds it (see {@link heldUntil});
 * when held, the moment the hold ends, unless a class it tells of starts before then: then at once, or, for a
 * digest, when the quiet hours `now` is in end (at once if the class starts before even that). `spreadKey`
 * (the address) puts a held message a stable moment up to {@link MORNING_SPREAD_MS} after the end.
 * `digestMinute` (a minute of the day, local): the subscriber takes a daily digest at that time.
 */
export function deliverAt(
  items: readonly Pick<NotifyItem, 'startsAt'>[],
  now: number,
  quiet: QuietHours | undefined,
  zone: string,
  spreadKey?: string,
  digestMinute?: number,
): number {
  const end = heldUntil(now, quiet, zone, digestMinute);
  if (end === undefined) return now;
  if (items.some((item) => item.startsAt < end)) {
    // A class before the digest cannot wait for it, but the quiet hours still hold: such a change of the night
    // goes when they end (unless the class starts before that), as it would without a digest.
    return digestMinute === undefined ? now : deliverAt(items, now, quiet, zone, spreadKey);
  }
  return end + (spreadKey === undefined ? 0 : spreadOf(spreadKey));
}

/**
 * Until when a message made at `now` is held, epoch ms; undefined when it may go now. A digest subscriber's is
 * held until the next `digestMinute` of the day (a digest time inside the quiet hours waits for their end);
 * anyone else's until the end of the quiet hours `now` is in.
 */
export function heldUntil(
  now: number,
  quiet: QuietHours | undefined,
  zone: string,
  digestMinute?: number,
): number | undefined {
  if (digestMinute === undefined) return quietUntil(now, quiet, zone);
  const digest = nextMinuteOfDay(now, digestMinute, zone);
  return quietUntil(digest, quiet, zone) ?? digest;
}

/** A minute of the day as `HH:MM`: how the quiet hours' ends are shown (log lines, the demo's banner). */
export function clockOf(minuteOfDay: number): string {
  const hours = Math.floor(minuteOfDay / 60);
  return `${String(hours).padStart(2, '0')}:${String(minuteOfDay % 60).padStart(2, '0')}`;
}

/** The minute of the day an `HH:MM` names (`19:00` → 1140); undefined for anything else. */
export function minuteOfClock(clock: string): number | undefined {
  const match = /^([01]\d|2[0-3]):([0-5]\d)$/.exec(clock);
  return match === null ? undefined : Number(match[1]) * 60 + Number(match[2]);
}

/** The end of the quiet hours `now` is in, epoch ms; undefined when it is not in them. */
export function quietUntil(now: number, quiet: QuietHours | undefined, zone: string): number | undefined {
  if (quiet === undefined) return undefined;
  const local = DateTime.fromMillis(now, { zone });
  const minute = local.hour * 60 + local.minute;
  const { fromMinute, toMinute } = quiet;
  const inside =
    fromMinute < toMinute ? minute >= fromMinute && minute < toMinute : minute >= fromMinute || minute < toMinute;
  if (!inside) return undefined;
  return nextMinuteOfDay(now, toMinute, zone);
}

/** The first moment after `now` (epoch ms) whose local time in `zone` is `minuteOfDay`. */
function nextMinuteOfDay(now: number, minuteOfDay: number, zone: string): number {
  const local = DateTime.fromMillis(now, { zone });
  const today = local.set({ hour: Math.floor(minuteOfDay / 60), minute: minuteOfDay % 60, second: 0, millisecond: 0 });
  return (today.toMillis() > now ? today : today.plus({ days: 1 })).toMillis();
}

function spreadOf(key: string): number {
  return createHash('sha256').update(key).digest().readUInt32BE(0) % MORNING_SPREAD_MS;
}
