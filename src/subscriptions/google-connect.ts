/**
 * Connecting a Google calendar to a source. The OAuth callback (through `google-consent.ts`) and the admin API
 * come here: a refresh token (already obtained) becomes a push target with its calendar (ours, created here,
 * or an existing one the token can reach), the source becomes active, and the first push is queued.
 * Disconnecting is `google-disconnect.ts`.
 */

import type { Config } from '../config.ts';
import type { CalendarClient } from '../google/calendar-client.ts';
import { CalendarGoneError, GoogleNotConfiguredError } from '../google/errors.ts';
import { budgetKeyFor, type GoogleServices } from '../google/google-services.ts';
import { type GoogleTarget, googleDetailFields, googleDetails } from '../google/google-targets.ts';
import { requireFetched } from '../jobs/verify-source.ts';
import type { Logger } from '../logger.ts';
import { TargetRemovedError } from '../push/errors.ts';
import { optionsField } from '../store/push-target-record.ts';
import type { SourceKey } from '../timetable/source.ts';
import type { SubscriberOptions } from '../timetable/types.ts';
import * as core from './push-connect.ts';
import { changePushOptions } from './push-options.ts';

/** What a connection is made of. `source` must be valid (see `parseSource`). */
export interface GoogleConnectRequest {
  source: SourceKey;
  refreshToken: string;
  /** The Google user id (`sub` of the OAuth id_token), when known: a second consent reuses the target. */
  googleUser?: string | undefined;
  /** Push into this existing calendar instead of creating one (it is never deleted by us). */
  calendarId?: string | undefined;
  /**
   * The feed options the calendar follows (validated: see `parsePushOptions`); absent: the whole timetable.
   * A repeated connection that gives them replaces the target's.
   */
  options?: SubscriberOptions | undefined;
  /**
   * The options a new target follows when the connection gives no `options`. A page's connection says `{}`: a
   * calendar connected there follows options (its reminders are ours), while a connection naming none leaves an
   * existing target's as they are (a target from before keeps its whole timetable and the person's reminders).
   */
  newTargetOptions?: SubscriberOptions | undefined;
}

/** A connected target. `manageToken` is the only copy there will ever be. */
export interface GoogleConnected {
  id: string;
  calendarId: string;
  calendarName: string;
  manageToken: string;
  /**
   * True when a second consent of the same Google user (or registration of the same token) for the same source reused
   * its target.
   */
  reused: boolean;
}

/** What {@link requireGooglePush} uses. */
export interface GooglePushCheckDeps {
  readonly google: Pick<GoogleServices, 'configured' | 'targets'>;
}

/**
 * What {@link connectGoogleTarget} uses: a first fetch's (see `requireFetched`), Google's side, what names a calendar,
 * and the queues its first push and refresh go to.
 */
export type GoogleConnectDeps = core.PushConnectDeps & {
  readonly config: Pick<Config, 'timezone' | 'googleReconcileIntervalMs'>;
  readonly logger: Logger;
  readonly google: Pick<GoogleServices, 'configured' | 'targets' | 'calendar'>;
};

/** How long a consent may hold its (Google user, source) lock: a connection takes a few requests, far less. */
const CONNECT_LOCK_MS = 30_000;

/**
 * Throws unless Google push can work: GoogleNotConfiguredError without OAuth client settings, and
 * SecretKeyMissingError without a `SECRET_KEY` to seal refresh tokens with. A consent is not even started
 * when its connection could not be completed.
 */
export function requireGooglePush(ctx: GooglePushCheckDeps): void {
  if (!ctx.google.configured) throw new GoogleNotConfiguredError();
  core.requireSealing(ctx.google);
}

/** Google as a connection sees it. */
function googleKind(ctx: GoogleConnectDeps): core.ConnectKind {
  return { kind: 'google', targets: ctx.google.targets, reconcileIntervalMs: ctx.config.googleReconcileIntervalMs };
}

/**
 * Connects a calendar for `request.source`. Throws GoogleNotConfiguredError without OAuth client settings,
 * SecretKeyMissingError without a `SECRET_KEY`,
 * UnknownSourceError for a personal source without subscription, SourceNotFoundError for a public one
 * the university does not know, SourceNotReadyError when its first fetch (waited for here) takes too long, and
 * the Google adapter's typed errors
 * (CalendarGoneError for an unreachable `calendarId`, GoogleConsentError for a refused refresh token).
 */
