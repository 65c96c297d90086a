/**
 * What a change notification tells: the classes of one publication that moved, were cancelled, were added or got
 * another teacher, as both channels (Telegram, webhooks) and every stage between (outbox, fan-out, send) see it.
 * These shapes are stored (outbox, job data), so a field is added, never renamed.
 */
import type { SourceKey } from './source.ts';

/** What happened to a class: moved (date, time or room), cancelled, added, or taught by someone else. */
export type NotifyKind = 'moved' | 'cancelled' | 'added' | 'teacher';

/** One side (before or after) of a changed class, in the university's wall-clock time. */
export interface NotifySide {
  /** `YYYY-MM-DD`, local. */
  date: string;
  /** `HH:MM`, local. */
  begin: string;
  /** `HH:MM`, local. */
  end: string;
  /** Epoch ms of the start. */
  startUtc: number;
  /** The class's title as the feed shows it. */
  summary: string;
  location: string;
  /** The teacher's name as the feed shows it (empty when the timetable names none). */
  teacher: string;
}

/** One change of one class. `before` is absent for `added`, `after` for `cancelled`. */
export interface NotifyItem {
  kind: NotifyKind;
  /** The occurrence's feed UID (the one after the change, or the one cancelled). */
  uid: string;
  /**
   * A moved or re-taught class's UID before the change, where it differs from `uid` (a move to another day):
   * it chains changes of one class told together (quiet hours). Absent in items stored before it was kept.
   */
  beforeUid?: string;
  before?: NotifySide;
  after?: NotifySide;
  /** Epoch ms: the earlier start of the two sides; nothing is told once it has passed. */
  startsAt: number;
  /** The class's kind (lecture, practice...) and note, for the subscriber's options ({@link NotifyOptions}). */
  lessonKind: string;
  note: string;
  /** A moved class's kind and note before, where they differ: it concerns whoever kept either side. */
  was?: { lessonKind: string; note: string };
}

/** What one publication of a source changed that people are told of. */
export interface ChangeSet {
  source: SourceKey;
  /** The source's display name (group or teacher). */
  name: string;
  /** The publication's stamp (`PublishedState.stamp`, epoch ms): names the change set. */
  stamp: number;
  /** Soonest first (then by uid), at most a cap. */
  items: NotifyItem[];
  /** Items left out beyond the cap. */
  omitted: number;
}

/** A subscriber's options, as a feed's: one subgroup, and lesson kinds hidden. */
export interface NotifyOptions {
  subgroup?: number;
  excludeKinds?: readonly string[];
}

/** Quiet hours in the university's zone, as minutes after local midnight; `from > to` spans midnight. */
export interface QuietHours {
  fromMinute: number;
  toMinute: number;
}
