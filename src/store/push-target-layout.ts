/**
 * The shapes `push-target-store.ts` is made from and answers with: a kind's layout (the keys, field names and
 * words its stored targets use), what a new target is made of, the guard of a push's records, a credential with
 * its version, and a calendar a target is pointed at.
 */
import type { SourceKey } from '../timetable/source.ts';
import type { SubscriberOptions } from '../timetable/types.ts';
import type { TargetKind } from './push-target-record.ts';

/** How one kind's targets are laid out in Redis: the keys, field names and words its stored data uses. */
export interface PushTargetLayout<N extends string = string> {
  kind: TargetKind;
  /** Whether the hash names its kind in a `kind` field (written on create). */
  kindField: boolean;
  keys: {
    /** HASH of one target. */
    target(id: string): string;
    /** HASH: one target's push index. */
    index(id: string): string;
    /** ZSET: every target by creation time. */
    readonly all: string;
    /** ZSET: targets by when their next full reconcile is due. */
    readonly due: string;
    /** SET: the targets of one source. */
    source(source: SourceKey): string;
  };
  /** The hash field of the sealed credential, and the associated data that binds it to its target. */
  credential: { field: string; context(id: string): string };
  /** The status of a target that needs a new credential. */
  needsCredential: N;
  /** Detail fields that belong to the calendar, dropped when the target is pointed at another one. */
  calendarDetails: readonly string[];
  /** A STRING from (owner, source) to the target: its detail field and key, set on create, removed on remove. */
  owner?: { field: string; key(owner: string, source: SourceKey): string } | undefined;
}

/** What a new target is made of. */
export interface NewPushTarget {
  /** The id, when the caller chose it first (from {@link newTargetId}); else a new one. */
  id?: string | undefined;
  source: SourceKey;
  /** The credential to seal (a refresh token, an app password). */
  secret: string;
  calendarId: string;
  calendarOwned: boolean;
  calendarName: string;
  /** The kind's own public fields. */
  details: Readonly<Record<string, string>>;
  /** The feed options the calendar follows; absent: the whole timetable (see `PushTarget.options`). */
  options?: SubscriberOptions | undefined;
  now: number;
}

/**
 * What a push started with: the version of the credential it sent (from {@link PushTargetStore.credential})
 * and the calendar it wrote to. Updates that carry it land only while both are still the target's.
 */
export interface PushGuard {
  credentialVersion?: number | undefined;
  calendarId?: string | undefined;
}

/** A credential with the version it was stored under (pass the version back to `markStatus`). */
export interface VersionedSecret {
  secret: string;
  version: number;
}

/** The calendar a target is pointed at by {@link PushTargetStore.replaceCalendar}. */
export interface CalendarChoice {
  calendarId: string;
  calendarOwned: boolean;
  calendarName: string;
  /** Detail fields that come with the calendar (CalDAV's host and sync support). */
  details?: Readonly<Record<string, string>> | undefined;
}
