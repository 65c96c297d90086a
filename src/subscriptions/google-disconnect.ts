/**
 * Disconnecting a Google calendar from its source: pushes stop at once, and, when asked and the calendar is
 * ours, the calendar is deleted. The OAuth routes, the admin API and the deletion of a personal subscription
 * come here.
 */
import { CalendarGoneError } from '../google/errors.ts';
import type { GoogleServices } from '../google/google-services.ts';
import { googleDetails } from '../google/google-targets.ts';
import type { Logger } from '../logger.ts';

/** What a disconnection did. `calendarError` says why an owned calendar could not be deleted. */
export interface Disconnected {
  calendarId: string;
  calendarDeleted: boolean;
  calendarError?: string;
}

/** What {@link disconnectTarget} uses: the targets, and a calendar to delete one with. */
export interface DisconnectDeps {
  readonly google: Pick<GoogleServices, 'targets' | 'calendar'>;
  readonly logger: Logger;
}

/**
 * Removes a target (pushes stop at once), then, when asked and the calendar is ours, deletes the calendar.
 * Answers undefined for an unknown target. A failed calendar deletion leaves the target removed and is
 * reported with the calendar id, so that it can be deleted by hand.
 */
export async function disconnectTarget(
  ctx: DisconnectDeps,
  id: string,
  options: { deleteCalendar: boolean },
): Promise<Disconnected | undefined> {
  const store = ctx.google.targets;
  const target = await store.get(id);
  if (target === undefined) return undefined;
  const wantsDelete = options.deleteCalendar && target.calendarOwned;
  // Read before removing: the sealed token goes with the record.
  const token = wantsDelete ? await store.credential(id).catch((error: unknown) => error as Error) : undefined;
  await store.remove(id);
  ctx.logger.info({ target: id, source: target.source }, 'google target removed');
  const result: Disconnected = { calendarId: target.calendarId, calendarDeleted: false };
  if (!wantsDelete || token === undefined) return result;
  if (token instanceof Error)
    return { ...result, calendarError: `the stored refresh token is unreadable (${token.name})` };
  try {
    await ctx.google.calendar(token.secret, googleDetails(target).budgetKey).deleteCalendar(target.calendarId);
    return { ...result, calendarDeleted: true };
  } catch (error) {
    if (error instanceof CalendarGoneError) return { ...result, calendarDeleted: true };
    const message = error instanceof Error ? error.message : String(error);
    // The message only: the adapter's errors keep the library's error as `cause`, request headers included.
    ctx.logger.warn(
      { target: id, calendarId: target.calendarId, error: message },
      'google calendar of a removed target not deleted',
    );
    return { ...result, calendarError: message };
  }
}
