/**
 * A push target as the API and its pages show it, whatever its kind: the JSON view (state, last push and error,
 * the queued push, the changes not pushed yet) that owners and admins get alike, the pages' view model, and the
 * 502 of a disconnection that left something behind. A kind adds only its own fields (google-target-view.ts,
 * caldav-target-view.ts); no view or message ever holds a credential.
 */
import type { PendingChanges } from '../push/pending-changes.ts';
import type { PushTarget } from '../store/push-target-record.ts';
import type { PushState, PushTargetModel } from '../web/push-manage-page.ts';
import type { ErrorCode, Words } from './error-codes.ts';
import { HttpError } from './errors.ts';
import { pushOptionsView } from './push-options-body.ts';
import type { Disconnection, PushRouteKind } from './push-route-kind.ts';
import { iso } from './views.ts';

/** The push job queued or running for a target (its changes are not in the calendar yet). */
export interface QueuedPush {
  job: string;
  state: string;
}

/** Where a kind's views read what the stored target does not hold. */
export interface PushViewSources<T extends PushTarget> {
  /** The push job queued or running for target `id`, or null. */
  queuedPush(id: string): Promise<QueuedPush | null>;
  /** The changes not pushed yet; null before the source's first publication. */
  pendingChanges(target: T): Promise<PendingChanges | null>;
  /** How many events (or resources) the index of target `id` holds. */
  indexSize(id: string): Promise<number>;
  /** The kind's own fields of the JSON view (where its calendar is, a login): never a credential. */
  ownFields(target: T): Record<string, unknown> | Promise<Record<string, unknown>>;
}

/** The JSON view and the page's pending changes of a kind's targets, for its {@link PushRouteKind}. */
export function pushTargetViews<T extends PushTarget>(
  sources: PushViewSources<T>,
): Pick<PushRouteKind<T>, 'view' | 'pending'> {
  return {
    view: (target, detail) => pushTargetView(sources, target, detail),
    pending: async (target) => {
      const [changes, queued] = await Promise.all([sources.pendingChanges(target), sources.queuedPush(target.id)]);
      return { changes, queued: queued !== null };
    },
  };
}

/** A target's state with its pending push (and, for one target, the changes not pushed yet). */
export async function pushTargetView<T extends PushTarget>(
  sources: PushViewSources<T>,
  target: T,
  detail: { pendingChanges?: boolean } = {},
): Promise<Record<string, unknown>> {
  const [pending, own, indexSize, changes] = await Promise.all([
    sources.queuedPush(target.id),
    sources.ownFields(target),
    sources.indexSize(target.id),
    // Expanding the timetable costs milliseconds: one target's view has it, a page of targets does not.
    detail.pendingChanges ? sources.pendingChanges(target) : undefined,
  ]);
  return {
    id: target.id,
    ...own,
    source: target.source,
    calendarName: target.calendarName,
    calendarOwned: target.calendarOwned,
    // The feed options the calendar follows, as the admin API takes them; null: the whole timetable, reminders
    // left to the calendar (a target connected before push followed options).
    options: pushOptionsView(target.options),
    status: target.status,
    statusReason: target.statusReason ?? null,
    pausedUntil: iso(target.pausedUntil),
    createdAt: iso(target.createdAt),
    // The store writes it with every `lastPush`, so it is the last push's time.
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

/**
 * The page's view of a stored target: `needsCredential` is the kind's word for that status (`needs-consent`),
 * `lastError` whether its page shows the last error.
 */
export function pushTargetModel<N extends string>(
  target: PushTarget<N>,
  kind: { needsCredential: N; lastError: boolean },
): PushTargetModel {
  return {
    id: target.id,
    calendarName: target.calendarName,
    calendarOwned: target.calendarOwned,
    status: target.status,
    state: stateOf(target.status, kind.needsCredential),
    statusReason: target.statusReason,
    pausedUntil: target.pausedUntil,
    lastPush: target.lastPush,
    ...(kind.lastError ? { lastError: target.lastError } : {}),
  };
}

function stateOf(status: string, needsCredential: string): PushState {
  if (status === needsCredential) return 'needs-credential';
  return status === 'paused' || status === 'calendar-deleted' ? status : 'active';
}

/** How a kind answers a disconnection that could not remove all it was asked to. */
export interface LeftBehind {
  /** The kind's code (a 502). */
  code: ErrorCode;
  /** The field that names the calendar beside the error (`calendarId`, `calendarUrl`). */
  field: string;
  /** What was left in `calendar`, and why (`error`, the server's words). */
  words(calendar: string, error: string): Words;
}

/**
 * The failure of a disconnection (the target is removed all the same): a 502 that names the calendar, so that
 * what is left can be deleted by hand. Undefined when everything asked for was done (`error` undefined).
 */
export function leftBehind(
  kind: LeftBehind,
  calendar: string,
  error: string | undefined,
): Disconnection<unknown>['failure'] {
  if (error === undefined) return undefined;
  return { error: new HttpError(kind.code, kind.words(calendar, error)), fields: { [kind.field]: calendar } };
}
