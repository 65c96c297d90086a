/**
 * Google push targets as the API shows them, to their owners and to admins alike: a target's state with its
 * pending push and pending changes, and how a disconnection answers. No view or message ever holds a token.
 */
import { z } from 'zod';
import { pendingChanges } from '../google/google-pending.ts';
import type { GoogleTarget } from '../google/google-targets.ts';
import { pendingPush } from '../jobs/job-status.ts';
import type { PushIndex } from '../store/push-index.ts';
import type { Disconnected } from '../subscriptions/google-disconnect.ts';
import { HttpError } from './errors.ts';
import { parseOr400 } from './parse.ts';
import { iso } from './views.ts';

const deleteQuery = z.object({
  deleteCalendar: z.enum(['true', 'false'], { error: 'must be true or false' }).optional(),
});

/** `?deleteCalendar=true|false` of a DELETE (default false); a 400 for anything else. */
export function deleteCalendarOption(query: unknown): boolean {
  return parseOr400(deleteQuery, query ?? {}, 'INVALID_QUERY').deleteCalendar === 'true';
}

/**
 * What the API answers when the owned calendar could not be deleted (the target is removed all the same): a 502
 * that names the calendar, so that it can be deleted by hand. Undefined when everything asked for was done.
 */
export function googleDisconnection(
  result: Disconnected,
): { error: HttpError; fields: { calendarId: string } } | undefined {
  if (result.calendarError === undefined) return undefined;
  const { calendarId, calendarError } = result;
  const words = {
    en: `the target was removed, but its calendar ${calendarId} could not be deleted (${calendarError}); delete it in Google Calendar by hand`,
    ru: `подключение удалено, но его календарь ${calendarId} удалить не удалось (${calendarError}); удалите его в Google Календаре вручную`,
  };
  return { error: new HttpError('CALENDAR_NOT_DELETED', words), fields: { calendarId } };
}

/** What a target's view reads: its queued push, its pending changes and its index. */
export type TargetViewDeps = {
  readonly google: { index(targetId: string): Pick<PushIndex, 'read' | 'size'> };
} & Parameters<typeof pendingPush>[0] &
  Parameters<typeof pendingChanges>[0];

/** A target's state, with its pending push and index size (and, for one target, the changes not pushed yet). */
export async function targetView(
  ctx: TargetViewDeps,
  target: GoogleTarget,
  detail: { pendingChanges?: boolean } = {},
): Promise<Record<string, unknown>> {
  const [pending, indexSize, changes] = await Promise.all([
    pendingPush(ctx, target.id),
    ctx.google.index(target.id).size(),
    // Expanding the timetable costs milliseconds: one target's view has it, a page of targets does not.
    detail.pendingChanges ? pendingChanges(ctx, target.id, target.source) : undefined,
  ]);
  return {
    id: target.id,
    source: target.source,
    calendarId: target.calendarId,
    calendarName: target.calendarName,
    calendarOwned: target.calendarOwned,
    status: target.status,
    statusReason: target.statusReason ?? null,
    pausedUntil: iso(target.pausedUntil),
    createdAt: iso(target.createdAt),
    lastPushAt: iso(target.lastPushAt),
    lastPush: target.lastPush === undefined ? null : { ...target.lastPush, at: iso(target.lastPush.at) },
    lastErrorAt: iso(target.lastErrorAt),
    lastError: target.lastError ?? null,
    lastRefusals: target.lastRefusals ?? [],
    reconcileRequested: target.reconcileRequested,
    pendingPush: pending,
    ...(changes === undefined ? {} : { pendingChanges: changes }),
    indexSize,
  };
}
