/** When a Telegram message may go out, after the quiet hours of the university's zone (pure). */
import { createHash } from 'node:crypto';
import { DateTime } from 'luxon';
import type { NotifyItem, QuietHours } from '../timetable/notify-change.ts';

/** Messages held for the morning go out over this much time, so that they do not all leave in one second. */
export const MORNING_SPREAD_MS = 5 * 60_000;

/**
 * The epoch ms a message telling `items` may be sent at: `now` outside the quiet hours (or with none); inside,
 * when they end (local time), unless a class it tells of starts before then: then at once. `spreadKey` (the chat)
 * puts a held message a stable moment up to {@link MORNING_SPREAD_MS} after the end.
 */
export function deliverAt(
  items: readonly Pick<NotifyItem, 'startsAt'>[],
  now: number,
  quiet: QuietHours | undefined,
  zone: string,
  spreadKey?: string,
): number {
  const end = quietUntil(now, quiet, zone);
  if (end === undefined) return now;
  if (items.some((item) => item.startsAt < end)) return now;
  return end + (spreadKey === undefined ? 0 : spreadOf(spreadKey));
}

/** A minute of the day as `HH:MM`: how the quiet hours' ends are shown (log lines, the demo's banner). */
export function clockOf(minuteOfDay: number): string {
  const hours = Math.floor(minuteOfDay / 60);
  return `${String(hours).padStart(2, '0')}:${String(minuteOfDay % 60).padStart(2, '0')}`;
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
  const endToday = local.set({ hour: Math.floor(toMinute / 60), minute: toMinute % 60, second: 0, millisecond: 0 });
  const end = endToday.toMillis() > now ? endToday : endToday.plus({ days: 1 });
  return end.toMillis();
}

function spreadOf(key: string): number {
  return createHash('sha256').update(key).digest().readUInt32BE(0) % MORNING_SPREAD_MS;
}