export async function connectGoogleTarget(
  ctx: GoogleConnectDeps,
  request: GoogleConnectRequest,
): Promise<GoogleConnected> {
  // Checked before Google is asked for anything: a calendar made for a token we cannot store would be lost.
  requireGooglePush(ctx);
  // A target keeps its source refreshed for good: never for an id the university has not answered once.
  await requireFetched(ctx, request.source);
  // Without a Google user (the admin route, retried after a timeout, say), the account is known by its refresh
  // token.
  const account = request.googleUser ?? budgetKeyFor(undefined, request.refreshToken);
  const turn = { account, source: request.source, lockMs: CONNECT_LOCK_MS };
  return core.takingTurns(ctx, googleKind(ctx), turn, () => connect(ctx, request));
}

/** {@link connectGoogleTarget} once the checks passed (and, with a Google user, under its lock). */
async function connect(ctx: GoogleConnectDeps, request: GoogleConnectRequest): Promise<GoogleConnected> {
  const fallbackName = await core.sourceName(ctx, request.source);
  const budgetKey = budgetKeyFor(request.googleUser, request.refreshToken);
  const calendar = ctx.google.calendar(request.refreshToken, budgetKey);
  const existing = await existingTarget(ctx, request, budgetKey);
  if (existing !== undefined && (await isRepeat(ctx, existing, request, calendar)))
    return unchanged(ctx, existing, request.options);
  if (existing !== undefined) return reconnect(ctx, existing, request, budgetKey, calendar, fallbackName);
  const chosen = await chooseCalendar(ctx, calendar, request.calendarId, fallbackName);
  const details = googleDetailFields({ budgetKey, googleUser: request.googleUser });
  const target = {
    source: request.source,
    secret: request.refreshToken,
    ...chosen,
    details,
    options: request.options ?? request.newTargetOptions,
    now: ctx.now(),
  };
  const created = await core.storeTarget(googleKind(ctx), target, (id) => calendar.deleteCalendar(id));
  ctx.logger.info(
    { target: created.id, source: request.source, calendarOwned: chosen.calendarOwned },
    'google target connected',
  );
  await core.startPushing(ctx, googleKind(ctx), created.id, request.source);
  return {
    id: created.id,
    calendarId: chosen.calendarId,
    calendarName: chosen.calendarName,
    manageToken: created.manageToken,
    reused: false,
  };
}

/**
 * The target a connection reconnects instead of making another: the Google user's for the source (a consent
 * naming no calendar), or, for the admin route, one registered with the same refresh token for the same
 * source and calendar (ours when none is named).
 */
async function existingTarget(
  ctx: GoogleConnectDeps,
  request: GoogleConnectRequest,
  budgetKey: string,
): Promise<GoogleTarget | undefined> {
  if (request.googleUser !== undefined)
    return request.calendarId === undefined
      ? ctx.google.targets.findByOwner(request.googleUser, request.source)
      : undefined;
  return core.connectedBefore(ctx.google.targets, request.source, request.calendarId, (target) => {
    const details = googleDetails(target);
    return details.googleUser === undefined && details.budgetKey === budgetKey;
  });
}

/**
 * Whether an admin registration repeats one that is still working (the same refresh token, the target active
 * or paused, its calendar still there): a retried request then changes nothing, neither the token version
 * nor a quota pause. A calendar gone meanwhile makes it a reconnect (a new calendar of ours, or a 400).
 */
async function isRepeat(
  ctx: GoogleConnectDeps,
  target: GoogleTarget,
  request: GoogleConnectRequest,
  calendar: CalendarClient,
): Promise<boolean> {
  if (request.googleUser !== undefined || (target.status !== 'active' && target.status !== 'paused')) return false;
  // A token sealed under another SECRET_KEY reads as another token: the registration replaces it.
  const stored = await ctx.google.targets.credential(target.id).catch(() => undefined);
  if (stored?.secret !== request.refreshToken) return false;
  try {
    await calendar.getCalendar(target.calendarId);
    return true;
  } catch (error) {
    if (error instanceof CalendarGoneError) return false;
    throw error;
  }
}

