/**
 * The Lua scripts of `push-target-store.ts` (`target-*.lua` beside this module, loaded here by name): guarded
 * updates of a target hash (with the due ZSET and the index in the same step), the atomic removal of a target
 * with everything pointing at it, and the conditional clear of a reconcile request.
 */
import { loadScript } from '../lib/lua-script.ts';

/** How an update changes the due ZSET: leave it, remove the target, add it at a score (`nx`: only if absent). */
export type DueChange = { kind: 'keep' } | { kind: 'remove' } | { kind: 'set'; at: number; nx?: boolean };

/** How a guarded update is made. */
export interface TargetUpdate {
  set?: Record<string, string> | undefined;
  remove?: readonly string[] | undefined;
  /** Update only while the stored credential version is this one. */
  ifVersion?: number | undefined;
  /** Update only while the target still points at this calendar. */
  ifCalendar?: string | undefined;
  bumpVersion?: boolean | undefined;
  due?: DueChange | undefined;
  /** Delete the target's index (its calendar changed). */
  clearIndex?: boolean | undefined;
  /** When the update happens: becomes `statusAt` if the update changes the status. */
  now?: number | undefined;
}

/** A guarded update of a target hash, with its due ZSET and index in the same step (target-update.lua). */
export const UPDATE_TARGET = loadScript(import.meta.dirname, 'target-update');

/** Removes a target with everything pointing at it, in one step (target-remove.lua). */
export const REMOVE_TARGET = loadScript(import.meta.dirname, 'target-remove');

/** The ARGV of {@link UPDATE_TARGET} for `update` of target `id`. */
export function updateArguments(id: string, update: TargetUpdate): string[] {
  const due = update.due ?? { kind: 'keep' };
  const remove = update.remove ?? [];
  return [
    id,
    update.ifVersion === undefined ? '' : String(update.ifVersion),
    update.bumpVersion ? '1' : '0',
    due.kind === 'keep' ? '' : due.kind === 'remove' ? '-' : String(due.at),
    due.kind === 'set' && due.nx ? '1' : '0',
    update.clearIndex ? '1' : '0',
    update.now === undefined ? '' : String(update.now),
    update.ifCalendar ?? '',
    String(remove.length),
    ...remove,
    ...Object.entries(update.set ?? {}).flat(),
  ];
}

/** Clears the reconcile request a push served unless a newer one replaced it (target-clear-reconcile.lua). */
export const CLEAR_RECONCILE = loadScript(import.meta.dirname, 'target-clear-reconcile');
