/**
 * Disconnecting a Google calendar from its source: pushes stop at once, and, when asked and the calendar is
 * ours, the calendar is deleted. The OAuth routes, the admin API and the deletion of a personal subscription
 * come here.
 */
import { CalendarGoneError } from '../google/errors.ts';
import type { GoogleServices } from '../google/google-services.ts';
import { googleDetails } from '../google/google-targets.ts';
import type { Logger } from '../logger.ts';
import { type DisconnectKind, disconnectPushTarget } from './push-disconnect.ts';

/** What a disconnection did. `calendarError` says why an owned calendar could not be deleted. */
export interface GoogleDisconnected {
  calendarId: string;
  calendarDeleted: boolean;
  calendarError?: string;
}

/** What {@link disconnectGoogleTarget} uses: the targets, and a calendar to delete one with. */
export interface GoogleDisconnectDeps {
  readonly google: Pick<GoogleServices, 'targets' | 'calendar'>;
  readonly logger: Logger;
}

/**
 * Removes a target (pushes stop at once), then, when asked and the calendar is ours, deletes the calendar.
 * Answers undefined for an unknown target. A failed calendar deletion leaves the target removed and is
 * reported with the calendar id, so that it can be deleted by hand.
 */
export async function disconnectGoogleTarget(
  ctx: GoogleDisconnectDeps,
  id: string,
  options: { deleteCalendar: boolean },
): Promise<GoogleDisconnected | undefined> {
  const result = await disconnectPushTarget(ctx, googleKind(ctx, options), id);
  if (result === undefined) return undefined;
  const { target, calendarDeleted, error } = result;
  return { calendarId: target.calendarId, calendarDeleted, ...(error === undefined ? {} : { calendarError: error }) };
}

/** Google as a disconnection sees it: only a calendar of ours, when asked, is deleted. */
function googleKind(ctx: GoogleDisconnectDeps, options: { deleteCalendar: boolean }): DisconnectKind {
  return {
    kind: 'google',
    targets: ctx.google.targets,
    credentialName: 'refresh token',
    cleanUp: async (target) => {
      if (!options.deleteCalendar || !target.calendarOwned) return undefined;
      return async (refreshToken) => {
        await ctx.google.calendar(refreshToken, googleDetails(target).budgetKey).deleteCalendar(target.calendarId);
        return { calendarDeleted: true, removed: 0 };
      };
    },
    isGone: (error) => error instanceof CalendarGoneError,
    warning: {
      message: 'google calendar of a removed target not deleted',
      fields: (target) => ({ calendarId: target.calendarId }),
    },
  };
}