/**
 * Answers a repeated registration with its target as it is (a new manage token, which the admin route never
 * shows), but for the options it gives, when they differ from the target's: those replace them, and a push
 * writes the difference.
 */
async function unchanged(
  ctx: GoogleConnectDeps,
  target: GoogleTarget,
  options: SubscriberOptions | undefined,
): Promise<GoogleConnected> {
  if (options !== undefined && !sameOptions(options, target.options)) {
    const kind = { kind: 'google' as const, targets: ctx.google.targets };
    if ((await changePushOptions(ctx, kind, target.id, options)) === undefined) throw new TargetRemovedError(target.id);
  }
  const manageToken = await ctx.google.targets.rotateManageToken(target.id);
  if (manageToken === undefined) throw new TargetRemovedError(target.id);
  return { id: target.id, calendarId: target.calendarId, calendarName: target.calendarName, manageToken, reused: true };
}

/**
 * A second consent of a Google user for a source (or a second admin registration of one refresh token): the target
 * keeps its calendar (a new one when the old was deleted) and index, takes the new refresh token and gets a full
 * comparison with what the calendar holds.
 */
async function reconnect(
  ctx: GoogleConnectDeps,
  target: GoogleTarget,
  request: Pick<GoogleConnectRequest, 'refreshToken' | 'options'>,
  budgetKey: string,
  calendar: CalendarClient,
  name: string,
): Promise<GoogleConnected> {
  const live = await liveCalendar(ctx, target, calendar, name);
  const moved = { calendarId: live.calendarId, calendarOwned: true, calendarName: live.calendarName };
  const manageToken = await core.renewTarget(ctx, googleKind(ctx), target, {
    secret: request.refreshToken,
    details: { budgetKey },
    options: request.options,
    calendar: live.created ? moved : undefined,
    deleteCalendar: (id) => calendar.deleteCalendar(id),
  });
  ctx.logger.info({ target: target.id, source: target.source, newCalendar: live.created }, 'google target reconnected');
  await core.startPushing(ctx, googleKind(ctx), target.id, target.source);
  return { id: target.id, calendarId: live.calendarId, calendarName: live.calendarName, manageToken, reused: true };
}

/** Whether `options` are what the target follows already (the same stored form). */
function sameOptions(options: SubscriberOptions, current: SubscriberOptions | undefined): boolean {
  return current !== undefined && optionsField(options) === optionsField(current);
}

/**
 * The calendar a reconnected target pushes into: its own while Google still has it, else a new one of ours
 * (`created`). Asked of Google, not only of the status: the owner may have deleted the calendar after the
 * last push, which leaves the target `active`.
 */
async function liveCalendar(
  ctx: GoogleConnectDeps,
  target: GoogleTarget,
  calendar: CalendarClient,
  name: string,
): Promise<{ calendarId: string; calendarName: string; created: boolean }> {
  // A calendar we were given is asked about even when marked deleted (it may have been shared again), and
  // one that is still unreachable is not ours to replace: CalendarGoneError, the caller chooses another.
  if (target.status !== 'calendar-deleted' || !target.calendarOwned) {
    try {
      await calendar.getCalendar(target.calendarId);
      return { calendarId: target.calendarId, calendarName: target.calendarName, created: false };
    } catch (error) {
      if (!(error instanceof CalendarGoneError) || !target.calendarOwned) throw error;
    }
  }
  const info = await calendar.createCalendar(name, ctx.config.timezone);
  return { calendarId: info.id, calendarName: info.summary, created: true };
}

/** The calendar to push into: the given one if this token reaches it, else a new one of ours. */
async function chooseCalendar(
  ctx: GoogleConnectDeps,
  calendar: CalendarClient,
  calendarId: string | undefined,
  name: string,
): Promise<{ calendarId: string; calendarOwned: boolean; calendarName: string }> {
  if (calendarId !== undefined) {
    const info = await calendar.getCalendar(calendarId);
    return { calendarId: info.id, calendarOwned: false, calendarName: info.summary };
  }
  const info = await calendar.createCalendar(name, ctx.config.timezone);
  return { calendarId: info.id, calendarOwned: true, calendarName: info.summary };
}
