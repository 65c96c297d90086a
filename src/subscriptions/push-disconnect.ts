/**
 * What disconnecting a calendar is for every kind: the target is removed first (pushes stop at once), what the
 * clean-up needs having been read before it goes with the record; then what we wrote on the other side is
 * removed, and what could not be is reported, so that it can be removed by hand. What is cleaned up and how is
 * the kind's (`google-disconnect.ts`, `caldav-disconnect.ts`).
 */
import type { Logger } from '../logger.ts';
import type { PushKindTargets } from '../push/adapter.ts';
import type { PushTarget, TargetKind } from '../store/push-target-record.ts';
import type { PushTargetStore } from '../store/push-target-store.ts';
import type { SourceKey } from '../timetable/source.ts';

/** What a clean-up did on the other side. */
export interface Cleaned {
  /** Our calendar was deleted (it was ours, and the server has it no more). */
  calendarDeleted: boolean;
  /** In a calendar we were given: the resources of ours deleted. */
  removed: number;
}

/** What a disconnection did, before each kind words it. `error` says why the clean-up was not (all) done. */
export interface PushDisconnected extends Cleaned {
  /** The target as it was before its removal. */
  target: PushTarget;
  error?: string;
}

/** Removes what a target wrote, acting with the credential read before the target was removed. */
export type CleanUp = (secret: string) => Promise<Cleaned>;

/** A calendar kind as a disconnection sees it. */
export interface DisconnectKind {
  /** The kind's name, for logs. */
  readonly kind: TargetKind;
  readonly targets: Pick<PushTargetStore, 'get' | 'credential' | 'remove'>;
  /** What its credential is called in a report (`refresh token`, `password`). */
  readonly credentialName: string;
  /**
   * How to remove what `target` wrote, with what that needs from the record read now (its index); undefined
   * when nothing is to be removed (not asked for, or not ours).
   */
  cleanUp(target: PushTarget): Promise<CleanUp | undefined>;
  /** Whether a failed clean-up found the calendar gone: nothing of ours is left there. */
  isGone(error: unknown): boolean;
  /** What a failed clean-up's warning says, and the fields that name where (never the credential). */
  readonly warning: { message: string; fields(target: PushTarget): Record<string, string> };
}

/**
 * Removes target `id` (pushes stop at once), then what it wrote, as the kind says. Answers undefined for an
 * unknown target (or one removed meanwhile). A failure after the removal (the server unreachable, the
 * credential refused or unreadable) leaves the target removed and is reported as `error`.
 */
export async function disconnectPushTarget(
  ctx: { readonly logger: Logger },
  kind: DisconnectKind,
  id: string,
): Promise<PushDisconnected | undefined> {
  const store = kind.targets;
  const target = await store.get(id);
  if (target === undefined) return undefined;
  // Read before removing: the sealed credential and the index go with the record.
  const cleanUp = await kind.cleanUp(target);
  const credential =
    cleanUp === undefined ? undefined : await store.credential(id).catch((error: unknown) => error as Error);
  if (!(await store.remove(id))) return undefined;
  ctx.logger.info({ target: id, source: target.source }, `${kind.kind} target removed`);
  const result: PushDisconnected = { target, calendarDeleted: false, removed: 0 };
  if (cleanUp === undefined) return result;
  const word = kind.credentialName;
  if (credential === undefined) return { ...result, error: `the stored ${word} is gone` };
  if (credential instanceof Error) return { ...result, error: `the stored ${word} is unreadable (${credential.name})` };
  try {
    return { ...result, ...(await cleanUp(credential.secret)) };
  } catch (error) {
    if (kind.isGone(error)) return { ...result, calendarDeleted: target.calendarOwned };
    const message = error instanceof Error ? error.message : String(error);
    // The message only: the adapters' errors keep the transport's error as `cause`, request headers included.
    ctx.logger.warn({ target: id, ...kind.warning.fields(target), error: message }, kind.warning.message);
    return { ...result, error: message };
  }
}

/**
 * Stops every calendar of every kind from following `source` (its subscription is being deleted): each target is
 * removed, and what it wrote stays in the person's calendar, as classes they can still see.
 */
export async function stopFollowing(
  ctx: { readonly logger: Logger },
  kinds: readonly PushKindTargets<'idsForSource' | 'get' | 'credential' | 'remove'>[],
  source: SourceKey,
): Promise<void> {
  for (const { kind, targets } of kinds) {
    const keep: DisconnectKind = {
      kind,
      targets,
      credentialName: 'credential',
      cleanUp: async () => undefined,
      isGone: () => false,
      warning: { message: `${kind} clean-up failed`, fields: () => ({}) },
    };
    for (const id of await targets.idsForSource(source)) await disconnectPushTarget(ctx, keep, id);
  }
}
