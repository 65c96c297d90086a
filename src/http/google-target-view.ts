/**
 * What Google targets add to the views every kind shares (push-target-view.ts): the calendar's id beside the
 * shared state, and how a calendar left behind by a disconnection is named.
 */
import { z } from 'zod';
import { googlePendingChanges } from '../google/google-pending.ts';
import type { GoogleTarget } from '../google/google-targets.ts';
import { pendingPush } from '../jobs/job-status.ts';
import type { PushIndex } from '../store/push-index.ts';
import { parseOr400 } from './parse.ts';
import type { LeftBehind, PushViewSources } from './push-target-view.ts';

const deleteQuery = z.object({
  deleteCalendar: z.enum(['true', 'false'], { error: 'must be true or false' }).optional(),
});

/** `?deleteCalendar=true|false` of a DELETE (default false); a 400 for anything else. */
export function deleteCalendarOption(query: unknown): boolean {
  return parseOr400(deleteQuery, query ?? {}, 'INVALID_QUERY').deleteCalendar === 'true';
}

/** The owned calendar a disconnection could not delete: named, so that it can be deleted by hand. */
export const GOOGLE_LEFT_BEHIND: LeftBehind = {
  code: 'CALENDAR_NOT_DELETED',
  field: 'calendarId',
  words: (calendarId, error) => ({
    en: `the target was removed, but its calendar ${calendarId} could not be deleted (${error}); delete it in Google Calendar by hand`,
    ru: `подключение удалено, но его календарь ${calendarId} удалить не удалось (${error}); удалите его в Google Календаре вручную`,
  }),
};

/** What a Google target's view reads: its queued push, its pending changes and its index. */
export type GoogleTargetViewDeps = {
  readonly google: { readonly targets: { index(targetId: string): Pick<PushIndex, 'read' | 'size'> } };
} & Parameters<typeof pendingPush>[0] &
  Parameters<typeof googlePendingChanges>[0];

/** Where the views of Google targets read their queued push, pending changes and own fields. */
export function googleViewSources(ctx: GoogleTargetViewDeps): PushViewSources<GoogleTarget> {
  return {
    queuedPush: (id) => pendingPush(ctx, 'google', id),
    pendingChanges: (target) => googlePendingChanges(ctx, target),
    indexSize: (id) => ctx.google.targets.index(id).size(),
    ownFields: (target) => ({ calendarId: target.calendarId }),
  };
}
