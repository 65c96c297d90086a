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
import { type ActivationDeps, activateSource } from '../jobs/activation.ts';
import { enqueuePush, enqueueRefresh } from '../jobs/queues.ts';
import { requireFetched, type VerifyDeps } from '../jobs/verify-source.ts';
import { withLock } from '../lib/redis-lock.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import type { Logger } from '../logger.ts';
import { TargetRemovedError } from '../push/errors.ts';
import { SecretKeyMissingError } from '../security/errors.ts';
import type { RedisKeys } from '../store/keys.ts';
import type { SnapshotStore } from '../store/snapshot-store.ts';
import type { SubscriptionStore } from '../store/subscription-store.ts';
import { placeholderName } from '../timetable/calendar-name.ts';
import { type SourceKey, sourceOf } from '../timetable/source.ts';
import { UnknownSourceError } from './errors.ts';

/** What a connection is made of. `source` must be valid (see `parseSource`). */
export interface ConnectRequest {
  source: SourceKey;
  refreshToken: string;
  /** The Google user id (`sub` of the OAuth id_token), when known: a second consent reuses the target. */
  googleUser?: string | undefined;
  /** Push into this existing calendar instead of creating one (it is never deleted by us). */
  calendarId?: string | undefined;
}

/** A connected target. `manageToken` is the only copy there will ever be. */
export interface ConnectedTarget {
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
 * What {@link connectTarget} uses: a first fetch's (see `requireFetched`), Google's side, what names a calendar,
 * and the queues its first push and refresh go to.
 */
export type ConnectDeps = VerifyDeps &
  ActivationDeps & {
    readonly config: Pick<Config, 'timezone' | 'googleReconcileIntervalMs'>;
    readonly logger: Logger;
    /** Connections of one account for one source take turns under a lock on this connection. */
    readonly redis: RedisClient;
    readonly keys: RedisKeys;
    readonly google: Pick<GoogleServices, 'configured' | 'targets' | 'calendar'>;
    readonly snapshots: Pick<SnapshotStore, 'snapshot'>;
    readonly subscriptions: Pick<SubscriptionStore, 'get'>;
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
  if (!ctx.google.targets.canStoreCredentials) throw new SecretKeyMissingError();
}

/**
 * Connects a calendar for `request.source`. Throws GoogleNotConfiguredError without OAuth client settings,
 * SecretKeyMissingError without a `SECRET_KEY`,
 * {@link UnknownSourceError} for a personal source without subscription, SourceNotFoundError for a public one
 * the university does not know, SourceNotReadyError when its first fetch (waited for here) takes too long, and
 * the Google adapter's typed errors
 * (CalendarGoneError for an unreachable `calendarId`, GoogleConsentError for a refused refresh token).
 */
export async function connectTarget(ctx: ConnectDeps, request: ConnectRequest): Promise<ConnectedTarget> {
  // Checked before Google is asked for anything: a calendar made for a token we cannot store would be lost.
  requireGooglePush(ctx);
  // A target keeps its source refreshed for good: never for an id the university has not answered once.
  await requireFetched(ctx, request.source);
  // Connections of one account for one source take turns: the second finds the first's target and reconnects
  // it, instead of making a second target with a second calendar (every class twice). Without a Google user
  // (the admin route, retried after a timeout, say), the account is known by its refresh token.
  const account = request.googleUser ?? budgetKeyFor(undefined, request.refreshToken);
  // The lock expires on its own, so a holder that died delays the next connection by CONNECT_LOCK_MS at most.
  const lock = ctx.keys.lock(`google-connect:${account}:${request.source}`);
  return withLock(ctx.redis, lock, CONNECT_LOCK_MS, () => connect(ctx, request));
}

/** {@link connectTarget} once the checks passed (and, with a Google user, under its lock). */
async function connect(ctx: ConnectDeps, request: ConnectRequest): Promise<ConnectedTarget> {
  const fallbackName = await sourceName(ctx, request.source);
  const budgetKey = budgetKeyFor(request.googleUser, request.refreshToken);
  const calendar = ctx.google.calendar(request.refreshToken, budgetKey);
  const existing = await existingTarget(ctx, request, budgetKey);
  if (existing !== undefined && (await isRepeat(ctx, existing, request, calendar))) return unchanged(ctx, existing);
  if (existing !== undefined) return reconnect(ctx, existing, request.refreshToken, budgetKey, calendar, fallbackName);
  const chosen = await chooseCalendar(ctx, calendar, request.calendarId, fallbackName);
  let created: { id: string; manageToken: string };
  try {
    const details = googleDetailFields({ budgetKey, googleUser: request.googleUser });
    created = await ctx.google.targets.create({
      source: request.source,
      secret: request.refreshToken,
      ...chosen,
      details,
      now: ctx.now(),
    });
  } catch (error) {
    // A calendar made for a target that could not be stored would be an orphan nobody knows about.
    if (chosen.calendarOwned) await calendar.deleteCalendar(chosen.calendarId).catch(() => undefined);
    throw error;
  }
  ctx.logger.info(
    { target: created.id, source: request.source, calendarOwned: chosen.calendarOwned },
    'google target connected',
  );
  await startPushing(ctx, created.id, request.source);
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
  ctx: ConnectDeps,
  request: ConnectRequest,
  budgetKey: string,
): Promise<GoogleTarget | undefined> {
  if (request.googleUser !== undefined)
    return request.calendarId === undefined
      ? ctx.google.targets.findByOwner(request.googleUser, request.source)
      : undefined;
  for (const id of await ctx.google.targets.idsForSource(request.source)) {
    const target = await ctx.google.targets.get(id);
    if (target === undefined) continue;
    const details = googleDetails(target);
    if (details.googleUser !== undefined || details.budgetKey !== budgetKey) continue;
    if (request.calendarId === undefined ? target.calendarOwned : target.calendarId === request.calendarId)
      return target;
  }
  return undefined;
}

/**
 * Whether an admin registration repeats one that is still working (the same refresh token, the target active
 * or paused, its calendar still there): a retried request then changes nothing, neither the token version
 * nor a quota pause. A calendar gone meanwhile makes it a reconnect (a new calendar of ours, or a 400).
 */
async function isRepeat(
  ctx: ConnectDeps,
  target: GoogleTarget,
  request: ConnectRequest,
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

/** Answers a repeated registration with its target as it is (a new manage token, which the admin route never shows). */
async function unchanged(ctx: ConnectDeps, target: GoogleTarget): Promise<ConnectedTarget> {
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
  ctx: ConnectDeps,
  target: GoogleTarget,
  refreshToken: string,
  budgetKey: string,
  calendar: CalendarClient,
  name: string,
): Promise<ConnectedTarget> {
  const store = ctx.google.targets;
  const live = await liveCalendar(ctx, target, calendar, name);
  let adopted = !live.created;
  let manageToken: string | undefined;
  try {
    // The store also drops the index (the old calendar's events are gone with it) and requests a reconcile.
    if (!adopted)
      adopted = await store.replaceCalendar(
        target.id,
        { calendarId: live.calendarId, calendarOwned: true, calendarName: live.calendarName },
        ctx.now(),
      );
    if (!adopted) throw new TargetRemovedError(target.id);
    // Reactivates a target that needed consent, and requests a full comparison with what the calendar holds.
    if (!(await store.replaceCredential(target.id, refreshToken, ctx.now(), { budgetKey })))
      throw new TargetRemovedError(target.id);
    // The person consenting again may well have lost the first token; the old one stops working.
    manageToken = await store.rotateManageToken(target.id);
    if (manageToken === undefined) throw new TargetRemovedError(target.id);
  } catch (error) {
    // A calendar made for a target that is gone (or that never pointed at it) would be an orphan nobody knows about.
    if (live.created && (!adopted || error instanceof TargetRemovedError))
      await calendar.deleteCalendar(live.calendarId).catch(() => undefined);
    throw error;
  }
  ctx.logger.info({ target: target.id, source: target.source, newCalendar: live.created }, 'google target reconnected');
  await startPushing(ctx, target.id, target.source);
  return { id: target.id, calendarId: live.calendarId, calendarName: live.calendarName, manageToken, reused: true };
}

/**
 * The calendar a reconnected target pushes into: its own while Google still has it, else a new one of ours
 * (`created`). Asked of Google, not only of the status: the owner may have deleted the calendar after the
 * last push, which leaves the target `active`.
 */
async function liveCalendar(
  ctx: ConnectDeps,
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
  ctx: ConnectDeps,
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

/** Keeps the source refreshed and queues the first push (or the refresh whose publication will push). */
async function startPushing(ctx: ConnectDeps, id: string, source: SourceKey): Promise<void> {
  await activateSource(ctx, source);
  if ((await ctx.snapshots.snapshot(source)) === undefined) {
    await enqueueRefresh(ctx.queues, ctx.config, source, { reason: 'subscription', now: ctx.now() });
  }
  // The connect push compares the whole calendar itself: the periodic one is not due before an interval.
  await ctx.google.targets.scheduleReconcile(id, ctx.now() + ctx.config.googleReconcileIntervalMs);
  // Also without a timetable yet: the push then ends as skipped, and the refresh's publication pushes again
  // (the reconcile request stays set until a push has compared the calendar).
  await enqueuePush(ctx.queues, 'google', id, source, 'connect');
}

/** A readable calendar name for the source: the timetable's own, the subscription's, or `Группа 4242`. */
async function sourceName(ctx: ConnectDeps, source: SourceKey): Promise<string> {
  const ref = sourceOf(source);
  const subscription = ref.kind === 'personal' ? await ctx.subscriptions.get(ref.id) : undefined;
  if (ref.kind === 'personal' && subscription === undefined) throw new UnknownSourceError(`no subscription ${ref.id}`);
  const snapshot = await ctx.snapshots.snapshot(source);
  if (snapshot !== undefined && snapshot.name.trim() !== '') return snapshot.name;
  if (ref.kind === 'personal') return subscription?.name ?? 'Моё расписание';
  // Renamed by the first push after the timetable names itself (`nameCalendar`).
  return placeholderName({ kind: ref.kind, id: Number(ref.id) });
}
