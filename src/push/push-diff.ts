/**
 * The diff between what a calendar should hold and what we know it holds (pure), for every calendar kind: an
 * index maps an item's id to the digest of what we last wrote there, or to one of the markers below.
 */
import type { DesiredEvent } from './desired-events.ts';

/**
 * The index value of an event of ours that the calendar keeps as deleted (Google's `status: cancelled`). Its id
 * cannot be inserted again (409), so a class that comes back is revived in one write. Digests are base64url:
 * never this. A kind whose deletes really delete never writes it.
 */
export const CANCELLED = '!cancelled';

/**
 * The index value of a desired id taken by an event without our marker (made by someone else): left alone,
 * and not tried again until a reconcile (which lists only marked events) forgets it.
 */
export const FOREIGN = '!foreign';

/**
 * The prefix of the index value of an event the calendar refused for good: `!refused:<digest>:<retryAt>`, the
 * digest of the version refused (or {@link DELETE_REFUSED}) and when (epoch ms) to try it again. Digests are
 * base64url, so never hold ':'.
 */
export const REFUSED_PREFIX = '!refused:';

/**
 * The digest of a refusal that records a refused delete: the calendar still holds the event (live), and the delete
 * waits like a refused write. Digests are 22 base64url characters, so never this one.
 */
export const DELETE_REFUSED = '-';

/** A refusal read from the index. */
export interface Refusal {
  /** The digest of the version the calendar refused, or {@link DELETE_REFUSED}. */
  hash: string;
  /** Epoch ms after which the same version is tried again. */
  retryAt: number;
}

/** The index value recording that the calendar refused version `hash` of an event, to try again after `retryAt`. */
export function refusedMarker(hash: string, retryAt: number): string {
  return `${REFUSED_PREFIX}${hash}:${retryAt}`;
}

/** The refusal an index value records, or undefined for any other value; an unreadable time reads as 0 (expired). */
export function parseRefused(value: string): Refusal | undefined {
  if (!value.startsWith(REFUSED_PREFIX)) return undefined;
  const rest = value.slice(REFUSED_PREFIX.length);
  const colon = rest.lastIndexOf(':');
  const retryAt = colon < 0 ? 0 : Number(rest.slice(colon + 1));
  return { hash: colon < 0 ? rest : rest.slice(0, colon), retryAt: Number.isSafeInteger(retryAt) ? retryAt : 0 };
}

/** What a diff needs of a desired item: its id and digest (a Google event, or a CalDAV resource). */
export type Diffable = Pick<DesiredEvent, 'id' | 'hash'>;

/**
 * What one push does: each desired event is inserted, revived, patched or left alone; indexed live events not desired
 * are removed.
 */
export interface PushDiff<T extends Diffable = DesiredEvent> {
  /** Desired events the index does not know, or knows as refused in another version or long enough ago. */
  insert: T[];
  /** Desired events whose id the index knows as deleted: brought back with one write. */
  revive: T[];
  /** Desired events the index knows with another digest. */
  patch: T[];
  /** Indexed live or refused event ids that are no longer desired (but not refused deletes still waiting). */
  remove: string[];
  /** Desired events the index knows with the same digest. */
  unchanged: number;
  /** Desired ids taken by someone else's event ({@link FOREIGN}): not written. */
  conflicts: number;
  /**
   * Desired events whose very version the calendar refused, and events no longer desired whose delete it
   * refused, not yet due to be tried again: not written.
   */
  refused: number;
}

/**
 * Plans a push from the desired events and the index (event id → digest of what we last wrote, or one of the
 * markers above) at `now` (epoch ms). Applying the diff to the index yields exactly the desired events,
 * except refused ones still waiting, plus deleted ones marked {@link CANCELLED} and refused deletes still
 * waiting. A desired id listed twice counts once (the first wins).
 */
export function diffPush<T extends Diffable = DesiredEvent>(
  desired: readonly T[],
  index: ReadonlyMap<string, string>,
  now: number,
): PushDiff<T> {
  const diff: PushDiff<T> = { insert: [], revive: [], patch: [], remove: [], unchanged: 0, conflicts: 0, refused: 0 };
  const wanted = new Set<string>();
  for (const event of desired) {
    if (wanted.has(event.id)) continue;
    wanted.add(event.id);
    const known = index.get(event.id);
    const refusal = known === undefined ? undefined : parseRefused(known);
    if (refusal !== undefined) {
      // A refused version waits; another version, the same one after the wait, or a class whose delete was
      // refused coming back, starts over with an insert, which finds out what the calendar holds (409 → get → patch
      // or revive, or nothing to write).
      if (refusal.hash === event.hash && refusal.retryAt > now) diff.refused += 1;
      else diff.insert.push(event);
    } else if (known === undefined) diff.insert.push(event);
    else if (known === CANCELLED) diff.revive.push(event);
    else if (known === FOREIGN) diff.conflicts += 1;
    else if (known !== event.hash) diff.patch.push(event);
    else diff.unchanged += 1;
  }
  for (const [id, known] of index) {
    if (wanted.has(id) || known === CANCELLED || known === FOREIGN) continue;
    // A refused delete waits like a refused write. A refused patch left the old version in the calendar, so it is
    // deleted at once; a refused insert left nothing, and its delete answers 404.
    const refusal = parseRefused(known);
    if (refusal?.hash === DELETE_REFUSED && refusal.retryAt > now) diff.refused += 1;
    else diff.remove.push(id);
  }
  return diff;
}

/**
 * Copies into `remote` (an index rebuilt by a listing) the refusals of `previous` that are not due yet and
 * whose refused version the calendar does not hold, so that a reconcile does not try them again at once; a
 * refused delete is kept while the calendar still holds the event live (one deleted or gone meanwhile needs no
 * delete).
 * Expired refusals are dropped. Answers `remote`.
 */
export function carryRefusals(
  previous: ReadonlyMap<string, string>,
  remote: Map<string, string>,
  now: number,
): Map<string, string> {
  for (const [id, value] of previous) {
    const refusal = parseRefused(value);
    if (refusal === undefined || refusal.retryAt <= now) continue;
    const held = remote.get(id);
    const keep = refusal.hash === DELETE_REFUSED ? held !== undefined && held !== CANCELLED : held !== refusal.hash;
    if (keep) remote.set(id, value);
  }
  return remote;
}
