/**
 * What connecting a calendar is for every kind: the checks before anything is asked, the turn one account takes
 * per source, the name a new calendar gets, storing a target without leaving a calendar nobody knows, giving an
 * existing target a new credential, and starting its pushes. The kinds' own steps (Google's consent and
 * calendars, CalDAV's discovery and MKCALENDAR) are in `google-connect.ts` and `caldav-connect.ts`, over this.
 */
import { type ActivationDeps, activateSource } from '../jobs/activation.ts';
import { enqueuePush, enqueueRefresh } from '../jobs/queues.ts';
import type { VerifyDeps } from '../jobs/verify-source.ts';
import { withLock } from '../lib/redis-lock.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import { TargetRemovedError } from '../push/errors.ts';
import { SecretKeyMissingError } from '../security/errors.ts';
import type { RedisKeys } from '../store/keys.ts';
import type { CalendarChoice, NewPushTarget } from '../store/push-target-layout.ts';
import type { PushTarget, TargetKind } from '../store/push-target-record.ts';
import type { PushTargetStore } from '../store/push-target-store.ts';
import type { SnapshotStore } from '../store/snapshot-store.ts';
import type { SubscriptionStore } from '../store/subscription-store.ts';
import { placeholderName } from '../timetable/calendar-name.ts';
import { type SourceKey, sourceOf } from '../timetable/source.ts';
import type { SubscriberOptions } from '../timetable/types.ts';
import { UnknownSourceError } from './errors.ts';

/** What every connection uses, whatever its kind: a first fetch's, the source's activation, names, a lock. */
export type PushConnectDeps = VerifyDeps &
  ActivationDeps & {
    /** Connections of one account for one source take turns under a lock on this connection. */
    readonly redis: RedisClient;
    readonly keys: RedisKeys;
    readonly snapshots: Pick<SnapshotStore, 'snapshot'>;
    readonly subscriptions: Pick<SubscriptionStore, 'get'>;
  };

/** The target store calls a connection makes. */
export type ConnectTargets = Pick<
  PushTargetStore,
  | 'canStoreCredentials'
  | 'create'
  | 'replaceCalendar'
  | 'replaceCredential'
  | 'rotateManageToken'
  | 'scheduleReconcile'
  | 'updateOptions'
>;

/** A calendar kind as a connection sees it. */
export interface ConnectKind {
  /** The kind's name (`google`, `caldav`): its push queue, and the prefix of its connections' locks. */
  readonly kind: TargetKind;
  readonly targets: ConnectTargets;
  /** How often the periodic full comparison runs: the first one is not due before that. */
  readonly reconcileIntervalMs: number;
}

/** Throws SecretKeyMissingError unless credentials can be sealed (a `SECRET_KEY` is configured). */
export function requireSealing(kind: Pick<ConnectKind, 'targets'>): void {
  if (!kind.targets.canStoreCredentials) throw new SecretKeyMissingError();
}

/**
 * Runs `connect` under the lock of `account`'s connections to `source`, so that two connections take turns:
 * the second finds the first's target and reconnects it, instead of making a second target with a second
 * calendar (every class twice). The lock expires on its own after `lockMs`, so a holder that died delays the
 * next connection by that at most.
 */
export function takingTurns<T>(
  ctx: Pick<PushConnectDeps, 'redis' | 'keys'>,
  kind: Pick<ConnectKind, 'kind'>,
  turn: { account: string; source: SourceKey; lockMs: number },
  connect: () => Promise<T>,
): Promise<T> {
  const lock = ctx.keys.lock(`${kind.kind}-connect:${turn.account}:${turn.source}`);
  return withLock(ctx.redis, lock, turn.lockMs, connect);
}

/**
 * The target of `source` that an account (`sameAccount`) already connected to the same calendar: the one given
 * (`calendarId`), or one of ours when none is. A repeated connection reconnects it instead of making another.
 */
export async function connectedBefore<T extends PushTarget>(
  targets: { idsForSource(source: SourceKey): Promise<string[]>; get(id: string): Promise<T | undefined> },
  source: SourceKey,
  calendarId: string | undefined,
  sameAccount: (target: T) => boolean,
): Promise<T | undefined> {
  for (const id of await targets.idsForSource(source)) {
    const target = await targets.get(id);
    if (target === undefined || !sameAccount(target)) continue;
    if (calendarId === undefined ? target.calendarOwned : target.calendarId === calendarId) return target;
  }
  return undefined;
}

/**
 * Stores a new target on the calendar chosen for it. A calendar we made (`calendarOwned`) is deleted with
 * `deleteCalendar` when storing fails: a calendar made for a target that could not be stored would be an orphan
 * nobody knows about.
 */
