/**
 * Disconnecting a CalDAV calendar from its source: pushes stop at once (the target is removed first), then what
 * the service wrote is removed: the calendar it made, or, in a calendar it was given, only its own resources
 * (named `tts-*.ics` and marked with the source), each deleted with `If-Match` so that a resource someone else
 * wrote meanwhile under that name is left alone. The person's own events in a given calendar are never touched.
 * The manage page, the admin API and the deletion of a personal subscription come here.
 */
import type { CalDavClient, CalDavCredentials, RemoteResource } from '../caldav/caldav-client.ts';
import { type CalDavTargetStore, caldavDetails } from '../caldav/caldav-targets.ts';
import { CalDavCalendarGoneError, EtagMismatchError } from '../caldav/errors.ts';
import { hrefFor, idOfHref, parseOwned } from '../caldav/resource-index.ts';
import type { Logger } from '../logger.ts';
import type { PushTarget } from '../store/push-target-record.ts';
import { type DisconnectKind, disconnectPushTarget } from './push-disconnect.ts';

/** What a disconnection did. `error` says why what we wrote could not all be removed. */
export interface CalDavDisconnected {
  calendarUrl: string;
  calendarOwned: boolean;
  /** Our calendar was deleted (it was ours, and the server has it no more). */
  calendarDeleted: boolean;
  /** In a given calendar: the resources of ours deleted. */
  removed: number;
  error?: string;
}

/** What {@link disconnectCaldavTarget} uses: the targets, the index of each, and a client for an account. */
export interface CalDavDisconnectDeps {
  readonly caldav: {
    /** The targets, and each one's index: resource id → `"<hash> <etag>"` or a marker. */
    readonly targets: Pick<CalDavTargetStore, 'get' | 'credential' | 'remove' | 'index'>;
    client(credentials: CalDavCredentials): CalDavClient;
  };
  readonly logger: Logger;
}

/**
 * Removes a target (pushes stop at once), then what it wrote, unless `keepWritten` (a deleted subscription
 * leaves its calendars in the person's account, as its Google ones). Answers undefined for an unknown target. A
 * failure after the removal (the server unreachable, the password refused) leaves the target removed and is
 * reported, so that the rest can be deleted by hand.
 */
export async function disconnectCaldavTarget(
  ctx: CalDavDisconnectDeps,
  id: string,
  options: { keepWritten?: boolean } = {},
): Promise<CalDavDisconnected | undefined> {
  const result = await disconnectPushTarget(ctx, caldavKind(ctx, options), id);
  if (result === undefined) return undefined;
  const { target, calendarDeleted, removed, error } = result;
  const calendar = { calendarUrl: target.calendarId, calendarOwned: target.calendarOwned };
  return { ...calendar, calendarDeleted, removed, ...(error === undefined ? {} : { error }) };
}

/** CalDAV as a disconnection sees it: our calendar is deleted, or only our resources in a given one. */
function caldavKind(ctx: CalDavDisconnectDeps, options: { keepWritten?: boolean }): DisconnectKind {
  return {
    kind: 'caldav',
    targets: ctx.caldav.targets,
    credentialName: 'password',
    cleanUp: async (target) => {
      if (options.keepWritten) return undefined;
      const index = target.calendarOwned ? new Map<string, string>() : await ctx.caldav.targets.index(target.id).read();
      return async (password) => {
        const client = ctx.caldav.client({ username: caldavDetails(target).username, password });
        if (!target.calendarOwned) return { calendarDeleted: false, removed: await removeOurs(client, target, index) };
        await client.deleteCalendar(target.calendarId);
        return { calendarDeleted: true, removed: 0 };
      };
    },
    isGone: (error) => error instanceof CalDavCalendarGoneError,
    warning: {
      message: 'caldav resources of a removed target not deleted',
      fields: (target) => ({ host: new URL(target.calendarId).host }),
    },
  };
}

/**
 * Deletes our resources from a calendar we were given: those the index names (with the ETag it holds), and
 * those a listing finds named and marked as ours (a write whose index entry was lost in a crash). A resource
 * changed since (412) is read again and deleted only while it still carries our marker.
 */
async function removeOurs(client: CalDavClient, target: PushTarget, index: Map<string, string>): Promise<number> {
  const known = new Map<string, string>();
  for (const [id, value] of index) {
    const owned = parseOwned(value);
    if (owned !== undefined) known.set(hrefFor(target.calendarId, id), owned.etag);
  }
  const listing = await client.list(target.calendarId);
  for (const resource of listing.resources)
    if (isOurs(resource, target.source)) known.set(resource.href, resource.etag);
  let removed = 0;
  for (const [href, etag] of known) if (await removeOne(client, target.source, href, etag)) removed += 1;
  return removed;
}

/** Deletes one resource of ours; a resource someone else holds now is left. */
async function removeOne(client: CalDavClient, source: string, href: string, etag: string): Promise<boolean> {
  try {
    return (await client.remove(href, etag)) === 'deleted';
  } catch (error) {
    if (!(error instanceof EtagMismatchError)) throw error;
    const now = await client.get(href);
    if (now === undefined || !isOurs(now, source)) return false;
    // Ours, changed by the person (an alarm added): still ours to take away. One more try, no more.
    return (await client.remove(href, now.etag).catch(() => 'missing')) === 'deleted';
  }
}

/** Whether a listed resource is one this service wrote for `source`: our name and our marker. */
function isOurs(resource: RemoteResource, source: string): boolean {
  return idOfHref(resource.href) !== undefined && resource.markerValue === source;
}