export async function storeTarget(
  kind: ConnectKind,
  target: NewPushTarget,
  deleteCalendar: (calendarId: string) => Promise<unknown>,
): Promise<{ id: string; manageToken: string }> {
  try {
    return await kind.targets.create(target);
  } catch (error) {
    if (target.calendarOwned) await deleteCalendar(target.calendarId).catch(() => undefined);
    throw error;
  }
}

/** What a reconnection gives an existing target. */
export interface Renewal {
  /** The new credential (already proved or exchanged). */
  secret: string;
  /** Detail fields that come with the credential (Google's request budget). */
  details?: Readonly<Record<string, string>> | undefined;
  /**
   * The calendar to move the target to, when its own is gone. One of ours (`calendarOwned`) was made for this
   * reconnection: it is deleted with `deleteCalendar` if the target cannot take it.
   */
  calendar?: CalendarChoice | undefined;
  /**
   * The feed options the connection asked for: they replace the target's (the push that follows writes the
   * difference). Absent: the target keeps its own, a connection that names none never widens a calendar.
   */
  options?: SubscriberOptions | undefined;
  deleteCalendar(calendarId: string): Promise<unknown>;
}

/**
 * Gives `target` what a repeated connection brings: another calendar (the index goes with the old one), the new
 * credential (reactivating a target that needed one, with a full comparison requested), the options it asked
 * for, and a new manage token
 * (the person connecting again may well have lost the first; the old one stops working). Throws
 * TargetRemovedError when the target is gone meanwhile. Resolves to the manage token.
 */
export async function renewTarget(
  ctx: Pick<ActivationDeps, 'now'>,
  kind: ConnectKind,
  target: Pick<PushTarget, 'id'>,
  renewal: Renewal,
): Promise<string> {
  const { targets } = kind;
  let moved = renewal.calendar === undefined;
  try {
    if (renewal.calendar !== undefined) moved = await targets.replaceCalendar(target.id, renewal.calendar, ctx.now());
    if (!moved) throw new TargetRemovedError(target.id);
    if (!(await targets.replaceCredential(target.id, renewal.secret, ctx.now(), renewal.details)))
      throw new TargetRemovedError(target.id);
    if (renewal.options !== undefined && !(await targets.updateOptions(target.id, renewal.options)))
      throw new TargetRemovedError(target.id);
    const manageToken = await targets.rotateManageToken(target.id);
    if (manageToken === undefined) throw new TargetRemovedError(target.id);
    return manageToken;
  } catch (error) {
    // A calendar made for a target that is gone (or that never pointed at it) would be an orphan nobody knows about.
    if (renewal.calendar?.calendarOwned && (!moved || error instanceof TargetRemovedError))
      await renewal.deleteCalendar(renewal.calendar.calendarId).catch(() => undefined);
    throw error;
  }
}

/** Keeps the source refreshed and queues the first push (or the refresh whose publication will push). */
export async function startPushing(
  ctx: PushConnectDeps,
  kind: ConnectKind,
  id: string,
  source: SourceKey,
): Promise<void> {
  await activateSource(ctx, source);
  if ((await ctx.snapshots.snapshot(source)) === undefined) {
    await enqueueRefresh(ctx.queues, ctx.config, source, { reason: 'subscription', now: ctx.now() });
  }
  // The connect push compares the whole calendar itself: the periodic one is not due before an interval.
  await kind.targets.scheduleReconcile(id, ctx.now() + kind.reconcileIntervalMs);
  // Also without a timetable yet: the push then ends as skipped, and the refresh's publication pushes again
  // (the reconcile request stays set until a push has compared the calendar).
  await enqueuePush(ctx.queues, kind.kind, id, source, 'connect');
}

/**
 * A readable calendar name for the source: the timetable's own, the subscription's, or `Группа 4242`. Throws
 * {@link UnknownSourceError} for a personal source without subscription.
 */
export async function sourceName(
  ctx: Pick<PushConnectDeps, 'snapshots' | 'subscriptions'>,
  source: SourceKey,
): Promise<string> {
  const ref = sourceOf(source);
  const subscription = ref.kind === 'personal' ? await ctx.subscriptions.get(ref.id) : undefined;
  if (ref.kind === 'personal' && subscription === undefined) throw new UnknownSourceError(`no subscription ${ref.id}`);
  const snapshot = await ctx.snapshots.snapshot(source);
  if (snapshot !== undefined && snapshot.name.trim() !== '') return snapshot.name;
  if (ref.kind === 'personal') return subscription?.name ?? 'Моё расписание';
  // Google renames its calendar with the first push after the timetable names itself (`nameCalendar`).
  return placeholderName({ kind: ref.kind, id: Number(ref.id) });
}
